//! One run's bookkeeping: ids and spans, counts and usage, the todo list with what each
//! step produced, the tool exchange so far, and the limits it must stay within.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use art_types::approval::ApprovalDecision;
use art_types::record::{PlanStep, StepStatus};
use art_types::{
    ConversationMessage, ExecutionMetadata, ObservationType, ParsedToolCall, Phase, PromptMessage,
    RunError, RunLimits, RunStatus, SpanInfo, TokenUsage, ToolCalling, ToolResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::streaming::StageResult;
use crate::clock;
use crate::observation::NewObservation;

/// How a run that cannot go on stops: a run error (recorded, the question kept, any
/// partial answer kept as interrupted), or an error before the run could be recorded.
pub(super) enum Stop {
    /// The run failed in `phase` (boxed: it carries the answer so far).
    Run(Box<Failed>),
    /// Storage or input failed.
    Agent(super::AgentError),
}

/// Why and where a run failed, with what was answered so far.
pub(super) struct Failed {
    pub error: RunError,
    pub phase: Phase,
    pub partial: Option<ConversationMessage>,
}

impl Stop {
    /// The run failed in `phase`.
    pub fn run(error: RunError, phase: Phase, partial: Option<ConversationMessage>) -> Self {
        Self::Run(Box::new(Failed {
            error,
            phase,
            partial,
        }))
    }
}

impl From<super::AgentError> for Stop {
    fn from(e: super::AgentError) -> Self {
        Self::Agent(e)
    }
}

impl From<crate::context::ContextError> for Stop {
    fn from(e: crate::context::ContextError) -> Self {
        Self::Agent(e.into())
    }
}

pub(super) fn ms_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One run's bookkeeping (stored as it is while the run waits for a decision).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Run {
    pub thread_id: String,
    pub trace_id: String,
    pub root_span: String,
    pub run_start_ms: i64,
    /// When the run (or its latest part, after a wait) started.
    #[serde(skip, default = "Instant::now")]
    pub started: Instant,
    /// Time the run worked before it waited.
    #[serde(default)]
    pub worked_ms: u64,
    pub llm_calls: u32,
    pub tool_calls: u32,
    pub usage: TokenUsage,
    /// The provider and model the run's calls go to, once known.
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    pub planning_ms: Option<u64>,
    /// The run answers in one call, without a plan
    /// ([`art_types::ThreadConfig::answers_directly`]).
    #[serde(default)]
    pub direct: bool,
    pub execution_ms: Option<u64>,
    pub synthesis_ms: Option<u64>,
    pub tool_failed: bool,
    /// The user's message, once stored.
    pub question: Option<ConversationMessage>,
    /// Earlier messages left out so the prompt fits the model's context window.
    pub history_left_out: usize,
    /// The todo list, each step with its status.
    pub steps: Vec<PlanStep>,
    /// What each finished step produced, or why it did not.
    pub outcomes: BTreeMap<String, String>,
    /// Every tool result of the run, in order.
    pub results: Vec<ToolResult>,
    /// What the thread's "search first" found before planning, as every phase of the
    /// run is told it (kept for the phases after a wait).
    #[serde(default)]
    pub found_first: Option<String>,
    /// The run's tool calls and results so far, as the model reads them in later calls.
    pub exchange: Vec<PromptMessage>,
    /// How steps offer tools (native until a server refuses them).
    pub tool_calling: ToolCalling,
    /// How far the run may go.
    pub limits: RunLimits,
    /// The last message the run added (its question first): the next goes below it, so
    /// a run's messages make one branch whatever the thread shows meanwhile (a
    /// comparison's other columns, a branch the user switched to).
    #[serde(default)]
    pub tip: Option<String>,
    /// The comparison the run is a column of (its id), if any.
    #[serde(default)]
    pub comparison: Option<String>,
    /// As a column: whether a call that asks first waits for the user's decision (else
    /// it is refused by policy). A column is never stored: not kept.
    #[serde(skip)]
    pub column_asks: bool,
    /// Every call id the run has used.
    pub call_ids: HashSet<String>,
    /// Decisions taken on calls that waited, by call id (given when the run goes on).
    #[serde(skip)]
    pub decisions: HashMap<String, ApprovalDecision>,
    /// The answer to the question a call waited on when the run's process ended (given
    /// when the run goes on).
    #[serde(skip)]
    pub held: Option<super::held::HeldAnswer>,
    /// Set when a tool asks that the agent state be saved ([`ExecutionContext::save_state`]
    /// — handled, and cleared, when the steps end, before any wait).
    ///
    /// [`ExecutionContext::save_state`]: crate::tools::ExecutionContext::save_state
    #[serde(skip)]
    pub state_save_asked: Arc<AtomicBool>,
}

