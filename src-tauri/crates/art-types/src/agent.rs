//! Running the agent: what goes in (ART's `AgentProps`) and what comes out
//! (`AgentFinalResponse` with `ExecutionMetadata`).

use serde::{Deserialize, Serialize};

use crate::FailureCode;
use crate::message::ConversationMessage;
use crate::thread::ProviderConfig;

/// Per-call overrides (ART's `AgentOptions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptions {
    /// Use this provider / model instead of the thread's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<ProviderConfig>,
    /// Call-level custom system prompt (highest precedence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Override the thread's history limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_limit: Option<u32>,
    /// Use these tools (names) instead of the thread's enabled ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// This run replays a recorded one ("Replay with…").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
}

/// A replay of a recorded run: its question asked again on a branch beside the
/// original's (with another model, system prompt or tool set, as the options say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Replay {
    /// The run replayed (its trace id), in the same thread.
    pub of: String,
    /// Whether tools run again or answer from the record.
    #[serde(default)]
    pub mode: ReplayMode,
    /// In [`ReplayMode::Recorded`], what a call the record does not have gets.
    #[serde(default)]
    pub unmatched: Unmatched,
}

/// How a replay's tool calls are answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// Tools really run again, approvals as usual.
    #[default]
    Live,
    /// A call whose tool and arguments match a recorded call gets that call's recorded
    /// result, and nothing runs.
    Recorded,
}

/// What a replayed call that matches no recorded one gets (recorded mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmatched {
    /// An error result, "not recorded"; nothing runs.
    #[default]
    NotRecorded,
    /// It runs, once the user approves it (whatever the tool's policy, unless deny).
    Ask,
}

impl Unmatched {
    /// The error code of a call answered "not recorded".
    pub const NOT_RECORDED: &'static str = "NOT_RECORDED";
}

/// Input of one run (ART's `AgentProps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProps {
    /// The user's message.
    pub query: String,
    /// Thread to run in.
    pub thread_id: String,
    /// Run id; generated when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// This call's overrides of the thread's settings (provider, system prompt, …).
    #[serde(default)]
    pub options: AgentOptions,
    /// Files given with the query, already in the attachment store
    /// (`art::attachments::Attachments::add_file`); kept on the question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::Attachment>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Everything worked.
    Success,
    /// An answer was produced but at least one tool call failed.
    Partial,
    /// No answer (planning or synthesis failed, or the run was cancelled).
    Error,
    /// Waiting for the user's decision on a tool call (no answer yet); a decision
    /// resumes it.
    Suspended,
}

/// Tokens used by a run, summed over its LLM calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Of the prompt tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub thinking_tokens: u64,
    /// What the provider charged, summed over the calls it said so for (billionths of a
    /// US dollar); `None` when no call reported a cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_nanos: Option<u64>,
}

/// Error summary of a failed run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// Stable code.
    pub code: FailureCode,
    /// Message for people.
    pub message: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Facts about a run (ART's `ExecutionMetadata`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionMetadata {
    /// The thread the run answered in.
    pub thread_id: String,
    /// The run's id (its trace id in exports).
    pub trace_id: String,
    /// Answered, answered with tool failures, failed or stopped.
    pub status: RunStatus,
    /// Earlier messages left out of the prompt so it fits the model's context window.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub history_left_out: u32,
    /// Wall time of the run.
    pub total_duration_ms: u64,
    /// Planning call duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_duration_ms: Option<u64>,
    /// Tool execution duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_duration_ms: Option<u64>,
    /// Synthesis call duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthesis_duration_ms: Option<u64>,
    /// The run answered in one streamed call, without a plan (a thread that offers no
    /// tools: [`crate::ThreadConfig::answers_directly`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct: bool,
    /// Number of LLM calls.
    pub llm_calls: u32,
    /// Number of tool calls.
    pub tool_calls: u32,
    /// Token usage.
    pub usage: TokenUsage,
    /// The provider the run's calls went to (its name, e.g. `openrouter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What went wrong, when status is not success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

/// Output of a run (ART's `AgentFinalResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentFinalResponse {
    /// The AI message saved to the thread (possibly interrupted / an error notice).
    pub response: ConversationMessage,
    /// Facts about the run.
    pub metadata: ExecutionMetadata,
}
