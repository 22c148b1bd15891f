//! Per-thread configuration and agent state (ART's `ThreadConfig`, `AgentState`,
//! `ThreadContext`), and the thread list entry.

use serde::{Deserialize, Serialize};

/// Which provider and model a call uses (ART's `RuntimeProviderConfig`). Secrets are not
/// part of it: adapters fetch keys from the keychain by provider name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// Provider entry name, e.g. `openai` or `ollama`.
    pub provider_name: String,
    /// Model id, e.g. `gpt-4o-mini` or `llama3.2`.
    pub model_id: String,
    /// Adapter options merged over the provider's base options (base URL, `num_ctx`, ...).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub adapter_options: serde_json::Map<String, serde_json::Value>,
}

impl ProviderConfig {
    /// The thread's own word on whether its model sees images
    /// ([`VISION_OPTION`](crate::provider::VISION_OPTION)); `None`: unset.
    pub fn sees_images(&self) -> Option<bool> {
        self.adapter_options
            .get(crate::provider::VISION_OPTION)
            .and_then(serde_json::Value::as_bool)
    }

    /// Say whether the model sees images (`None`: leave it to the model's server).
    pub fn set_sees_images(&mut self, sees: Option<bool>) {
        let key = crate::provider::VISION_OPTION;
        match sees {
            Some(sees) => self.adapter_options.insert(key.into(), sees.into()),
            None => self.adapter_options.remove(key),
        };
    }
}

/// Sampling parameters. `None` means the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationParams {
    /// 0.0 to 2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// 0.0 to 1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Upper bound on answer tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// Default number of history messages sent with each run.
pub const DEFAULT_HISTORY_LIMIT: u32 = 20;

fn default_history_limit() -> u32 {
    DEFAULT_HISTORY_LIMIT
}

/// When a thread's agent state is persisted (ART's state-saving strategies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateSavingStrategy {
    /// Only when the agent or a tool saves it explicitly (`ans` of the calculator).
    #[default]
    Explicit,
    /// Also automatically at the end of a run when the state changed.
    Implicit,
}

/// Configuration of one thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadConfig {
    /// Provider and model.
    pub provider_config: ProviderConfig,
    /// Names of the tools this thread may use.
    #[serde(default)]
    pub enabled_tools: Vec<String>,
    /// How many past messages are sent with each run.
    #[serde(default = "default_history_limit")]
    pub history_limit: u32,
    /// The model's context size in tokens: history that would not fit is left out,
    /// oldest first, and the run says so. Unset: the Ollama `num_ctx` the thread sets,
    /// else no limit of ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Thread-level custom system prompt (overrides the library prompt and the
    /// instance's; overridden per call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The prompt library entry this thread uses when it has no prompt of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// Sampling parameters.
    #[serde(default)]
    pub generation: GenerationParams,
    /// When this thread's agent state is saved; `None` follows the app's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_saving: Option<StateSavingStrategy>,
    /// How far one run may go before it stops working and answers with what it has.
    #[serde(default)]
    pub limits: RunLimits,
    /// How the model is asked to call tools during a step.
    #[serde(default)]
    pub tool_calling: ToolCalling,
    /// The plan is asked for as plain text, without the plan's JSON Schema as the
    /// provider's structured output (set by the user, or when the server refused it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain_plans: bool,
    /// This thread's own policy for a tool, by tool name (over the tool's default).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tool_policies: std::collections::BTreeMap<String, crate::approval::ToolPolicy>,
    /// Show the plan for review before any step runs (edit, reorder, remove, or cancel).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_checkpoint: bool,
    /// The knowledge collections (ids) this thread's `search_knowledge` searches; none
    /// chosen: all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knowledge: Vec<String>,
    /// Always search first: before planning, the question is searched for in the
    /// thread's collections (one `search_knowledge` call, recorded like any other) and
    /// every phase of the run is given the passages found, numbered to cite.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search_first: bool,
    /// Plan first even when the thread offers no tools. Off (the default), a thread
    /// with no tools, no first search and no plan review answers in one streamed call
    /// ([`ThreadConfig::answers_directly`]): its plan could only ever be "reply".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_first: bool,
}

