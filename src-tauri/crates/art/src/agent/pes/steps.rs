//! Phase 2, the steps: each step that acts is a loop — the model gets the plan with what
//! earlier steps found and the thread's tools, calls tools (`tool_calls.rs`), sees their
//! results (`exchange.rs`), and either calls more or ends the step with its output. Tools
//! are offered natively, or described in the prompt with calls written as JSON (a
//! thread's choice, and the fallback when a server refuses tools). `update_plan`
//! (`replan.rs`) lets a step change the steps after it. Limits (LLM calls per step, tool
//! calls, tokens and time per run) end the step at work as failed; the answer is still
//! written from what was done.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use art_types::record::{StepContent, StepStatus};
use art_types::{
    AgentState, ObservationType, ParsedToolCall, Phase, PromptMessage, PromptRole, ToolCalling,
    ToolResult, ToolStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::super::history;
use super::super::streaming::{Ending, StageResult};
use super::calls::{Call, stage_error, stopped};
use super::exchange::{asked_calls, plan_text, refuses_tools, results_text};
use super::replan::{UPDATE_PLAN, update_plan_schema};
use super::run::{Run, Stop, ms_since};
use super::{PesAgent, Setup, tools_list};
use crate::clock;
use crate::reasoning::output_parser;
use crate::reasoning::provider::CallStage;

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

    /// A step that named `tools` and called none: skipped, with what the model said
    /// instead (the answer reads it), never ticked as done.
    fn not_done(tools: &[String], said: String, iterations: u32) -> Self {
        Self {
            status: StepStatus::Skipped,
            output: Some(said).filter(|s| !s.is_empty()),
            reason: Some(format!(
                "the model called no tool (the step named {})",
                tools.join(", ")
            )),
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
    /// The current batch's reply stopped at the output limit: a call whose arguments
    /// are not a whole object was cut off, not written wrongly.
    pub cut_off: bool,
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
            cut_off: false,
        }
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
        // Whether the step called anything: one that named tools and called none did
        // not do its work, whatever its reply says.
        let mut called = resumed || !st.calls.is_empty();
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
                let (named, optional) = (&run.steps[index].tools, run.steps[index].tools_optional);
                if !called && !named.is_empty() && !optional {
                    break StepEnd::not_done(named, output, st.iterations);
                }
                break StepEnd::done(output, st.iterations);
            }
            called |= !rest.is_empty();
            if !rest.is_empty() && st.iterations >= limit {
                // Its results would reach no one: the step has no call left to read them.
                break StepEnd::failed(unfinished(), st.iterations, false);
            }
            st.said = if updates.is_empty() {
                reply.text
            } else {
                String::new()
            };
            st.cut_off = reply.metadata.ran_out_of_tokens();
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
            prompt.extend(history::to_prompt(&setup.history, &setup.attached));
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
                schema: None,
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
