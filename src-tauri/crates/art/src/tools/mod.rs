//! The Tool System: tools the agent can call ([`ToolExecutor`]), the registry that
//! validates and lists them ([`ToolRegistry`]), and the sequential executor
//! ([`ToolSystem`]). Built-in tools: [`calculator::CalculatorTool`] and
//! [`current_time::CurrentTimeTool`] (and, with a data directory's knowledge,
//! [`search_knowledge::SearchKnowledgeTool`]); [`mcp`] brings the tools of MCP servers.

pub mod calculator;
pub mod current_time;
pub mod mcp;
mod registry;
pub mod search_knowledge;
mod system;
pub mod user_time;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use art_types::{AgentState, ToolSchema};
use serde_json::Value;
use tokio::sync::Mutex;

pub use registry::{RegistryError, ToolRegistry};
pub use system::ToolSystem;

/// Per-call time limit when a tool does not set its own.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// What a tool may see and change while it runs.
#[derive(Clone, Default)]
pub struct ExecutionContext {
    /// Thread of the run.
    pub thread_id: String,
    /// Run id.
    pub trace_id: String,
    /// The thread's agent state while the run lasts. Whether a change outlives the run
    /// is the thread's saving strategy's call: `implicit` saves it when the steps end,
    /// `explicit` (ART's default) only when a tool asks ([`Self::save_state`]).
    pub state: Arc<Mutex<AgentState>>,
    /// The plan step the calls are made for (recorded with each execution).
    pub step_id: Option<String>,
    /// Set by [`Self::save_state`].
    pub save_asked: Arc<AtomicBool>,
    /// The knowledge collections (ids) the thread searches; empty: all.
    pub knowledge: Vec<String>,
    /// The call being run (set per call by the tool system; empty outside a run).
    pub call_id: String,
    /// The time this call waited for the user (an MCP server's question), which its
    /// time limit does not count ([`user_time::run_within`]).
    pub user_time: Arc<user_time::UserTime>,
    /// The run's hold on the call while a server's question makes it wait (set per call
    /// by the agent for tools that can ask; `None` outside a run).
    pub hold: Option<Arc<dyn CallHold>>,
}

/// What keeps a run whose tool call waits on a server's question (MCP elicitation)
/// beyond the process: while the question waits the run is stored as waiting on it, so
/// that answering it after the app or `art` ended re-runs the call, and the server's
/// same question, asked again, gets that answer.
#[async_trait::async_trait]
pub trait CallHold: Send + Sync {
    /// The answer already given to `question` (the run went on after its process ended
    /// while the same question waited), to give again without asking.
    fn answered_before(
        &self,
        question: &art_types::mcp::elicit::ElicitQuestion,
    ) -> Option<art_types::mcp::elicit::ElicitAnswer>;
    /// The call waits on `asked`: keep the run, should this process end meanwhile.
    async fn hold(&self, asked: &art_types::mcp::question::QuestionContent);
    /// `asked` has its answer, or its call ended: the run no longer waits on it.
    async fn release(&self, asked: &art_types::mcp::question::QuestionContent);
    /// The process is closing: the run stays kept on the question it waits on, and
    /// nothing more of the call is recorded (its server stopping ends it).
    fn kept(&self) -> bool;
}

impl ExecutionContext {
    /// Ask that the agent state be saved when the run's steps end, whatever the
    /// thread's strategy (ART's explicit `setAgentState`).
    pub fn save_state(&self) {
        self.save_asked.store(true, Ordering::Relaxed);
    }
}

/// A tool failure, turned into an error [`art_types::ToolResult`] by the tool system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// Stable code, e.g. `DIVISION_BY_ZERO`.
    pub code: &'static str,
    /// Clear message for the model and the user.
    pub message: String,
}

impl ToolError {
    /// A tool error.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// A tool (ART's IToolExecutor).
#[async_trait::async_trait]
pub trait ToolExecutor: Send + Sync {
    /// Name, description and argument schema.
    fn schema(&self) -> &ToolSchema;

    /// How long one call may take.
    fn timeout(&self) -> Duration {
        DEFAULT_TOOL_TIMEOUT
    }

    /// Run with arguments already validated against the schema.
    async fn execute(
        &self,
        arguments: &Value,
        context: &ExecutionContext,
    ) -> Result<Value, ToolError>;

    /// What the model is given of an output, when not the output itself (an MCP
    /// result: text without base64 images, at most the server's limit). The trace
    /// keeps the whole output.
    fn for_model(&self, _output: &Value) -> Option<Value> {
        None
    }

    /// Where the tool's calls go, recorded with each result (`metadata.mcp`) when it
    /// is an MCP server's.
    fn origin(&self) -> Option<art_types::mcp::McpOrigin> {
        None
    }

    /// What happens before a call when the thread has no policy of its own for the
    /// tool: built-ins run; an MCP tool follows its server's default.
    fn default_policy(&self) -> art_types::approval::ToolPolicy {
        art_types::approval::ToolPolicy::Auto
    }
}

#[cfg(test)]
mod tests;
