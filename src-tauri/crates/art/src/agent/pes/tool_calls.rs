//! A step's tool calls, one by one, each as its policy says (run, refuse, or wait for
//! the user), kept as TOOL messages and, once the batch is over, in the run's exchange.

use std::sync::Arc;

use art_types::record::ToolCallContent;
use art_types::{AgentState, ObservationType, ParsedToolCall, Phase, ToolResult, ToolStatus};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::approvals::{Verdict, Waiting};
use super::calls::{stopped, tool_message};
use super::held::Hold;
use super::run::{Run, Stop};
use super::steps::StepState;
use super::{PesAgent, Setup};
use crate::clock;
use crate::tools::{CallHold, ExecutionContext, ToolError};

impl PesAgent {
    /// Run the step's pending calls one by one, each as its policy says: `auto` runs,
    /// `deny` is refused, `ask` runs or is refused as the user decided — or, with no
    /// decision yet, the run waits (`None`). Results are kept as TOOL messages and, once
    /// the batch is over, in the exchange. `complete` is false when the run's tool-call
    /// limit left calls unrun.
    pub(super) async fn run_calls(
        &self,
        run: &mut Run,
        setup: &Setup,
        step_id: &str,
        st: &mut StepState,
        state: &Arc<Mutex<AgentState>>,
        cancel: &CancellationToken,
    ) -> Result<Option<(Vec<ToolResult>, bool)>, Stop> {
        if !st.announced {
            let phase = Phase::Execution;
            self.announce(run, phase, Some(step_id), &st.span, &st.calls)
                .await;
            st.announced = true;
        }
        let exec = execution_context(run, setup, Arc::clone(state), Some(step_id));
        while let Some(call) = st.calls.first().cloned() {
            if run.out_of_tool_calls().is_some() {
                break;
            }
            let verdict = if st.cut_off && !call.arguments.is_object() {
                // Nothing to run or to ask about: the arguments were never finished.
                Verdict::Refuse(ToolError::new(
                    "TOOL_CALL_CUT_OFF",
                    "the call was cut off: the model reached its output limit (max tokens) \
                     while writing the arguments; raise Max tokens in the thread's settings",
                ))
            } else {
                match self.verdict(run, setup, &call).await {
                    Some(verdict) => verdict,
                    // A comparison's column waits where it is, beside the others.
                    None if run.comparison.is_some() => {
                        self.wait_in_column(run, st, &call, cancel).await?
                    }
                    None => return Ok(None),
                }
            };
            let (call, result) = match verdict {
                Verdict::Run(call) => {
                    let mut exec = exec.clone();
                    exec.hold = self.hold(run, setup, st, &call);
                    let ran = tokio::select! {
                        biased;
                        () = cancel.cancelled() => return Err(Stop::run(stopped(), Phase::Execution, None)),
                        ran = self.tools.execute_tools(std::slice::from_ref(&call), &setup.config.enabled_tools, &exec, Some(&st.span)) => ran,
                    };
                    // Cut by the process closing while a server's question waited: the
                    // run stays kept as the call began, and records nothing more.
                    if exec.hold.is_some() && self.waiting_runs.closing() {
                        return Err(Stop::Agent(crate::agent::AgentError::Closing));
                    }
                    run.tool_calls += 1;
                    match ran.into_iter().next() {
                        Some(result) => (call, result),
                        None => {
                            let lost = ToolError::new("TOOL_FAILED", "the tool gave no result");
                            let result =
                                self.tools.refuse(&call, lost, &exec, Some(&st.span)).await;
                            (call, result)
                        }
                    }
                }
                Verdict::Refuse(error) => {
                    let result = self.tools.refuse(&call, error, &exec, Some(&st.span)).await;
                    (call, result)
                }
                Verdict::Recorded(result) => {
                    run.tool_calls += 1;
                    self.tools
                        .answered(&call, &result, &exec, Some(&st.span))
                        .await;
                    (call, result)
                }
            };
            run.tool_failed |= result.status == ToolStatus::Error;
            let message = tool_message(run, &call, &result);
            self.conversation
                .add_messages(&run.thread_id, std::slice::from_ref(&message))
                .await?;
            run.tip = Some(message.message_id.clone());
            st.ran.push((call, result));
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

    /// The run's hold on `call` (an MCP tool's: its server may ask something): the run
    /// as it is now, `call` first in its step, with the answer given before to its
    /// question, if the run went on after its process ended under it.
    fn hold(
        &self,
        run: &mut Run,
        setup: &Setup,
        st: &StepState,
        call: &ParsedToolCall,
    ) -> Option<Arc<dyn CallHold>> {
        let before = run.held.take_if(|h| h.call_id == call.call_id);
        let entry = self.tools.registry().entry(&call.tool_name)?;
        entry.tool.origin()?;
        let question = run.question.clone()?;
        let mut step = st.clone();
        if let Some(first) = step.calls.first_mut() {
            first.clone_from(call);
        }
        let call_shown = self.suspension_of(run, &step, call);
        let mut kept = run.clone();
        kept.pause();
        Some(Arc::new(Hold {
            runs: Arc::clone(&self.waiting_runs),
            observations: Arc::clone(&self.observations),
            call: call_shown,
            waiting: Waiting {
                run: kept,
                step: Some(step),
                calls: Vec::new(),
                intent: setup.intent.clone(),
                options: setup.options.clone(),
                question,
                asked: None,
            },
            before,
        }))
    }

    /// TOOL_CALL observations for a batch of calls about to be made in `phase` (by step
    /// `step_id`, when a step makes them).
    pub(super) async fn announce(
        &self,
        run: &Run,
        phase: Phase,
        step_id: Option<&str>,
        span: &str,
        calls: &[ParsedToolCall],
    ) {
        let root = run.root_span.clone();
        let point = run.span(phase, span, Some(&root), clock::now_ms(), false);
        let batch = calls
            .iter()
            .map(|c| {
                let mut o = run.obs(
                    ObservationType::ToolCall,
                    json!(ToolCallContent {
                        call_id: c.call_id.clone(),
                        tool_name: c.tool_name.clone(),
                        arguments: c.arguments.clone(),
                        step_id: step_id.map(str::to_owned),
                    }),
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
}

/// What a tool call of `run` runs with: the thread's state and collections, and the step
/// making it, if any.
pub(super) fn execution_context(
    run: &Run,
    setup: &Setup,
    state: Arc<Mutex<AgentState>>,
    step_id: Option<&str>,
) -> ExecutionContext {
    ExecutionContext {
        thread_id: run.thread_id.clone(),
        trace_id: run.trace_id.clone(),
        state,
        step_id: step_id.map(str::to_owned),
        save_asked: Arc::clone(&run.state_save_asked),
        knowledge: setup.config.knowledge.clone(),
        ..ExecutionContext::default()
    }
}
