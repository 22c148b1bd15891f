//! The start view shown when no thread is selected.

use leptos::prelude::*;

/// Welcome text for a workbench with no thread open.
#[component]
pub fn Home() -> impl IntoView {
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
            <p class="muted small" id="shortcuts">
                "Start with “+ New thread”, then open its Settings to choose a provider and model. "
                "Shortcuts: Ctrl+N new thread · Ctrl+K search · Enter send · Shift+Enter new line · Esc stop."
            </p>
        </section>
    }
}
