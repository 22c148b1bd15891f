//! The thread settings' tool list: built-in tools, then each MCP server's tools under
//! its name, each with its description, schema and token cost; a tool the thread has
//! enabled whose server is not running is listed as unavailable (it can be turned off).
//! Each tool has its policy in the thread: its default, or runs / asks first / never.

use std::collections::BTreeMap;

use art_types::ToolSchema;
use art_types::approval::ToolPolicy;
use art_types::mcp::{TOOL_SEPARATOR, server_of};
use leptos::prelude::*;

/// Roughly what a tool's schema costs in prompt tokens (4 characters per token).
pub fn token_cost(tool: &ToolSchema) -> usize {
    let chars = tool.name.len() + tool.description.len() + tool.input_schema.to_string().len();
    chars.div_ceil(4)
}

/// One row of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The name the thread enables.
    pub name: String,
    /// What is shown: the name on its server for an MCP tool.
    pub label: String,
    /// Its schema; `None` when its server is not running.
    pub schema: Option<ToolSchema>,
}

/// Rows under a heading.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// `Built-in` or the server's name.
    pub title: String,
    /// Its tools, by name.
    pub rows: Vec<Row>,
}

/// Group `tools` by server (built-ins first), adding the `enabled` tools no server
/// offers now.
pub fn groups(tools: &[ToolSchema], enabled: &[String]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut put = |server: Option<&str>, row: Row| {
        let title = server.unwrap_or("Built-in").to_owned();
        match groups.iter_mut().find(|g| g.title == title) {
            Some(group) => group.rows.push(row),
            None => groups.push(Group {
                title,
                rows: vec![row],
            }),
        }
    };
    let label = |name: &str| match name.split_once(TOOL_SEPARATOR) {
        Some((_, tool)) => tool.to_owned(),
        None => name.to_owned(),
    };
    for tool in tools {
        put(
            server_of(&tool.name),
            Row {
                name: tool.name.clone(),
                label: label(&tool.name),
                schema: Some(tool.clone()),
            },
        );
    }
    for name in enabled
        .iter()
        .filter(|n| !tools.iter().any(|t| t.name == **n))
    {
        put(
            server_of(name),
            Row {
                name: name.clone(),
                label: label(name),
                schema: None,
            },
        );
    }
    for group in &mut groups {
        group.rows.sort_by(|a, b| a.label.cmp(&b.label));
    }
    groups
        .sort_by(|a, b| (a.title != "Built-in", &a.title).cmp(&(b.title != "Built-in", &b.title)));
    groups
}

/// The list; `enabled_list` says which tools are on, `toggle` turns one on or off.
///
/// Rows are kept while the settings change: a box's tick follows `enabled_list`, and a
/// group is rebuilt only when its rows change (so typing elsewhere in the form neither
/// moves a row under the pointer nor closes an open schema).
#[component]
pub fn ToolPicker(
    tools: RwSignal<Vec<ToolSchema>>,
    enabled_list: Signal<Vec<String>>,
    toggle: Callback<(String, bool)>,
    policies: Signal<BTreeMap<String, ToolPolicy>>,
    set_policy: Callback<(String, Option<ToolPolicy>)>,
) -> impl IntoView {
    let list = Memo::new(move |_| groups(&tools.get(), &enabled_list.get()));
    let group_key = |g: &Group| {
        let rows: Vec<String> = g
            .rows
            .iter()
            .map(|r| format!("{}{}", r.name, if r.schema.is_some() { "" } else { "!" }))
            .collect();
        format!("{}:{}", g.title, rows.join(","))
    };
    view! {
        <For each=move || list.get() key=group_key children=move |group| {
            let title = group.title.clone();
            view! {
                <div class="tool-group" data-group=title.clone()>
                    <h4 class="tool-group-title">{title.clone()}</h4>
                    {group.rows.into_iter().map(|row| {
                        let name = row.name.clone();
                        let checked = { let name = name.clone(); move || enabled_list.with(|e| e.contains(&name)) };
                        let unavailable = row.schema.is_none();
                        view! {
                            <div class="tool-option" class:unavailable=unavailable>
                                <label>
                                    <input type="checkbox" data-tool=name.clone() prop:checked=checked
                                        on:change=move |ev| toggle.run((name.clone(), event_target_checked(&ev))) />
                                    <strong>{row.label.clone()}</strong>
                                    {match &row.schema {
                                        Some(schema) => format!(" — {}", schema.description),
                                        None => " — unavailable: its MCP server is not running (see Tools)".to_owned(),
                                    }}
                                </label>
                                {
                                    let name = row.name.clone();
                                    let default = if server_of(&name).is_some() {
                                        "Server's default"
                                    } else {
                                        "Default (runs)"
                                    };
                                    let current = { let name = name.clone(); move || policies.with(|p| p.get(&name).map_or("", |p| p.as_str())) };
                                    view! {
                                        <select class="tool-policy" data-tool=name.clone() title="Before it runs"
                                            prop:value=current
                                            on:change=move |ev| set_policy.run((name.clone(), ToolPolicy::parse(&event_target_value(&ev))))>
                                            <option value="">{default}</option>
                                            <option value="auto">"Runs without asking"</option>
                                            <option value="ask">"Asks me first"</option>
                                            <option value="deny">"Never runs"</option>
                                        </select>
                                    }
                                }
                                {row.schema.map(|schema| {
                                    let pretty = serde_json::to_string_pretty(&schema.input_schema).unwrap_or_default();
                                    view! {
                                        <details><summary class="muted small">{format!("Schema (~{} tokens)", token_cost(&schema))}</summary><pre>{pretty}</pre></details>
                                    }
                                })}
                            </div>
                        }
                    }).collect_view()}
                </div>
            }
        } />
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: format!("{name} does things"),
            input_schema: json!({ "type": "object" }),
            output_schema: None,
            examples: Vec::new(),
        }
    }

    #[test]
    fn built_ins_first_then_each_server_and_missing_ones_unavailable() {
        let tools = [
            tool("time__get_time"),
            tool("calculator"),
            tool("everything__echo"),
            tool("current_time"),
        ];
        let enabled = ["gone__fetch".to_owned(), "calculator".to_owned()];
        let groups = groups(&tools, &enabled);
        let titles: Vec<_> = groups.iter().map(|g| g.title.as_str()).collect();
        assert_eq!(titles, ["Built-in", "everything", "gone", "time"]);
        let labels: Vec<_> = groups[0].rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["calculator", "current_time"]);
        assert_eq!(groups[1].rows[0].label, "echo");
        assert_eq!(groups[2].rows[0].name, "gone__fetch");
        assert!(groups[2].rows[0].schema.is_none());
    }
}
