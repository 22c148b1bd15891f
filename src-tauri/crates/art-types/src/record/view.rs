//! The one fold from what a run records to what people see of it: the plan with its
//! steps, one card per tool call, thinking, the answer and how the run ended. The app
//! folds live stream events and observations into it, the Markdown export and the `art`
//! printer fold recorded observations; [`RunView::apply_observation`] says what changed,
//! so a printer can print as the run goes.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    ErrorContent, PlanContent, PlanStep, PlanUpdateContent, StepContent, StepStatus,
    ToolCallContent, ToolExecutionContent, read,
};
use crate::approval::{ApprovalContent, PLAN_REVIEW, PlanReviewContent, SuspensionContent};
use crate::mcp::McpOrigin;
use crate::mcp::catalog::ToolProgress;
use crate::mcp::question::{AnsweredContent, QuestionCard, QuestionContent};
use crate::{
    ExecutionMetadata, FailureCode, LlmMetadata, Observation, ObservationType, Phase,
    StreamEventKind, TokenType, ToolStatus,
};

/// The plan, as soon as planning finishes, kept current as steps move on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanCard {
    /// Short title of the task.
    pub title: Option<String>,
    /// What the agent understood.
    pub intent: Option<String>,
    /// The todo list, each step with its status.
    pub steps: Vec<PlanStep>,
    /// The latest change of the plan made while it ran.
    pub update: Option<PlanUpdateContent>,
    /// How each step that ended ended (its output, or why it failed), by step id.
    pub outcomes: BTreeMap<String, StepContent>,
    /// The run waits for the user's word on this plan before any step runs.
    pub in_review: bool,
    /// The user's word on the plan, when the thread asks for it.
    pub review: Option<ApprovalContent>,
    /// What could not be read of the planner's output, and what the run did instead
    /// ("Could not read the plan: answering without one").
    pub unread: Option<String>,
}

impl PlanCard {
    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// Where a tool call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Planned or running.
    Running,
    /// Returned output.
    Ok,
    /// Failed, refused or timed out.
    Error,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCard {
    /// Call id.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Arguments: as proposed until the call runs, then as it ran (an approval's edit;
    /// [`ToolCard::edited`] says so, its `approval` keeps what was proposed).
    pub arguments: Value,
    /// Where it is.
    pub state: ToolState,
    /// Output, as the model read it (when ok).
    pub output: Option<Value>,
    /// The whole result when the model read less (an MCP tool's, with its images).
    pub result: Option<Value>,
    /// Error (when failed).
    pub error: Option<String>,
    /// How long it ran.
    pub duration_ms: Option<i64>,
    /// The MCP server it belongs to, if any.
    pub mcp: Option<McpOrigin>,
    /// The plan step it was made for.
    pub step_id: Option<String>,
    /// The decision taken on it, when it was asked about or refused by policy.
    pub approval: Option<ApprovalContent>,
    /// The question its MCP server asked the user while it ran, the last one if several.
    pub question: Option<QuestionCard>,
    /// How far it had got, as its MCP server last said while it ran.
    pub progress: Option<ToolProgress>,
    /// The run whose record answered it (a replay's call, in recorded mode: nothing ran).
    pub recorded_from: Option<String>,
}

impl ToolCard {
    /// Whether the call ran (or is to run) with other arguments than the model proposed.
    pub fn edited(&self) -> bool {
        self.approval.as_ref().is_some_and(ApprovalContent::edited)
    }
}

/// What an observation changed in the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing anyone shows.
    Nothing,
    /// The title, intent or plan.
    Plan,
    /// The step at this index of the plan changed status.
    Step(usize),
    /// The plan was changed while it ran.
    PlanUpdate,
    /// The tool card at this index.
    Tool(usize),
    /// An error that ended or hurt the run.
    Error,
    /// The run waits for a decision on a call.
    Waiting,
    /// A decision was taken on the call at this index of the tool cards.
    Decided(usize),
    /// The plan waits for the user's word, or got it.
    Review,
    /// Thinking, figures, anything else kept.
    Other,
}

