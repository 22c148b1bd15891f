//! The thread's header: its title, its model (the picker), what its runs used, where it
//! was forked from (a link back, or a note when that thread is gone), and the Trace and
//! Settings toggles.

use art_types::commands as cmd;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::ipc;
use crate::store::Store;
use crate::views::thread::picker::ModelPicker;

/// The header of thread `thread_id`; the toggles open its settings and trace panels.
#[component]
pub fn ThreadHeader(
    thread_id: String,
    settings_open: RwSignal<bool>,
    trace_open: RwSignal<bool>,
) -> impl IntoView {
    let store = expect_context::<Store>();
    let id = StoredValue::new(thread_id);
    // What the thread's runs used, for its header (again when a run ends).
    let usage = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let thread_id = id.get_value();
        let _version = store.version(&thread_id);
        spawn_local(async move {
            if let Ok(totals) = ipc::call(&cmd::GetThreadUsage { thread_id }).await {
                usage.try_set((totals.runs > 0).then(|| crate::views::usage::summary(&totals)));
            }
        });
    });
    let title = move || {
        store.threads.with(|ts| {
            ts.iter()
                .find(|t| t.thread_id == id.get_value())
                .map(|t| t.title.clone())
                .unwrap_or_default()
        })
    };
    // Where a forked thread came from: a link back, or a note when it is gone.
    let origin = move || {
        store.threads.with(|ts| {
            let origin = ts
                .iter()
                .find(|t| t.thread_id == id.get_value())?
                .forked_from
                .clone()?;
            let title = ts
                .iter()
                .find(|t| t.thread_id == origin.thread_id)
                .map(|t| t.title.clone());
            Some((origin, title))
        })
    };
    view! {
        <header class="thread-header">
            <div class="thread-heading">
                <h2 id="thread-title">{title}</h2>
                <ModelPicker thread_id=id.get_value() />
                {move || usage.get().map(|line| view! {
                    <span id="thread-usage" class="muted small" title="What this thread's runs used (see Usage)">{line}</span>
                })}
                {move || origin().map(|(origin, title)| match title {
                    Some(title) => view! {
                        <button id="forked-from" class="link small" title="Open the message this thread was forked from"
                            on:click=move |_| store.show_message(origin.thread_id.clone(), origin.message_id.clone())>
                            {format!("Forked from “{title}”")}
                        </button>
                    }.into_any(),
                    None => view! { <span id="forked-from" class="muted small">"Forked from a thread since deleted"</span> }.into_any(),
                })}
            </div>
            <div class="thread-actions">
                <button id="trace-button" class="ghost" class:active=move || trace_open.get()
                    title="What the agent did, as a timeline; export traces"
                    on:click=move |_| trace_open.update(|o| *o = !*o)>
                    "Trace"
                </button>
                <button id="settings-button" class="ghost" class:active=move || settings_open.get()
                    on:click=move |_| settings_open.update(|o| *o = !*o)>
                    "Settings"
                </button>
            </div>
        </header>
    }
}
