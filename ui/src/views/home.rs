//! The start view shown when no thread is selected; with no thread at all, the first
//! run's steps ([`FirstRun`]).

use leptos::prelude::*;

use crate::store::Store;
use crate::views::first_run::FirstRun;

/// Welcome text for a workbench with no thread open.
#[component]
pub fn Home() -> impl IntoView {
    let store = expect_context::<Store>();
    let first_run = Memo::new(move |_| store.threads.with(Vec::is_empty));
    view! {
        <section class="pane home" id="home">
            <h1>"ART Workbench"</h1>
            <p class="lead">
                "Chat with local or remote models through an agent you can watch: "
                "its plan, its tool calls and their results, recorded and exportable."
            </p>
            <ul class="pillars">
                <li><strong>"See the agent."</strong>" Plans, tool calls and thinking appear live."</li>
                <li><strong>"Keys stay secret."</strong>" API keys live only in the OS keychain."</li>
                <li><strong>"Export traces."</strong>" JSONL, OpenTelemetry and Markdown."</li>
            </ul>
            <Show when=move || first_run.get()>
                <FirstRun />
            </Show>
            <p class="muted small" id="shortcuts">
                "Start with “+ New thread”: it asks the default model (choose another in its header). "
                "Shortcuts: Ctrl+N new thread · Ctrl+K search · Enter send · Shift+Enter new line · Esc stop."
            </p>
        </section>
    }
}