/// A run of one thread.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// Thread.
    pub thread_id: String,
    /// Run id.
    pub trace_id: String,
    /// Plan, once known.
    pub plan: Option<PlanCard>,
    /// The plan as it streams in, before it is known (its title and the steps written
    /// whole so far): what the card shows while the model plans.
    pub draft: Option<PlanCard>,
    /// The planning call's text so far (what the draft is read from).
    planning: String,
    /// Thinking streamed so far (all stages).
    pub thinking: String,
    /// Thinking as recorded (THOUGHTS observations).
    pub thoughts: String,
    /// The answer so far.
    pub answer: String,
    /// The model has sent something (planning output included).
    pub heard: bool,
    /// Tool calls in the order they were asked for.
    pub tools: Vec<ToolCard>,
    /// The error that ended (or hurt) the run: code and message.
    pub error: Option<(FailureCode, String)>,
    /// Every distinct error recorded, recoverable ones included, in order.
    pub problems: Vec<(FailureCode, String)>,
    /// The run has ended.
    pub finished: bool,
    /// Figures of the finished run.
    pub metadata: Option<ExecutionMetadata>,
    /// Earlier messages left out of the prompt to fit the model's context window.
    pub history_left_out: u32,
    /// The call the run waits on for the user's decision.
    pub waiting: Option<SuspensionContent>,
    /// When the run's first record began (ms since the epoch).
    pub started_ms: Option<i64>,
    /// The answer's first token, in ms after [`Self::started_ms`] (the answer's call
    /// start plus its time to first token), once its call ended.
    pub first_token_ms: Option<u64>,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl RunView {
    /// A run that has just been started.
    pub fn new(thread_id: &str, trace_id: &str) -> Self {
        Self {
            thread_id: thread_id.into(),
            trace_id: trace_id.into(),
            plan: None,
            draft: None,
            planning: String::new(),
            thinking: String::new(),
            thoughts: String::new(),
            answer: String::new(),
            heard: false,
            tools: Vec::new(),
            error: None,
            problems: Vec::new(),
            finished: false,
            metadata: None,
            history_left_out: 0,
            waiting: None,
            started_ms: None,
            first_token_ms: None,
        }
    }

    /// The fold of recorded observations, ended.
    pub fn of(thread_id: &str, trace_id: &str, observations: &[Observation]) -> Self {
        let mut run = Self::new(thread_id, trace_id);
        for o in observations {
            run.apply_observation(o);
        }
        run.finish(None);
        run
    }

    /// Fold a batch of stream events in.
    pub fn apply_stream(&mut self, events: &[StreamEventKind]) {
        let planned_before = self.planning.len();
        for event in events {
            if matches!(event, StreamEventKind::Token { .. }) {
                self.heard = true;
            }
            match event {
                StreamEventKind::Token { text, token_type } if token_type.is_thinking() => {
                    self.thinking.push_str(text);
                }
                // Planning and step output is for the plan card, not the answer.
                StreamEventKind::Token {
                    text,
                    token_type: TokenType::FinalSynthesisLlmResponse | TokenType::LlmResponse,
                } => self.answer.push_str(text),
                StreamEventKind::Token {
                    text,
                    token_type: TokenType::AgentThoughtLlmResponse,
                } if self.plan.is_none() => self.planning.push_str(text),
                _ => {}
            }
        }
        if self.planning.len() > planned_before {
            self.draft = draft::draft(&self.planning);
        }
    }

    /// A copy without the answer text (for views that show the rest: the answer can be
    /// long, and streams).
    pub fn without_answer(&self) -> Self {
        let mut copy = Self {
            answer: String::new(),
            ..Self::new(&self.thread_id, &self.trace_id)
        };
        copy.plan.clone_from(&self.plan);
        copy.draft.clone_from(&self.draft);
        copy.thinking.clone_from(&self.thinking);
        copy.heard = self.heard;
        copy.tools.clone_from(&self.tools);
        copy.error.clone_from(&self.error);
        copy.finished = self.finished;
        copy.metadata.clone_from(&self.metadata);
        copy.history_left_out = self.history_left_out;
        copy.waiting.clone_from(&self.waiting);
        copy
    }

    /// Whether the run answered in one call, without a plan (known once it ended).
    pub fn direct(&self) -> bool {
        self.metadata.as_ref().is_some_and(|m| m.direct)
    }

    /// Whether the run waits for the user's word on its plan.
    pub fn waits_for_review(&self) -> bool {
        self.plan.as_ref().is_some_and(|p| p.in_review)
    }

    /// The step being worked on, with its number (from 1).
    pub fn current_step(&self) -> Option<(usize, &PlanStep)> {
        let plan = self.plan.as_ref()?;
        plan.steps
            .iter()
            .enumerate()
            .find(|(_, s)| s.status == StepStatus::InProgress)
            .map(|(i, s)| (i + 1, s))
    }

    /// What the run is doing now, in a few words (shown while it runs).
    pub fn progress(&self) -> String {
        if let Some(waiting) = &self.waiting {
            return match (&waiting.question_id, &waiting.server) {
                (Some(_), Some(server)) => {
                    format!("Waiting for your answer to {server}'s question…")
                }
                (Some(_), None) => format!(
                    "Waiting for your answer to {}'s question…",
                    waiting.tool_name
                ),
                (None, _) => format!("Waiting for your approval of {}…", waiting.tool_name),
            };
        }
        if self.waits_for_review() {
            return "Waiting for your word on the plan…".into();
        }
        if let Some(tool) = self.tools.iter().find(|t| t.state == ToolState::Running) {
            if let Some(question) = tool.question.as_ref().filter(|q| q.outcome.is_none()) {
                return format!(
                    "The {} server asks you something (on the {} card)…",
                    question.asked.question.server, tool.tool_name
                );
            }
            return format!("Running the {} tool…", tool.tool_name);
        }
        if let Some((number, step)) = self.current_step() {
            return format!("Step {number}: {}…", step.description);
        }
        // A direct answer (no plan) streams from its first token.
        match (self.plan.is_some() || !self.answer.is_empty(), self.heard) {
            (true, _) => "Writing the answer…".into(),
            (false, true) => "Planning…".into(),
            (false, false) => {
                "Waiting for the model… (a local model is loaded on first use, which can take a while)"
                    .into()
            }
        }
    }

    fn tool(&mut self, call_id: &str, tool_name: &str, arguments: &Value) -> usize {
        match self.tools.iter().position(|t| t.call_id == call_id) {
            Some(i) => i,
            None => {
                self.tools.push(ToolCard {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    arguments: arguments.clone(),
                    state: ToolState::Running,
                    output: None,
                    result: None,
                    error: None,
                    duration_ms: None,
                    mcp: None,
                    step_id: None,
                    approval: None,
                    question: None,
                    progress: None,
                    recorded_from: None,
                });
                self.tools.len() - 1
            }
        }
    }

    fn plan_mut(&mut self) -> &mut PlanCard {
        self.plan.get_or_insert_with(PlanCard::default)
    }

    /// Fold an observation in; says what changed.
    pub fn apply_observation(&mut self, o: &Observation) -> Change {
        let c = &o.content;
        let began = o.span.as_ref().map_or(o.timestamp, |s| s.start_ms);
        let started = *self.started_ms.get_or_insert(began);
        if o.kind == ObservationType::LlmStreamEnd
            && self.first_token_ms.is_none()
            && let Some(span) = o.span.as_ref().filter(|s| s.phase == Phase::Synthesis)
            && let Some(ttft) = c
                .get("metadata")
                .and_then(read::<LlmMetadata>)
                .and_then(|m| m.time_to_first_token_ms)
        {
            self.first_token_ms = u64::try_from(span.start_ms - started)
                .ok()
                .map(|since| since + ttft);
        }
        match o.kind {
            ObservationType::Title => {
                self.plan_mut().title = text(c, "title");
                Change::Plan
            }
            ObservationType::Intent => {
                self.plan_mut().intent = text(c, "intent");
                Change::Plan
            }
            ObservationType::Plan => {
                // The plan itself replaces its draft.
                self.draft = None;
                self.planning = String::new();
                let content = PlanContent::read(c);
                let plan = self.plan_mut();
                plan.intent = content.intent.or(plan.intent.take());
                plan.steps = content.steps;
                Change::Plan
            }
            ObservationType::Step => self.apply_step(c),
            ObservationType::PlanUpdate => {
                let Some(update) = read::<PlanUpdateContent>(c) else {
                    return Change::Nothing;
                };
                let plan = self.plan_mut();
                plan.steps.clone_from(&update.steps);
                plan.update = Some(update);
                Change::PlanUpdate
            }
            ObservationType::ToolCall => match read::<ToolCallContent>(c) {
                Some(call) => {
                    let i = self.tool(&call.call_id, &call.tool_name, &call.arguments);
                    self.tools[i].step_id = call.step_id.or(self.tools[i].step_id.take());
                    Change::Tool(i)
                }
                None => Change::Nothing,
            },
            ObservationType::ToolExecution => {
                let Some(done) = read::<ToolExecutionContent>(c) else {
                    return Change::Nothing;
                };
                let duration = o.span.as_ref().and_then(|s| Some(s.end_ms? - s.start_ms));
                let i = self.tool(&done.call_id, &done.tool_name, &done.arguments);
                let card = &mut self.tools[i];
                // What ran: the user's edit of what the model proposed, if any.
                card.arguments = done.arguments;
                card.state = match done.status {
                    ToolStatus::Success => ToolState::Ok,
                    ToolStatus::Error => ToolState::Error,
                };
                card.output = Some(done.output).filter(|v| !v.is_null());
                card.result = done.result;
                card.error = done.error;
                card.duration_ms = duration;
                card.mcp = McpOrigin::of(&o.metadata);
                card.recorded_from = o
                    .metadata
                    .get(crate::message::RECORDED_FROM)
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                card.step_id = done.step_id.or(card.step_id.take());
                Change::Tool(i)
            }
            ObservationType::Thoughts => {
                if let Some(t) = text(c, "text").or_else(|| text(c, "thinking")) {
                    self.thoughts.push_str(&t);
                }
                Change::Other
            }
            ObservationType::FinalResponse => {
                let left_out = c
                    .pointer("/metadata/historyLeftOut")
                    .and_then(Value::as_u64);
                self.history_left_out =
                    left_out.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
                // The run's figures, for a run read back from what it recorded.
                if let Some(metadata) = c.get("metadata").and_then(read::<ExecutionMetadata>) {
                    self.metadata = Some(metadata);
                }
                Change::Other
            }
            ObservationType::Suspension => match read::<SuspensionContent>(c) {
                Some(waiting) => {
                    self.waiting = Some(waiting);
                    Change::Waiting
                }
                None => Change::Nothing,
            },
            ObservationType::PlanReview => match read::<PlanReviewContent>(c) {
                Some(review) => {
                    let plan = self.plan_mut();
                    plan.steps = review.steps;
                    plan.in_review = true;
                    Change::Review
                }
                None => Change::Nothing,
            },
            ObservationType::Approval => {
                let Some(decided) = read::<ApprovalContent>(c) else {
                    return Change::Nothing;
                };
                if decided.call_id == PLAN_REVIEW {
                    let plan = self.plan_mut();
                    plan.in_review = false;
                    plan.review = Some(decided);
                    return Change::Review;
                }
                if self
                    .waiting
                    .as_ref()
                    .is_some_and(|w| w.call_id == decided.call_id)
                {
                    self.waiting = None;
                }
                let i = self.tool(&decided.call_id, &decided.tool_name, &decided.proposed);
                self.tools[i].approval = Some(decided);
                Change::Decided(i)
            }
            ObservationType::Elicitation => match read::<QuestionContent>(c) {
                Some(asked) => {
                    let i = self.tool(&asked.call_id, &asked.tool_name, &Value::Null);
                    self.tools[i].question = Some(QuestionCard {
                        asked,
                        outcome: None,
                    });
                    Change::Tool(i)
                }
                None => Change::Nothing,
            },
            ObservationType::ToolProgress => {
                let Some(progress) = read::<ToolProgress>(c) else {
                    return Change::Nothing;
                };
                let Some(i) = self
                    .tools
                    .iter()
                    .position(|t| t.call_id == progress.call_id)
                else {
                    return Change::Nothing;
                };
                self.tools[i].progress = Some(progress);
                Change::Tool(i)
            }
            ObservationType::ElicitationAnswer => {
                let Some(answered) = read::<AnsweredContent>(c) else {
                    return Change::Nothing;
                };
                // A run kept on this question waits no more.
                if self.waiting.as_ref().is_some_and(|w| {
                    w.question_id.as_deref() == Some(answered.question_id.as_str())
                }) {
                    self.waiting = None;
                }
                let Some(i) = self.tools.iter().position(|t| {
                    t.question
                        .as_ref()
                        .is_some_and(|q| q.asked.question_id == answered.question_id)
                }) else {
                    return Change::Nothing;
                };
                if let Some(question) = &mut self.tools[i].question {
                    question.outcome = Some(answered.outcome);
                }
                Change::Tool(i)
            }
            ObservationType::Error | ObservationType::LlmStreamError => {
                if o.kind == ObservationType::Error {
                    self.waiting = None;
                    if let Some(plan) = &mut self.plan {
                        plan.in_review = false;
                    }
                }
                self.apply_error(o)
            }
            _ => Change::Nothing,
        }
    }

    fn apply_step(&mut self, c: &Value) -> Change {
        let Some(step) = read::<StepContent>(c) else {
            return Change::Nothing;
        };
        let plan = self.plan_mut();
        let Some(i) = plan.steps.iter().position(|s| s.id == step.step_id) else {
            return Change::Nothing;
        };
        plan.steps[i].status = step.status;
        if step.status.is_final() {
            plan.outcomes.insert(step.step_id.clone(), step);
        }
        Change::Step(i)
    }

    fn apply_error(&mut self, o: &Observation) -> Change {
        let content = read::<ErrorContent>(&o.content);
        let code = content
            .as_ref()
            .map_or_else(|| FailureCode::parse("ERROR"), |e| e.code.clone());
        let message = content
            .and_then(|e| e.message)
            .unwrap_or_else(|| o.title.clone());
        if !self.problems.iter().any(|(_, m)| *m == message) {
            self.problems.push((code.clone(), message.clone()));
        }
        // A planning output that is not (wholly) a plan: the run went on; the plan card
        // says what it could not read and what the run did instead, no error card.
        if o.kind == ObservationType::Error && o.metadata["recoverable"] == true {
            if code == FailureCode::PlanningOutputUnparseable {
                self.plan_mut().unread = Some(o.title.clone());
                return Change::Plan;
            }
            return Change::Other;
        }
        // A failed LLM call does not end the run by itself; keep the worst.
        if self.error.is_none() || o.kind == ObservationType::Error {
            self.error = Some((code, message));
        }
        Change::Error
    }

    /// The run ended: what was still running did not finish — unless it waits for a
    /// decision, and then all of it stays as it is. `metadata` is the run's end as the
    /// agent returned it; without it, what its final response recorded is kept.
    pub fn finish(&mut self, metadata: Option<ExecutionMetadata>) {
        self.finished = true;
        let metadata = metadata.or_else(|| self.metadata.take());
        // (Its end may arrive before the SUSPENSION observation does.)
        let suspended = metadata
            .as_ref()
            .is_some_and(|m| m.status == crate::RunStatus::Suspended);
        if self.waiting.is_some() || self.waits_for_review() || suspended {
            self.metadata = metadata;
            return;
        }
        for tool in &mut self.tools {
            if tool.state == ToolState::Running {
                tool.state = ToolState::Error;
                tool.error
                    .get_or_insert_with(|| "not run: the run ended first".into());
            }
        }
        if let Some(plan) = &mut self.plan {
            for step in &mut plan.steps {
                step.status = match step.status {
                    StepStatus::InProgress => StepStatus::Failed,
                    StepStatus::Pending => StepStatus::Skipped,
                    done => done,
                };
            }
        }
        if let Some(error) = metadata.as_ref().and_then(|m| m.error.as_ref()) {
            self.error = Some((error.code.clone(), error.message.clone()));
        }
        if let Some(m) = &metadata {
            self.history_left_out = m.history_left_out;
        }
        self.metadata = metadata;
    }
}

mod draft;

pub use draft::balanced_object;

#[cfg(test)]
mod tests;
