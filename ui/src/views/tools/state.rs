//! How a server is shown: its state in a few words with a coloured dot, and, for the
//! open one, what it said (its last stderr lines), its resources and its tools with
//! their schemas.

use art_types::mcp::{McpServerState, McpServerStatus, McpToolInfo};
use leptos::prelude::*;

use super::resources::ServerResources;

/// A server's state in a few words, and the class of its dot.
pub fn state_line(state: &McpServerState) -> (String, &'static str) {
    match state {
        McpServerState::Disabled => ("Disabled".into(), "off"),
        McpServerState::Starting => ("Starting…".into(), "busy"),
        McpServerState::Ready { tools: 1, .. } => ("Ready · 1 tool".into(), "ok"),
        McpServerState::Ready { tools, .. } => (format!("Ready · {tools} tools"), "ok"),
        McpServerState::SignInNeeded { .. } => ("Sign-in needed".into(), "warn"),
        McpServerState::Failed { reason, .. } => (format!("Failed: {reason}"), "bad"),
    }
}

/// A server's state, its last stderr lines and its tools.
#[component]
pub fn ServerState(status: McpServerStatus, tools: RwSignal<Vec<McpToolInfo>>) -> impl IntoView {
    let (line, dot) = state_line(&status.state);
    let detail = match &status.state {
        McpServerState::Ready {
            protocol_version,
            server_info,
            ..
        } => Some(format!(
            "{} · protocol {protocol_version}",
            server_info.clone().unwrap_or_else(|| "server".into())
        )),
        McpServerState::Failed { hint, .. } => hint.clone(),
        McpServerState::SignInNeeded { reason, .. } => Some(format!("The server {reason}.")),
        _ => None,
    };
    let stderr = status.stderr_tail.join("\n");
    let ready = matches!(status.state, McpServerState::Ready { .. });
    let name = status.config.name.clone();
    view! {
        <div class="server-state card" id="mcp-server-state" data-state=dot>
            <p><span class=format!("dot {dot}")></span>" "<strong id="mcp-state-line">{line}</strong></p>
            {detail.map(|d| view! { <p class="muted small" id="mcp-state-detail">{d}</p> })}
            {(!stderr.is_empty()).then(|| view! {
                <details><summary class="muted small">"Its last output (stderr)"</summary><pre class="stderr" id="mcp-stderr">{stderr}</pre></details>
            })}
            {ready.then(|| view! { <ServerResources server=name /> })}
            <div class="tools" id="mcp-tool-list">
                {move || tools.get().into_iter().map(|tool| {
                    let schema = serde_json::to_string_pretty(&tool.input_schema).unwrap_or_default();
                    view! {
                        <div class="tool-option" class:unavailable=tool.unusable.is_some() data-tool=tool.tool_name.clone()>
                            <strong>{tool.title.clone().unwrap_or_else(|| tool.name.clone())}</strong>
                            <code class="muted small">" "{tool.tool_name.clone()}</code>
                            <p class="small">{tool.description.clone()}</p>
                            {tool.unusable.clone().map(|why| view! { <p class="field-problem">{format!("Unusable: {why}")}</p> })}
                            <details><summary class="muted small">"Schema"</summary><pre>{schema}</pre></details>
                        </div>
                    }
                }).collect_view()}
            </div>
        </div>
    }
}
