//! The composer: the files for the question (the attachment tray, with Attach), the
//! question being written (Enter sends, Shift+Enter is a new line; a pasted image or file
//! is attached), Send — or Stop while a run of the thread is at work — and, above it,
//! why the last action did not happen.

use art_types::{Attachment, IpcError};
use leptos::prelude::*;

use super::attachments::{self, Chip};
use crate::components::error_card::ErrorCard;

/// The composer. `running` is the trace id of the thread's run at work, if any.
#[component]
pub fn Composer(
    draft: RwSignal<String>,
    tray: RwSignal<Vec<Attachment>>,
    problem: RwSignal<Option<IpcError>>,
    #[prop(into)] running: Signal<Option<String>>,
    on_send: Callback<()>,
    on_stop: Callback<()>,
) -> impl IntoView {
    let send = move || on_send.run(());
    let stop = move |_| on_stop.run(());
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            send();
        }
    };
    let remove = Callback::new(move |id: String| tray.update(|t| t.retain(|a| a.id != id)));
    view! {
        <footer class="composer">
            {move || problem.get().map(|error| view! { <div class="composer-problem"><ErrorCard error id="composer-problem" /></div> })}
            <div id="attachment-tray" class="attachments tray" class:empty=move || tray.with(Vec::is_empty)>
                <For each=move || tray.get() key=|a| a.id.clone() let:attachment>
                    <Chip attachment remove />
                </For>
            </div>
            <button id="attach-button" class="ghost" title="Attach images or documents (or paste them, or drop them on the window)"
                on:click=move |_| attachments::pick(tray, problem)>"Attach"</button>
            <textarea id="composer-input" rows="3" placeholder="Message (Enter to send, Shift+Enter for a new line)"
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:paste=move |ev| attachments::pasted(ev.into(), tray, problem)
                on:keydown=on_key></textarea>
            {move || match running.get() {
                Some(_) => view! { <button id="stop-button" class="danger" on:click=stop>"Stop"</button> }.into_any(),
                None => view! { <button id="send-button" class="primary" on:click=move |_| send()>"Send"</button> }.into_any(),
            }}
        </footer>
    }
}
