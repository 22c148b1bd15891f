//! Phase 2, the steps: each step that acts is a loop — the model gets the plan with what
//! earlier steps found and the thread's tools, calls tools, sees their results, and
//! either calls more or ends the step with its output. Tools are offered natively, or
//! described in the prompt with calls written as JSON (a thread's choice, and the
//! fallback when a server refuses tools). `update_plan` lets a step change the steps
//! after it. Limits (LLM calls per step, tool calls, tokens and time per run) end the
//! step at work as failed; the answer is still written from what was done.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use art_types::record::{PlanStep, PlanUpdateContent, StepContent, StepStatus};
use art_types::{
    AgentState, FunctionCall, ObservationType, ParsedToolCall, Phase, PromptMessage, PromptRole,
    StreamError, ToolCallRequest, ToolCalling, ToolResult, ToolSchema, ToolStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::super::history;
use super::super::streaming::{Ending, StageResult};
use super::approvals::Verdict;
use super::calls::{Call, output_text, stage_error, stopped, tool_message};
use super::run::{Run, Stop, ms_since};
use super::{PesAgent, Setup, tools_list};
use crate::clock;
use crate::reasoning::output_parser::{self, fresh_id, parse_calls_in};
use crate::reasoning::provider::CallStage;
use crate::tools::ExecutionContext;

/// The tool a step calls to change the steps after it (handled by the agent itself).
pub const UPDATE_PLAN: &str = "update_plan";

/// Longest step output shown to later steps in their plan (the answer gets it whole).
const OUTPUT_IN_PLAN: usize = 2_000;

/// How a step that acts ended.
struct StepEnd {
    status: StepStatus,
    output: Option<String>,
    reason: Option<String>,
    iterations: u32,
    /// A run-wide limit was reached: no later step may start.
    halts: bool,
}

impl StepEnd {
    fn done(output: String, iterations: u32) -> Self {
        Self {
            status: StepStatus::Done,
            output: Some(output),
            reason: None,
            iterations,
            halts: false,
        }
    }

    fn failed(reason: String, iterations: u32, halts: bool) -> Self {
        Self {
            status: StepStatus::Failed,
            output: None,
            reason: Some(reason),
            iterations,
            halts,
        }
    }
}

/// Where the step loop starts.
pub(super) enum Start {
    /// After planning, with the calls the planner wrote for the first step.
    Planned(Vec<ParsedToolCall>),
    /// At a step that waited for a decision.
    Resumed(StepState),
}

/// How a step left the loop.
enum StepOutcome {
    /// It ended.
    Ended(StepEnd),
    /// It waits for a decision on its next call.
    Waiting(StepState),
}

/// A step at work, as a waiting run keeps it to go on after a restart.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StepState {
    /// Its place in the plan.
    pub index: usize,
    /// Its span.
    pub span: String,
    /// When it started (Unix ms).
    pub start_ms: i64,
    /// Calls still to make, in order (the first is the one a waiting run waits on).
    pub calls: Vec<ParsedToolCall>,
    /// Calls of the current batch already made, with their results.
    pub ran: Vec<(ParsedToolCall, ToolResult)>,
    /// The current batch's TOOL_CALL observations are recorded.
    pub announced: bool,
    /// What the model wrote with the current batch.
    pub said: String,
    /// The current batch is the planner's.
    pub from_planner: bool,
    /// LLM calls made so far.
    pub iterations: u32,
}

impl StepState {
    fn new(index: usize, calls: Vec<ParsedToolCall>) -> Self {
        Self {
            index,
            span: clock::new_id(),
            start_ms: clock::now_ms(),
            from_planner: !calls.is_empty(),
            calls,
            ran: Vec::new(),
            announced: false,
            said: String::new(),
            iterations: 0,
        }
    }
}

