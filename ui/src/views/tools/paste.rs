//! Servers pasted as `{"mcpServers": {…}}` JSON (as Claude Desktop, Cursor or LM
//! Studio write it), and the report of what was added, renamed or skipped.

use art_types::mcp::McpImportReport;
use leptos::prelude::*;

use crate::components::error_card::{FormProblem, problem_at};

/// The paste form.
#[component]
pub fn PasteJson(
    json: RwSignal<String>,
    problem: RwSignal<FormProblem>,
    busy: RwSignal<bool>,
    report: RwSignal<Option<McpImportReport>>,
    on_import: Callback<()>,
) -> impl IntoView {
    let import = move |_| on_import.run(());
    view! {
        <div class="form-grid">
            <label for="mcp-json">"mcpServers JSON"</label>
            <div>
                <textarea id="mcp-json" rows="12" placeholder=r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#
                    prop:value=move || json.get() on:input=move |ev| json.set(event_target_value(&ev))></textarea>
                <p class="muted small">"As Claude Desktop, Cursor or LM Studio write it. Header values go to the keychain."</p>
                {problem_at(problem, "json")}
            </div>
            <span></span>
            <div class="form-actions">
                <button id="import-mcp" class="primary" on:click=import disabled=move || busy.get()>
                    {move || if busy.get() { "Starting…" } else { "Add these servers" }}
                </button>
            </div>
        </div>
        {move || report.get().map(|r| view! {
            <div class="import-report" id="mcp-import-report">
                <p>{format!("Added {}.", if r.added.is_empty() { "nothing".to_owned() } else { r.added.join(", ") })}</p>
                {r.renamed.iter().map(|(from, to)| view! { <p class="muted small">{format!("“{from}” is saved as {to}.")}</p> }).collect_view()}
                {r.skipped.iter().map(|(name, why)| view! { <p class="field-problem">{format!("Skipped “{name}”: {why}")}</p> }).collect_view()}
            </div>
        })}
    }
}