impl Run {
    pub fn new(thread_id: &str, trace_id: String, limits: RunLimits, calling: ToolCalling) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            trace_id,
            root_span: clock::new_id(),
            run_start_ms: clock::now_ms(),
            started: Instant::now(),
            llm_calls: 0,
            tool_calls: 0,
            usage: TokenUsage::default(),
            provider: None,
            model: None,
            planning_ms: None,
            direct: false,
            execution_ms: None,
            synthesis_ms: None,
            tool_failed: false,
            question: None,
            history_left_out: 0,
            steps: Vec::new(),
            outcomes: BTreeMap::new(),
            results: Vec::new(),
            found_first: None,
            exchange: Vec::new(),
            tool_calling: calling,
            limits,
            tip: None,
            comparison: None,
            column_asks: false,
            call_ids: HashSet::new(),
            worked_ms: 0,
            decisions: HashMap::new(),
            held: None,
            state_save_asked: Arc::default(),
        }
    }

    pub fn span(
        &self,
        phase: Phase,
        span_id: &str,
        parent: Option<&str>,
        start_ms: i64,
        end: bool,
    ) -> Option<SpanInfo> {
        Some(SpanInfo {
            phase,
            span_id: span_id.to_owned(),
            parent_span_id: parent.map(str::to_owned),
            start_ms,
            end_ms: end.then(clock::now_ms),
        })
    }

    pub fn obs(
        &self,
        kind: ObservationType,
        content: Value,
        span: Option<SpanInfo>,
    ) -> NewObservation {
        let mut o = NewObservation::new(&self.thread_id, &self.trace_id, kind, content);
        o.span = span;
        o
    }

    pub fn add_usage(&mut self, result: &StageResult) {
        self.usage.input_tokens += result.metadata.input_tokens.unwrap_or(0);
        self.usage.cached_input_tokens += result.metadata.cached_input_tokens.unwrap_or(0);
        self.usage.output_tokens += result.metadata.output_tokens.unwrap_or(0);
        self.usage.thinking_tokens += result.metadata.thinking_tokens.unwrap_or(0);
        if let Some(cost) = result.metadata.cost_nanos {
            self.usage.cost_nanos = Some(self.usage.cost_nanos.unwrap_or(0) + cost);
        }
    }

    /// The run stops to wait: the time it worked is kept (waiting does not count
    /// against its time budget).
    pub fn pause(&mut self) {
        self.worked_ms = self.elapsed_ms();
    }

    /// The run goes on after a wait.
    pub fn go_on(&mut self) {
        self.started = Instant::now();
    }

    /// Time the run has worked, waits left out.
    pub fn elapsed_ms(&self) -> u64 {
        self.worked_ms + ms_since(self.started)
    }

    /// Give each call an id no earlier call of the run has: servers that send no ids
    /// (Gemini, Ollama) get ids numbered per reply, and a result must answer one call.
    pub fn make_ids_unique(&mut self, calls: &mut [ParsedToolCall]) {
        for call in calls {
            if !self.call_ids.insert(call.call_id.clone()) {
                let id = (2..)
                    .map(|n| format!("{}_{n}", call.call_id))
                    .find(|id| !self.call_ids.contains(id))
                    .unwrap_or_default();
                self.call_ids.insert(id.clone());
                call.call_id = id;
            }
        }
    }

    /// Why the run may start no more step work: its token or time budget is spent.
    pub fn over_budget(&self) -> Option<String> {
        let used = self.usage.input_tokens + self.usage.output_tokens;
        if let Some(tokens) = self.limits.tokens.filter(|t| used >= *t) {
            return Some(format!(
                "the run used {used} tokens of its budget of {tokens}"
            ));
        }
        let seconds = self.limits.seconds?;
        (self.elapsed_ms() >= u64::from(seconds) * 1_000)
            .then(|| format!("the run reached its time budget of {seconds} s"))
    }

    /// Why the run may make no more tool calls.
    pub fn out_of_tool_calls(&self) -> Option<String> {
        (self.tool_calls >= self.limits.tool_calls).then(|| {
            format!(
                "the run reached its limit of {} tool calls",
                self.limits.tool_calls
            )
        })
    }

    /// The step at `index`, with a new status.
    pub fn set_status(&mut self, index: usize, status: StepStatus) -> &PlanStep {
        self.steps[index].status = status;
        &self.steps[index]
    }

    pub fn status(&self, error: Option<&RunError>) -> RunStatus {
        let step_failed = self.steps.iter().any(|s| s.status == StepStatus::Failed);
        match error {
            Some(_) => RunStatus::Error,
            None if self.tool_failed || step_failed => RunStatus::Partial,
            None => RunStatus::Success,
        }
    }

    pub fn metadata(&self, status: RunStatus, error: Option<RunError>) -> ExecutionMetadata {
        ExecutionMetadata {
            thread_id: self.thread_id.clone(),
            trace_id: self.trace_id.clone(),
            status,
            total_duration_ms: self.elapsed_ms(),
            planning_duration_ms: self.planning_ms,
            execution_duration_ms: self.execution_ms,
            synthesis_duration_ms: self.synthesis_ms,
            direct: self.direct,
            llm_calls: self.llm_calls,
            tool_calls: self.tool_calls,
            usage: self.usage,
            provider: self.provider.clone(),
            model: self.model.clone(),
            history_left_out: u32::try_from(self.history_left_out).unwrap_or(u32::MAX),
            error,
        }
    }
}
