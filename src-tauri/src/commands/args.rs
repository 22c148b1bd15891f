//! The arguments each command takes, as the page names them (camelCase). A call that
//! carries any other key is refused before the command runs: Tauri itself ignores extra
//! keys, so a misspelt optional argument would silently do nothing. `tests/security.rs`
//! checks this table against the commands' signatures.

use art_types::{ErrorCode, IpcError};
use serde_json::Value;

/// Command → the argument names it accepts.
pub const ARGS: &[(&str, &[&str])] = &[
    ("app_info", &[]),
    ("ui_ready", &[]),
    ("list_threads", &[]),
    ("create_thread", &["title"]),
    ("rename_thread", &["threadId", "title"]),
    ("delete_thread", &["threadId"]),
    ("list_messages", &["threadId", "limit", "before"]),
    ("search", &["query"]),
    ("send_message", &["threadId", "text"]),
    ("regenerate", &["threadId"]),
    ("edit_and_resend", &["threadId", "messageId", "text"]),
    ("cancel_run", &["traceId"]),
    ("list_observations", &["threadId", "traceIds", "types"]),
    ("get_thread_config", &["threadId"]),
    ("set_thread_config", &["threadId", "config"]),
    ("list_tools", &[]),
    ("list_providers", &[]),
    ("list_models", &["provider", "baseUrl"]),
    ("ollama_doctor", &["baseUrl", "model"]),
    ("set_api_key", &["provider", "key"]),
    ("delete_api_key", &["provider"]),
    ("list_prompts", &[]),
    ("save_prompt", &["promptId", "name", "content"]),
    ("delete_prompt", &["promptId"]),
    ("export_traces", &["request"]),
];

/// Why a call of `command` with `payload` is refused for its keys, if it is.
pub fn unexpected(command: &str, payload: &Value) -> Option<IpcError> {
    let accepted = ARGS.iter().find(|(name, _)| *name == command)?.1;
    let Value::Object(args) = payload else {
        return None;
    };
    let extra: Vec<&str> = args
        .keys()
        .map(String::as_str)
        .filter(|key| !accepted.contains(key))
        .collect();
    if extra.is_empty() {
        return None;
    }
    let takes = if accepted.is_empty() {
        "no arguments".to_owned()
    } else {
        accepted.join(", ")
    };
    Some(
        IpcError::new(
            ErrorCode::InvalidInput,
            format!(
                "{command} does not take {}; it takes {takes}",
                extra.join(", ")
            ),
        )
        .with_details(serde_json::json!({ "unexpected": extra })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_are_refused_and_known_ones_pass() {
        assert!(unexpected("rename_thread", &json!({ "threadId": "t", "title": "x" })).is_none());
        let e = unexpected("rename_thread", &json!({ "threadId": "t", "titel": "x" })).unwrap();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        assert!(
            e.message.contains("titel") && e.message.contains("threadId, title"),
            "{}",
            e.message
        );
        assert!(
            unexpected("list_threads", &json!({ "x": 1 }))
                .unwrap()
                .message
                .contains("no arguments")
        );
        // Not ours to judge: other commands (plugins) and non-object payloads.
        assert!(unexpected("plugin:dialog|save", &json!({ "x": 1 })).is_none());
        assert!(unexpected("list_threads", &json!(null)).is_none());
    }

    /// `snake_case` as `camelCase`.
    fn camel(name: &str) -> String {
        let mut out = String::new();
        let mut upper = false;
        for c in name.chars() {
            match c {
                '_' => upper = true,
                c if upper => {
                    out.extend(c.to_uppercase());
                    upper = false;
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn the_table_matches_the_commands_signatures() {
        let sources = [
            include_str!("app.rs"),
            include_str!("threads.rs"),
            include_str!("runs.rs"),
            include_str!("settings.rs"),
            include_str!("prompts.rs"),
            include_str!("traces.rs"),
        ];
        let mut found = Vec::new();
        for source in sources {
            for command in source.split("#[tauri::command").skip(1) {
                let signature = command.split(") ->").next().unwrap();
                let (head, params) = signature.split_once('(').unwrap();
                let name = head.rsplit("fn ").next().unwrap().trim().to_owned();
                let args: Vec<String> = params
                    .split(',')
                    .filter_map(|p| p.split_once(':'))
                    .filter(|(_, ty)| {
                        let ty = ty.trim();
                        !ty.starts_with("State") && !ty.starts_with("AppHandle")
                    })
                    .map(|(n, _)| camel(n.trim()))
                    .collect();
                found.push((name, args));
            }
        }
        assert_eq!(found.len(), ARGS.len(), "{found:?}");
        for (name, args) in &found {
            let listed = ARGS
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{name} is not in ARGS"));
            assert_eq!(listed.1, args.as_slice(), "{name}");
        }
    }
}