impl ThreadConfig {
    /// Whether a run of this thread answers in one streamed call, without planning:
    /// it offers the model no tools, searches nothing first, shows no plan for review,
    /// and the user did not ask for plans anyway ([`ThreadConfig::plan_first`]).
    /// The agent, the settings form and `art config` all read this one rule.
    pub fn answers_directly(&self) -> bool {
        self.enabled_tools.is_empty()
            && !self.search_first
            && !self.plan_checkpoint
            && !self.plan_first
    }
}

/// How far one run may go. A limit reached ends the step at work as failed, with the
/// reason; the answer is still written from what was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLimits {
    /// LLM calls one step may make.
    #[serde(default = "RunLimits::default_step_iterations")]
    pub step_iterations: u32,
    /// Tool calls one run may make.
    #[serde(default = "RunLimits::default_tool_calls")]
    pub tool_calls: u32,
    /// Tokens, input and output of every call together, one run may use; none: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Seconds after which a run starts no more step work; none: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u32>,
}

impl RunLimits {
    /// LLM calls a step may make unless the thread says otherwise.
    pub const STEP_ITERATIONS: u32 = 5;
    /// Tool calls a run may make unless the thread says otherwise.
    pub const TOOL_CALLS: u32 = 20;

    fn default_step_iterations() -> u32 {
        Self::STEP_ITERATIONS
    }

    fn default_tool_calls() -> u32 {
        Self::TOOL_CALLS
    }
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            step_iterations: Self::STEP_ITERATIONS,
            tool_calls: Self::TOOL_CALLS,
            tokens: None,
            seconds: None,
        }
    }
}

/// How a step offers tools to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCalling {
    /// The provider's own tool calling; a model whose server refuses tools is asked in
    /// text instead, for the rest of the run.
    #[default]
    Native,
    /// Tools described in the prompt, calls written as JSON (models without tool calling).
    Text,
}

impl Default for ThreadConfig {
    fn default() -> Self {
        Self {
            provider_config: ProviderConfig::default(),
            enabled_tools: Vec::new(),
            history_limit: DEFAULT_HISTORY_LIMIT,
            context_window: None,
            system_prompt: None,
            prompt_id: None,
            generation: GenerationParams::default(),
            state_saving: None,
            limits: RunLimits::default(),
            tool_calling: ToolCalling::default(),
            plain_plans: false,
            tool_policies: Default::default(),
            plan_checkpoint: false,
            knowledge: Vec::new(),
            search_first: false,
            plan_first: false,
        }
    }
}

/// Agent state of a thread: free-form data the agent and tools keep between runs
/// (e.g. the calculator's `ans`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// The data, a JSON object.
    pub data: serde_json::Map<String, serde_json::Value>,
}

/// Configuration and state of a thread, loaded at the start of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadContext {
    /// The thread's settings (provider, model, prompts, tools), as the user saved them.
    pub config: ThreadConfig,
    /// What the agent keeps between runs (the calculator's `ans`, say).
    pub state: AgentState,
}

/// An entry of the thread list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSummary {
    /// Thread id.
    pub thread_id: String,
    /// Title shown in the sidebar.
    pub title: String,
    /// Unix ms of creation.
    pub created_at: i64,
    /// Unix ms of the last message or change (the list is ordered by it).
    pub updated_at: i64,
    /// Number of messages, on every branch.
    pub message_count: u64,
    /// The last message of the active branch: the path from the first message to it is
    /// what the thread shows and what the model reads. `None` while the thread is empty
    /// (or a branch is about to start at its first message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The thread and message this one was forked from ("Fork from here").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
}

/// Where a forked thread came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkOrigin {
    /// The thread forked.
    pub thread_id: String,
    /// Its message the fork's history ends with.
    pub message_id: String,
}

/// A search hit that can jump to its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// Thread of the match.
    pub thread_id: String,
    /// Message id (for a match in a tool call, the id of its TOOL message).
    pub record_id: String,
    /// Whether the match is in a tool call rather than a message.
    pub in_tool_call: bool,
    /// Excerpt with the match marked by `[` and `]`.
    pub snippet: String,
}