/// The `update_plan` tool as the model sees it.
fn update_plan_schema() -> ToolSchema {
    ToolSchema {
        name: UPDATE_PLAN.into(),
        description: "Replace the steps after the current one with these (what you found \
                      changed what is left to do)."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "steps": { "type": "array", "items": { "type": "object", "properties": {
                    "id": { "type": "string" },
                    "description": { "type": "string" },
                    "tools": { "type": "array", "items": { "type": "string" } }
                }, "required": ["description"] } },
                "reason": { "type": "string" }
            },
            "required": ["steps"]
        }),
        output_schema: None,
        examples: Vec::new(),
    }
}

/// Whether a provider refused the call because the model cannot take tools (Ollama:
/// "… does not support tools"; OpenAI-compatible servers say it in other words).
fn refuses_tools(error: &StreamError) -> bool {
    let message = error.message.to_lowercase();
    [
        "does not support tools",
        "does not support tool",
        "tools are not supported",
        "tool use is not supported",
        "does not support function calling",
        "function calling is not supported",
    ]
    .iter()
    .any(|m| message.contains(m))
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The todo list as the model reads it: each step with its status and what it produced
/// (`max` characters of each output at most).
pub(super) fn plan_text(run: &Run, max: usize) -> String {
    if run.steps.is_empty() {
        return "(no steps: answer directly)".into();
    }
    run.steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut line = format!("{}. [{}] {}", i + 1, s.status.label(), s.description);
            if let Some(outcome) = run.outcomes.get(&s.id) {
                line.push_str(" — ");
                line.push_str(&clip(outcome, max));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool results as one text (the step output of calls the planner wrote, and the text
/// form of tool calling).
pub(super) fn results_text(results: &[ToolResult]) -> String {
    if results.is_empty() {
        return "(no tools were used)".into();
    }
    results
        .iter()
        .map(|r| match r.status {
            ToolStatus::Success => format!(
                "- {} ({}): {}",
                r.tool_name,
                r.call_id,
                output_text(&r.output)
            ),
            ToolStatus::Error => format!(
                "- {} ({}) FAILED: {}",
                r.tool_name,
                r.call_id,
                r.error.as_deref().unwrap_or("")
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn request(call: &ParsedToolCall) -> ToolCallRequest {
    ToolCallRequest {
        id: call.call_id.clone(),
        kind: "function".into(),
        function: FunctionCall {
            name: call.tool_name.clone(),
            arguments: call.arguments.to_string(),
        },
        signature: call.signature.clone(),
    }
}

impl PesAgent {
    /// Every step that acts, in order, from the start or from a step that was waiting
    /// for a decision; steps of pure reasoning are left to the answer. Returns the step
    /// that waits for a decision, if one does.
    pub(super) async fn execute(
        &self,
        run: &mut Run,
        setup: &Setup,
        start: Start,
        state: &Arc<Mutex<AgentState>>,
        cancel: &CancellationToken,
    ) -> Result<Option<StepState>, Stop> {
        let started = Instant::now();
        let mut halted: Option<String> = None;
        let (mut planned, mut index) = match start {
            Start::Planned(calls) => (Some(calls).filter(|c| !c.is_empty()), 0),
            Start::Resumed(step) => {
                let next = step.index + 1;
                match self.run_step(run, setup, step, true, state, cancel).await? {
                    StepOutcome::Waiting(step) => return Ok(Some(step)),
                    StepOutcome::Ended(end) if end.halts => halted = end.reason,
                    StepOutcome::Ended(_) => {}
                }
                (None, next)
            }
        };
        while index < run.steps.len() {
            if run.steps[index].status != StepStatus::Pending {
                index += 1;
                continue;
            }
            if let Some(reason) = &halted {
                let reason = format!("not started: {reason}");
                self.record_point(run, index, StepStatus::Skipped, None, Some(reason))
                    .await;
                index += 1;
                continue;
            }
            let mut calls = if index == 0 {
                planned.take().unwrap_or_default()
            } else {
                Vec::new()
            };
            run.make_ids_unique(&mut calls);
            let acts = !calls.is_empty()
                || (!run.steps[index].tools.is_empty() && !setup.schemas.is_empty());
            if acts {
                let step = StepState::new(index, calls);
                match self
                    .run_step(run, setup, step, false, state, cancel)
                    .await?
                {
                    StepOutcome::Waiting(step) => return Ok(Some(step)),
                    StepOutcome::Ended(end) if end.halts => halted = end.reason,
                    StepOutcome::Ended(_) => {}
                }
            }
            index += 1;
        }
        if run.llm_calls > 1 || !run.results.is_empty() {
            let before = run.execution_ms.unwrap_or(0);
            run.execution_ms = Some(before + ms_since(started));
        }
        Ok(None)
    }

    /// One step that acts, from in progress (or from where it waited for a decision)
    /// to done or failed, in its own span.
    async fn run_step(
        &self,
        run: &mut Run,
        setup: &Setup,
        mut st: StepState,
        resumed: bool,
        state: &Arc<Mutex<AgentState>>,
        cancel: &CancellationToken,
    ) -> Result<StepOutcome, Stop> {
        let index = st.index;
        let step_id = run.set_status(index, StepStatus::InProgress).id.clone();
        if !resumed {
            let begin = StepContent {
                step_id: step_id.clone(),
                status: StepStatus::InProgress,
                output: None,
                reason: None,
                iterations: 0,
            };
            self.record_step(run, index, begin, &st.span, st.start_ms, false)
                .await;
        }
        let limit = run.limits.step_iterations;
        let unfinished = || format!("the step did not finish within {limit} LLM calls");
        let end = loop {
            if !st.calls.is_empty() {
                let Some((results, complete)) = self
                    .run_calls(run, setup, &step_id, &mut st, state, cancel)
                    .await?
                else {
                    return Ok(StepOutcome::Waiting(st));
                };
                if !complete {
                    let reason = run.out_of_tool_calls().unwrap_or_default();
                    break StepEnd::failed(reason, st.iterations, true);
                }
                if st.from_planner && results.iter().all(|r| r.status == ToolStatus::Success) {
                    break StepEnd::done(results_text(&results), st.iterations);
                }
            }
            st.from_planner = false;
            if let Some(reason) = run.over_budget() {
                break StepEnd::failed(reason, st.iterations, true);
            }
            if st.iterations >= limit {
                break StepEnd::failed(unfinished(), st.iterations, false);
            }
            st.iterations += 1;
            let reply = self.step_call(run, setup, index, &st.span, cancel).await?;
            let (mut asked, problem) = asked_calls(&reply);
            run.make_ids_unique(&mut asked);
            let (updates, rest): (Vec<_>, Vec<_>) =
                asked.into_iter().partition(|c| c.tool_name == UPDATE_PLAN);
            for update in &updates {
                let note = self.update_plan(run, index, &st.span, update).await;
                self.exchange_one(run, update, &reply.text, &note);
            }
            if rest.is_empty() && updates.is_empty() {
                if let Some(problem) = problem {
                    // Calls written wrongly in text: say so, and let the model write them again.
                    run.exchange
                        .push(PromptMessage::text(PromptRole::Assistant, &reply.text));
                    run.exchange.push(PromptMessage::text(
                        PromptRole::User,
                        format!("Your tool calls could not be read: {problem}. Write them again."),
                    ));
                    continue;
                }
                let (output, _) = output_parser::parse_synthesis(&reply.text);
                break StepEnd::done(output, st.iterations);
            }
            if !rest.is_empty() && st.iterations >= limit {
                // Its results would reach no one: the step has no call left to read them.
                break StepEnd::failed(unfinished(), st.iterations, false);
            }
            st.said = if updates.is_empty() {
                reply.text
            } else {
                String::new()
            };
            st.calls = rest;
        };
        let outcome = end.output.clone().or_else(|| end.reason.clone());
        run.outcomes
            .insert(step_id.clone(), outcome.unwrap_or_default());
        run.set_status(index, end.status);
        let content = StepContent {
            step_id,
            status: end.status,
            output: end.output.clone(),
            reason: end.reason.clone(),
            iterations: end.iterations,
        };
        self.record_step(run, index, content, &st.span, st.start_ms, true)
            .await;
        Ok(StepOutcome::Ended(end))
    }

    /// One LLM call of a step; a server that refuses tools is asked again in text.
    async fn step_call(
        &self,
        run: &mut Run,
        setup: &Setup,
        index: usize,
        span: &str,
        cancel: &CancellationToken,
    ) -> Result<StageResult, Stop> {
        loop {
            let native = run.tool_calling == ToolCalling::Native;
            let system = self.step_system(run, setup, index, native)?;
            let mut prompt = vec![PromptMessage::text(PromptRole::System, system)];
            prompt.extend(history::to_prompt(&setup.history));
            prompt.extend(run.exchange.iter().cloned());
            let mut tools = Vec::new();
            if native {
                tools.extend(setup.schemas.iter().cloned());
                tools.push(update_plan_schema());
            }
            let call = Call {
                provider: &setup.provider,
                generation: &setup.config.generation,
                prompt,
                stage: CallStage::Execution,
                phase: Phase::Execution,
                parent_span: span,
                tools,
                checkpoint: None,
            };
            let reply = self.llm_call(run, call, cancel).await;
            match &reply.ending {
                Ending::Completed => return Ok(reply),
                Ending::Cancelled => return Err(Stop::run(stopped(), Phase::Execution, None)),
                Ending::Failed(e) if native && refuses_tools(e) => {
                    tracing::info!(
                        "the model refuses native tools ({}); asking in text",
                        e.message
                    );
                    run.tool_calling = ToolCalling::Text;
                }
                Ending::Failed(e) => {
                    return Err(Stop::run(stage_error(e), Phase::Execution, None));
                }
            }
        }
    }

    fn step_system(
        &self,
        run: &Run,
        setup: &Setup,
        index: usize,
        native: bool,
    ) -> Result<String, Stop> {
        let render = |name: &str, values: HashMap<&str, String>| {
            self.prompts
                .render(name, &values)
                .map_err(|e| Stop::Agent(super::AgentError::InvalidInput(e.to_string())))
        };
        let step = render(
            "pes_step",
            HashMap::from([
                ("plan", plan_text(run, OUTPUT_IN_PLAN)),
                ("number", (index + 1).to_string()),
                ("step", run.steps[index].description.clone()),
            ]),
        )?;
        let mut system = format!("{}\n\n{step}", setup.system);
        if !native {
            let mut schemas = setup.schemas.clone();
            schemas.push(update_plan_schema());
            let tools = render(
                "pes_step_text_tools",
                HashMap::from([("tools", tools_list(&schemas))]),
            )?;
            system.push_str("\n\n");
            system.push_str(&tools);
        }
        Ok(system)
    }

    /// Run the step's pending calls one by one, each as its policy says: `auto` runs,
    /// `deny` is refused, `ask` runs or is refused as the user decided — or, with no
    /// decision yet, the run waits (`None`). Results are kept as TOOL messages and, once
    /// the batch is over, in the exchange. `complete` is false when the run's tool-call
    /// limit left calls unrun.
    async fn run_calls(
        &self,
        run: &mut Run,
        setup: &Setup,
        step_id: &str,
        st: &mut StepState,
        state: &Arc<Mutex<AgentState>>,
        cancel: &CancellationToken,
    ) -> Result<Option<(Vec<ToolResult>, bool)>, Stop> {
        if !st.announced {
            self.announce(run, step_id, &st.span, &st.calls).await;
            st.announced = true;
        }
        let exec = ExecutionContext {
            thread_id: run.thread_id.clone(),
            trace_id: run.trace_id.clone(),
            state: Arc::clone(state),
            step_id: Some(step_id.to_owned()),
        };
        while let Some(call) = st.calls.first().cloned() {
            if run.out_of_tool_calls().is_some() {
                break;
            }
            let Some(verdict) = self.verdict(run, setup, &call).await else {
                return Ok(None);
            };
            let result = match verdict {
                Verdict::Run(call) => {
                    let ran = tokio::select! {
                        biased;
                        () = cancel.cancelled() => return Err(Stop::run(stopped(), Phase::Execution, None)),
                        ran = self.tools.execute_tools(std::slice::from_ref(&call), &setup.config.enabled_tools, &exec, Some(&st.span)) => ran,
                    };
                    run.tool_calls += 1;
                    let result = ran.into_iter().next().expect("one result per call");
                    st.ran.push((call, result.clone()));
                    result
                }
                Verdict::Refuse(error) => {
                    let result = self.tools.refuse(&call, error, &exec, Some(&st.span)).await;
                    st.ran.push((call, result.clone()));
                    result
                }
            };
            run.tool_failed |= result.status == ToolStatus::Error;
            let (ran_call, _) = st.ran.last().expect("just pushed");
            let message = tool_message(run, ran_call, &result);
            self.conversation
                .add_messages(&run.thread_id, std::slice::from_ref(&message))
                .await?;
            st.calls.remove(0);
        }
        let complete = st.calls.is_empty();
        st.calls.clear();
        st.announced = false;
        let (calls, results): (Vec<_>, Vec<_>) = std::mem::take(&mut st.ran).into_iter().unzip();
        if !calls.is_empty() {
            self.exchange_results(run, &calls, &st.said, &results);
        }
        run.results.extend(results.iter().cloned());
        Ok(Some((results, complete)))
    }

    /// TOOL_CALL observations for a batch of calls the step is about to make.
    async fn announce(&self, run: &Run, step_id: &str, span: &str, calls: &[ParsedToolCall]) {
        let root = run.root_span.clone();
        let point = run.span(Phase::Execution, span, Some(&root), clock::now_ms(), false);
        let batch = calls
            .iter()
            .map(|c| {
                let mut o = run.obs(
                    ObservationType::ToolCall,
                    json!({ "callId": c.call_id, "toolName": c.tool_name, "arguments": c.arguments, "stepId": step_id }),
                    point.clone(),
                );
                o.title = Some(format!("Tool call: {}", c.tool_name));
                o
            })
            .collect();
        if let Err(e) = self.observations.record_all(batch).await {
            tracing::warn!("could not record the tool calls: {e}");
        }
    }

    /// The calls and their results, as later calls of the run read them: natively an
    /// assistant message with the calls and one result each; in text, what the model
    /// wrote and a message with the results.
    fn exchange_results(
        &self,
        run: &mut Run,
        calls: &[ParsedToolCall],
        said: &str,
        results: &[ToolResult],
    ) {
        if run.tool_calling == ToolCalling::Native {
            let mut assistant = PromptMessage::text(PromptRole::Assistant, said);
            assistant.tool_calls = calls.iter().map(request).collect();
            run.exchange.push(assistant);
            for r in results {
                let content = match r.status {
                    ToolStatus::Success => output_text(&r.output),
                    ToolStatus::Error => {
                        format!("Error: {}", r.error.as_deref().unwrap_or("the tool failed"))
                    }
                };
                let mut message = PromptMessage::text(PromptRole::ToolResult, content);
                message.tool_call_id = Some(r.call_id.clone());
                message.name = Some(r.tool_name.clone());
                run.exchange.push(message);
            }
        } else {
            let written = if said.trim().is_empty() {
                json!({ "toolCalls": calls }).to_string()
            } else {
                said.to_owned()
            };
            run.exchange
                .push(PromptMessage::text(PromptRole::Assistant, written));
            run.exchange.push(PromptMessage::text(
                PromptRole::User,
                format!("Results of your tool calls:\n{}", results_text(results)),
            ));
        }
    }

    /// One call answered by the agent itself (`update_plan`).
    fn exchange_one(&self, run: &mut Run, call: &ParsedToolCall, said: &str, answer: &str) {
        let result = ToolResult {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            status: ToolStatus::Success,
            output: Value::String(answer.to_owned()),
            error: None,
            metadata: Value::Null,
        };
        self.exchange_results(run, std::slice::from_ref(call), said, &[result]);
    }

    /// Replace the steps after step `index` with those an `update_plan` call gives;
    /// recorded as a PLAN_UPDATE. Returns what the model is told.
    async fn update_plan(
        &self,
        run: &mut Run,
        index: usize,
        span: &str,
        call: &ParsedToolCall,
    ) -> String {
        let (new_steps, problems) = output_parser::read_steps(call.arguments.get("steps"));
        if call.arguments.get("steps").is_none() || !problems.is_empty() {
            let why = if problems.is_empty() {
                "`steps` is missing".to_owned()
            } else {
                problems.join("; ")
            };
            return format!("Error: the plan was not changed: {why}");
        }
        let mut after: Vec<PlanStep> = run.steps[..=index].to_vec();
        for step in new_steps {
            let taken = after.iter().any(|s| s.id == step.id);
            let id = if taken { fresh_id(&after) } else { step.id };
            after.push(PlanStep {
                id,
                status: StepStatus::Pending,
                ..step
            });
        }
        let mut update = PlanUpdateContent::between(&run.steps, after);
        update.step_id = Some(run.steps[index].id.clone());
        update.reason = call
            .arguments
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        run.steps.clone_from(&update.steps);
        let root = run.root_span.clone();
        let mut o = run.obs(
            ObservationType::PlanUpdate,
            json!(update),
            run.span(Phase::Execution, span, Some(&root), clock::now_ms(), false),
        );
        o.title = Some("Plan changed".into());
        self.record(o).await;
        let rest: Vec<String> = run.steps[index + 1..]
            .iter()
            .map(|s| s.description.clone())
            .collect();
        format!(
            "The plan is updated. After this step: {}",
            if rest.is_empty() {
                "nothing".to_owned()
            } else {
                rest.join("; ")
            }
        )
    }

    /// A STEP observation in the step's own span (`end`: the one that closes it).
    async fn record_step(
        &self,
        run: &Run,
        index: usize,
        content: StepContent,
        span: &str,
        start_ms: i64,
        end: bool,
    ) {
        let title = format!("Step {}: {}", index + 1, content.status.label());
        let root = run.root_span.clone();
        let mut o = run.obs(
            ObservationType::Step,
            json!(content),
            run.span(Phase::Execution, span, Some(&root), start_ms, end),
        );
        o.title = Some(title);
        self.record(o).await;
    }

    /// A step that changes status without running (skipped, or done by the answer).
    pub(super) async fn record_point(
        &self,
        run: &mut Run,
        index: usize,
        status: StepStatus,
        output: Option<String>,
        reason: Option<String>,
    ) {
        let step_id = run.set_status(index, status).id.clone();
        if let Some(outcome) = reason.clone().or_else(|| output.clone()) {
            run.outcomes.insert(step_id.clone(), outcome);
        }
        let content = StepContent {
            step_id,
            status,
            output,
            reason,
            iterations: 0,
        };
        let mut o = run.obs(
            ObservationType::Step,
            json!(content),
            run.span(
                Phase::Execution,
                &run.root_span,
                None,
                run.run_start_ms,
                false,
            ),
        );
        o.title = Some(format!("Step {}: {}", index + 1, status.label()));
        self.record(o).await;
    }
}

/// The calls a reply asks for: native ones, else those written as JSON in its text
/// (with the problem when they were written wrongly).
fn asked_calls(reply: &StageResult) -> (Vec<ParsedToolCall>, Option<String>) {
    if !reply.tool_calls.is_empty() {
        return (reply.tool_calls.clone(), None);
    }
    match parse_calls_in(&reply.text) {
        None => (Vec::new(), None),
        Some(Ok(calls)) => (calls, None),
        Some(Err(problem)) => (Vec::new(), Some(problem)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_of_tools_are_recognised_in_each_servers_words() {
        let error = |message: &str| StreamError {
            class: art_types::ErrorClass::Permanent,
            code: art_types::FailureCode::LlmProviderError,
            message: message.into(),
        };
        assert!(refuses_tools(&error(
            "registry.ollama.ai/library/gemma:2b does not support tools"
        )));
        assert!(refuses_tools(&error(
            "Function calling is not supported by this model"
        )));
        assert!(!refuses_tools(&error("model not found")));
    }

    #[test]
    fn long_outputs_are_clipped_on_a_character_boundary() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hi", 5), "hi");
    }
}
