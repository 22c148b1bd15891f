//! Names of the events the backend emits to the UI, and their payloads. One place, so
//! both sides agree.

use serde::{Deserialize, Serialize};

use crate::{ExecutionMetadata, IpcError, StreamEventKind};

/// The backend answered the UI's `ui_ready` handshake; payload [`crate::ReadyEvent`].
pub const READY: &str = "art://ready";
/// Stream events of a run, coalesced; payload [`StreamBatch`].
pub const STREAM: &str = "art://stream";
/// An observation was recorded; payload [`crate::Observation`].
pub const OBSERVATION: &str = "art://observation";
/// A message was stored (not the checkpoints of an answer still streaming: those are
/// shown from the stream); payload [`crate::ConversationMessage`].
pub const MESSAGE: &str = "art://message";
/// The thread list changed (created, renamed, deleted, new activity); payload `null`.
pub const THREADS: &str = "art://threads";
/// An export moved on; payload [`crate::ExportProgress`] (at most ten a second).
pub const EXPORT_PROGRESS: &str = "art://export-progress";
/// A run ended; payload [`RunFinished`].
pub const RUN_FINISHED: &str = "art://run-finished";
/// Files dropped on the window were read into the attachment store (the backend reads
/// dropped paths itself: the page never names a file); payload
/// [`Picked`](crate::commands::Picked).
pub const ATTACHED: &str = "art://attached";
/// The background indexer moved on (a document was read, the queue emptied, a cancel),
/// or collections changed; payload [`IndexProgress`](crate::knowledge::IndexProgress)
/// (at most ten a second; the page reloads what it shows).
pub const KNOWLEDGE: &str = "art://knowledge";
/// A sign-in to an MCP server opened its authorization page (or could not open a
/// browser); payload [`McpSignInPage`](crate::mcp::McpSignInPage).
pub const MCP_SIGN_IN: &str = "art://mcp-sign-in";

/// Consecutive stream events of one run (at most one batch per run per frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamBatch {
    /// Thread of the run.
    pub thread_id: String,
    /// The run.
    pub trace_id: String,
    /// The events, in order.
    pub events: Vec<StreamEventKind>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinished {
    /// Thread of the run.
    pub thread_id: String,
    /// The run.
    pub trace_id: String,
    /// Status, durations, usage (when the agent produced a response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ExecutionMetadata>,
    /// Why the run could not even start or finish properly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<IpcError>,
}
