//! The composer: the files for the question (the attachment tray, with Attach), the
//! question being written (Enter sends, Shift+Enter is a new line; a pasted image or file
//! is attached), Send — or Stop while a run of the thread is at work — and, above it,
//! why the last action did not happen, or why the next one would not (an image for a
//! model known not to see images, said when it is attached); `/` lists the MCP
//! servers' prompts (`slash`); "Compare…" asks the question of several models at once
//! (`compare`).

use art_types::models::Capability;
use art_types::{Attachment, IpcError, ProviderConfig};
use leptos::prelude::*;

use super::attachments::{self, Chip};
use super::compare::CompareMenu;
use super::picker::CurrentModel;
use super::slash::{PromptMenu, Slash};
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
    on_compare: Callback<Vec<ProviderConfig>>,
) -> impl IntoView {
    let send = move || on_send.run(());
    let stop = move |_| on_stop.run(());
    let slash = Slash::new(draft, tray, problem);
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if !ev.is_composing() && !ev.shift_key() && slash.key(&ev.key()) {
            ev.prevent_default();
            return;
        }
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            send();
        }
    };
    let model = use_context::<CurrentModel>();
    // Said at once, not when the question is refused at Send.
    let blind = move || {
        let model = model?;
        let images = tray.with(|t| t.iter().any(Attachment::is_image));
        (images && model.can(Capability::Vision) == Some(false)).then(|| {
            let name = model.choice().map(|c| c.model).unwrap_or_default();
            format!("{name} does not see images: choose a model with vision in the thread's header, or remove the image.")
        })
    };
    let remove = Callback::new(move |id: String| tray.update(|t| t.retain(|a| a.id != id)));
    view! {
        <footer class="composer">
            {move || problem.get().map(|error| view! { <div class="composer-problem"><ErrorCard error id="composer-problem" /></div> })}
            {move || blind().map(|note| view! { <p id="vision-note" class="warning small">{note}</p> })}
            <PromptMenu slash />
            <div id="attachment-tray" class="attachments tray" class:empty=move || tray.with(Vec::is_empty)>
                <For each=move || tray.get() key=|a| a.id.clone() let:attachment>
                    <Chip attachment remove />
                </For>
            </div>
            <button id="attach-button" class="ghost" title="Attach images or documents (or paste them, or drop them on the window)"
                on:click=move |_| attachments::pick(tray, problem)>"Attach"</button>
            <textarea id="composer-input" rows="3" placeholder="Message (Enter to send, Shift+Enter for a new line, / for an MCP server's prompts)"
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:paste=move |ev| attachments::pasted(ev.into(), tray, problem)
                on:keydown=on_key></textarea>
            <CompareMenu disabled=Signal::derive(move || running.with(Option::is_some)) on_compare />
            {move || match running.get() {
                Some(_) => view! { <button id="stop-button" class="danger" on:click=stop>"Stop"</button> }.into_any(),
                None => view! { <button id="send-button" class="primary" on:click=move |_| send()>"Send"</button> }.into_any(),
            }}
        </footer>
    }
}
