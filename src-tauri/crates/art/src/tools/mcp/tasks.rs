//! Tools a server runs only as tasks (MCP 2025-11-25: `execution.taskSupport:
//! "required"`). This client does not speak tasks, so such a tool is listed as unusable
//! with the reason instead of being offered to the model and failing when called. The
//! SDK's `Tool` has no `execution` field, so the raw `tools/list` answers are read as
//! they pass through the transport: a stdio server's lines (`stdout`) and the events of
//! an HTTP server's streams (`http`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;

/// Why such a tool cannot be used, as listed.
pub(super) const REASON: &str = "the server runs it only as a task (MCP `taskSupport: required`), \
     which this app does not support yet";

/// The names of a server's tools that require task support, from the latest listing
/// that named them (shared by the transport that reads and the listing that asks).
#[derive(Clone, Default)]
pub(super) struct TaskTools(Arc<Mutex<HashSet<String>>>);

/// The part of a `tools/list` answer read here.
#[derive(Deserialize)]
struct Answer {
    result: Listing,
}

#[derive(Deserialize)]
struct Listing {
    tools: Vec<Listed>,
}

#[derive(Deserialize)]
struct Listed {
    name: String,
    #[serde(default)]
    execution: Option<Execution>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Execution {
    #[serde(default)]
    task_support: Option<String>,
}

impl TaskTools {
    /// One raw JSON-RPC message from the server: if it answers `tools/list`, each tool
    /// it names is marked as requiring tasks or not. Anything else is left alone
    /// (looked at only when it holds `"inputSchema"`, which every listed tool has).
    pub(super) fn read(&self, message: &[u8]) {
        if memchr::memmem::find(message, b"\"inputSchema\"").is_none() {
            return;
        }
        let Ok(answer) = serde_json::from_slice::<Answer>(message) else {
            return;
        };
        let mut required = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for tool in answer.result.tools {
            let task_only = tool
                .execution
                .and_then(|e| e.task_support)
                .is_some_and(|s| s == "required");
            if task_only {
                required.insert(tool.name);
            } else {
                required.remove(&tool.name);
            }
        }
    }

    /// Whether the server's tool `name` (its own name) runs only as a task.
    pub(super) fn required(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::TaskTools;

    #[test]
    fn a_listing_marks_task_only_tools_and_a_later_one_can_unmark_them() {
        let tasks = TaskTools::default();
        tasks.read(
            br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[
                {"name":"echo","inputSchema":{"type":"object"}},
                {"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
                {"name":"maybe","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}"#,
        );
        assert!(tasks.required("research"));
        assert!(!tasks.required("echo"));
        assert!(
            !tasks.required("maybe"),
            "optional: callable without a task"
        );
        // A call's result that mentions the same words changes nothing.
        tasks.read(br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\"inputSchema\" research"}]}}"#);
        assert!(tasks.required("research"));
        tasks.read(br#"{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"research","inputSchema":{}}]}}"#);
        assert!(!tasks.required("research"), "the newer listing wins");
    }
}
