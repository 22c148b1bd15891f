//! Asking before a tool runs. Each call's policy (the thread's own for the tool, else
//! the tool's default: built-ins run, an MCP tool follows its server's) decides: run,
//! refuse, or wait for the user. A run that waits ends with status `suspended`: what it
//! needs to go on (the run's bookkeeping, the step at work, the options it was started
//! with) is stored, so a decision continues it in this process or after a restart.
//! Every decision — the user's or a policy's refusal — is an APPROVAL observation. A
//! run whose call waits on a server's question is stored the same way while it waits
//! (`held.rs`), and goes on with the answer.

use std::sync::Arc;

use art_types::approval::{
    ApprovalContent, ApprovalDecision, Decider, PLAN_REVIEW, SuspensionContent, ToolPolicy,
};
use art_types::mcp::elicit::{ElicitAnswer, check_answer};
use art_types::mcp::question::{AnsweredContent, QuestionContent, QuestionOutcome};
use art_types::{
    AgentFinalResponse, AgentOptions, AgentProps, ConversationMessage, MessageRole, MessageStatus,
    ObservationType, ParsedToolCall, Phase, RunStatus, ToolResult,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::{AgentError, WaitingCall};
use super::calls::stopped;
use super::held::HeldAnswer;
use super::replay::Answer;
use super::review::{edited_steps, plan_arguments};
use super::run::{Run, Stop};
use super::steps::{Start, StepState};
use super::{PesAgent, Setup};
use crate::clock;
use crate::storage::{Collection, Record, StorageAdapter, encode};
use crate::tools::ToolError;

/// What a call's policy (and the user's decision) let happen.
pub(super) enum Verdict {
    /// Run it, with these arguments.
    Run(ParsedToolCall),
    /// Do not run it; the model reads why.
    Refuse(ToolError),
    /// Do not run it: a replay's record answers it.
    Recorded(ToolResult),
}

/// A run that waits for a decision, as stored (one per thread).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Waiting {
    pub run: Run,
    /// The step whose call waits; none while the plan waits for review.
    #[serde(default)]
    pub step: Option<StepState>,
    /// The planner's calls of the first step (a plan in review).
    #[serde(default)]
    pub calls: Vec<ParsedToolCall>,
    pub intent: Option<String>,
    pub options: AgentOptions,
    pub question: ConversationMessage,
    /// The server's question the step's call waits on (the run is kept while it waits,
    /// in case its process ends): its answer runs the call again.
    #[serde(default)]
    pub asked: Option<QuestionContent>,
}

/// How a waiting run goes on.
pub(super) enum GoOn {
    /// A decision on the call (or the plan) it waits on.
    Decision(ApprovalDecision),
    /// The answer to the server's question its call waits on.
    Answer {
        question_id: String,
        answer: ElicitAnswer,
    },
}

/// The stored runs that wait.
pub struct WaitingRuns {
    storage: Arc<dyn StorageAdapter>,
    /// The process is closing ([`Self::close`]).
    closing: std::sync::atomic::AtomicBool,
}

impl WaitingRuns {
    /// Waiting runs kept in `storage`.
    pub fn new(storage: Arc<dyn StorageAdapter>) -> Self {
        Self {
            storage,
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The process is closing (the app quits, `art` was told to end): a run kept on a
    /// server's question stays kept, whatever becomes of its call as the servers stop.
    pub fn close(&self) {
        self.closing
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether [`Self::close`] was called.
    pub(super) fn closing(&self) -> bool {
        self.closing.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the thread's stored run is run `trace_id`, kept on a server's question.
    pub(super) async fn kept(&self, thread_id: &str, trace_id: &str) -> bool {
        matches!(
            self.get(thread_id).await,
            Ok(Some(w)) if w.asked.is_some() && w.run.trace_id == trace_id
        )
    }

    async fn get(&self, thread_id: &str) -> Result<Option<Waiting>, AgentError> {
        match self
            .storage
            .get(Collection::SuspendedRuns, thread_id)
            .await?
        {
            // One that cannot be read (written by a newer version) must not lock the
            // thread: it is left where it is, and the thread takes new questions.
            Some(record) => match record.decode(Collection::SuspendedRuns) {
                Ok(waiting) => Ok(Some(waiting)),
                Err(e) => {
                    tracing::warn!(thread = thread_id, "a waiting run cannot be read: {e}");
                    Ok(None)
                }
            },
            None => Ok(None),
        }
    }

    pub(super) async fn put(&self, waiting: &Waiting) -> Result<(), AgentError> {
        let record = Record {
            id: waiting.run.thread_id.clone(),
            thread_id: Some(waiting.run.thread_id.clone()),
            trace_id: Some(waiting.run.trace_id.clone()),
            kind: None,
            timestamp: clock::now_ms(),
            search_text: None,
            body: encode(waiting)?,
            parent: None,
        };
        self.storage
            .set(Collection::SuspendedRuns, vec![record])
            .await?;
        Ok(())
    }

    /// Delete the thread's stored run if it is run `trace_id` kept on a server's question
    /// (`question_id`, when given): its process goes on with it, or it ended.
    pub(super) async fn let_go(
        &self,
        thread_id: &str,
        trace_id: &str,
        question_id: Option<&str>,
    ) -> Result<(), AgentError> {
        if self.closing() {
            return Ok(());
        }
        let Some(waiting) = self.get(thread_id).await? else {
            return Ok(());
        };
        let held = waiting
            .asked
            .as_ref()
            .is_some_and(|asked| question_id.is_none_or(|id| asked.question_id == id));
        if held && waiting.run.trace_id == trace_id {
            self.storage
                .delete(Collection::SuspendedRuns, thread_id)
                .await?;
        }
        Ok(())
    }

    /// Take the thread's waiting run out: one decision resumes it once.
    async fn take(&self, thread_id: &str) -> Result<Waiting, AgentError> {
        let waiting = self
            .get(thread_id)
            .await?
            .ok_or_else(|| AgentError::NothingWaiting(thread_id.to_owned()))?;
        self.storage
            .delete(Collection::SuspendedRuns, thread_id)
            .await?;
        Ok(waiting)
    }
}

fn approval(call: &ParsedToolCall, by: Decider) -> ApprovalContent {
    ApprovalContent {
        call_id: call.call_id.clone(),
        tool_name: call.tool_name.clone(),
        approved: false,
        decided_by: by,
        proposed: call.arguments.clone(),
        arguments: None,
        always: false,
        reason: None,
    }
}

impl PesAgent {
    /// The policy for `tool` in this run's thread.
    fn policy_of(&self, setup: &Setup, tool: &str) -> ToolPolicy {
        if let Some(policy) = setup.config.tool_policies.get(tool) {
            return *policy;
        }
        self.tools
            .registry()
            .entry(tool)
            .map_or(ToolPolicy::Auto, |e| e.tool.default_policy())
    }

    pub(super) async fn record_approval(
        &self,
        run: &Run,
        span: Option<&str>,
        content: &ApprovalContent,
    ) {
        let root = run.root_span.clone();
        let span = span.unwrap_or(&root);
        let parent = (span != root).then_some(root.as_str());
        let mut o = run.obs(
            ObservationType::Approval,
            json!(content),
            run.span(Phase::Execution, span, parent, clock::now_ms(), false),
        );
        let verb = if content.approved {
            "approved"
        } else {
            "denied"
        };
        o.title = Some(format!("{}: {verb}", content.tool_name));
        self.record(o).await;
    }

    /// What happens to `call`: `None` when the run must wait for the user.
    pub(super) async fn verdict(
        &self,
        run: &mut Run,
        setup: &Setup,
        call: &ParsedToolCall,
    ) -> Option<Verdict> {
        // The call the run waited on has its decision, whatever the policy is now.
        if let Some(decision) = run.decisions.remove(&call.call_id) {
            return Some(self.decided(run, call, decision).await);
        }
        // It ran (allowed then) until its process ended under a server's question: it
        // runs again, to be given the answer.
        if run.held.as_ref().is_some_and(|h| h.call_id == call.call_id) {
            return Some(Verdict::Run(call.clone()));
        }
        let policy = self.policy_of(setup, &call.tool_name);
        if let Some(recorded) = &setup.recorded {
            match recorded.answer(call) {
                Answer::Result(result) => return Some(Verdict::Recorded(result)),
                Answer::NotRecorded(error) => return Some(Verdict::Refuse(error)),
                // Not in the record: the user decides, unless the tool may not run.
                Answer::Ask if policy != ToolPolicy::Deny => return None,
                Answer::Ask => {}
            }
        }
        match policy {
            ToolPolicy::Auto => Some(Verdict::Run(call.clone())),
            ToolPolicy::Deny => {
                let told = format!(
                    "`{}` may not run in this thread (its policy is deny)",
                    call.tool_name
                );
                let why = "this thread's policy for the tool is deny";
                Some(self.refused(run, call, why, told).await)
            }
            ToolPolicy::Ask if run.comparison.is_some() && !run.column_asks => {
                let told = format!(
                    "`{}` asks before it runs, and no one can be asked in this comparison: \
                     answer without it",
                    call.tool_name
                );
                let why = "no one to ask in this comparison";
                Some(self.refused(run, call, why, told).await)
            }
            ToolPolicy::Ask => None,
        }
    }

    /// `call` refused without asking: recorded as an approval the policy decided (`why`),
    /// the model told `told`.
    async fn refused(&self, run: &Run, call: &ParsedToolCall, why: &str, told: String) -> Verdict {
        let mut content = approval(call, Decider::Policy);
        content.reason = Some(why.into());
        self.record_approval(run, None, &content).await;
        Verdict::Refuse(ToolError::new("TOOL_DENIED", told))
    }

    /// What the user's decision on `call` lets happen, recorded.
    pub(super) async fn decided(
        &self,
        run: &Run,
        call: &ParsedToolCall,
        decision: ApprovalDecision,
    ) -> Verdict {
        let mut content = approval(call, Decider::User);
        let verdict = match decision {
            ApprovalDecision::Approve { arguments, always } => {
                let mut approved = call.clone();
                if let Some(arguments) = arguments {
                    approved.arguments = arguments;
                }
                content.approved = true;
                content.always = always;
                content.arguments = Some(approved.arguments.clone());
                Verdict::Run(approved)
            }
            ApprovalDecision::Deny { reason } => {
                let why = reason
                    .clone()
                    .filter(|r| !r.trim().is_empty())
                    .map_or_else(String::new, |r| format!(": {r}"));
                content.reason = reason;
                Verdict::Refuse(ToolError::new(
                    "TOOL_DENIED",
                    format!("the user did not let `{}` run{why}", call.tool_name),
                ))
            }
        };
        self.record_approval(run, None, &content).await;
        verdict
    }

    /// The run waits: store what it needs to go on, record the SUSPENSION, and end it
    /// with status `suspended` (no answer yet).
    pub(super) async fn suspend(
        &self,
        run: &mut Run,
        intent: Option<String>,
        options: AgentOptions,
        step: StepState,
    ) -> Result<AgentFinalResponse, Stop> {
        let broken = |what: &str| Stop::Agent(AgentError::InvalidInput(what.to_owned()));
        let call = step
            .calls
            .first()
            .cloned()
            .ok_or_else(|| broken("a step waits with no call to decide on"))?;
        let (_, o) = self.suspension(run, &step, &call);
        self.wait(run, Some(step), Vec::new(), intent, options, o)
            .await
    }

    /// Store what the run needs to go on, record `why` (SUSPENSION, PLAN_REVIEW), and end
    /// the run with status `suspended` (no answer yet).
    pub(super) async fn wait(
        &self,
        run: &mut Run,
        step: Option<StepState>,
        calls: Vec<ParsedToolCall>,
        intent: Option<String>,
        options: AgentOptions,
        why: crate::observation::NewObservation,
    ) -> Result<AgentFinalResponse, Stop> {
        run.pause();
        let question = run.question.clone().ok_or_else(|| {
            Stop::Agent(AgentError::InvalidInput(
                "a run waits with no question stored".into(),
            ))
        })?;
        let waiting = Waiting {
            run: run.clone(),
            step,
            calls,
            intent,
            options,
            question,
            asked: None,
        };
        self.waiting_runs.put(&waiting).await?;
        self.record(why).await;
        Ok(AgentFinalResponse {
            response: ConversationMessage {
                message_id: clock::new_id(),
                thread_id: run.thread_id.clone(),
                role: MessageRole::Ai,
                content: String::new(),
                timestamp: clock::now_ms(),
                status: MessageStatus::Streaming,
                metadata: json!({ "traceId": run.trace_id }),
                parent_id: None,
                attachments: Vec::new(),
            },
            metadata: run.metadata(RunStatus::Suspended, None),
        })
    }

    /// A call that waits, as the user sees it: its tool, its server, its arguments and
    /// the schema an edit must fit.
    pub(super) fn suspension_of(
        &self,
        run: &Run,
        step: &StepState,
        call: &ParsedToolCall,
    ) -> SuspensionContent {
        let entry = self.tools.registry().entry(&call.tool_name);
        SuspensionContent {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            arguments: call.arguments.clone(),
            input_schema: entry
                .as_ref()
                .map(|e| e.tool.schema().input_schema.clone())
                .unwrap_or_default(),
            server: entry.and_then(|e| e.tool.origin()).map(|o| o.server),
            step_id: run.steps.get(step.index).map(|s| s.id.clone()),
            question_id: None,
        }
    }

    /// The SUSPENSION of `run` whose `call` of `step` waits for approval: what waits,
    /// and its record.
    pub(super) fn suspension(
        &self,
        run: &Run,
        step: &StepState,
        call: &ParsedToolCall,
    ) -> (SuspensionContent, crate::observation::NewObservation) {
        let content = self.suspension_of(run, step, call);
        let root = run.root_span.clone();
        let mut o = run.obs(
            ObservationType::Suspension,
            json!(content),
            run.span(
                Phase::Execution,
                &step.span,
                Some(&root),
                clock::now_ms(),
                false,
            ),
        );
        o.title = Some(format!("Waiting for approval: {}", call.tool_name));
        (content, o)
    }

    /// What `waiting` waits on: a step's call, or its plan (under the name `plan`).
    fn waiting_of(&self, waiting: &Waiting) -> Option<WaitingCall> {
        let trace_id = waiting.run.trace_id.clone();
        let call = match &waiting.step {
            Some(step) => self.suspension_of(&waiting.run, step, step.calls.first()?),
            None => SuspensionContent {
                call_id: PLAN_REVIEW.into(),
                tool_name: PLAN_REVIEW.into(),
                arguments: plan_arguments(&waiting.run.steps),
                input_schema: json!({ "type": "object", "properties": { "steps": { "type": "array", "items": { "type": "string" } } }, "required": ["steps"] }),
                server: None,
                step_id: None,
                question_id: None,
            },
        };
        let mut call = call;
        call.question_id = waiting.asked.as_ref().map(|a| a.question_id.clone());
        Some(WaitingCall {
            trace_id,
            call,
            asked: waiting.asked.clone(),
        })
    }

    /// The call the thread's waiting run waits on.
    pub(super) async fn waiting_call(
        &self,
        thread_id: &str,
    ) -> Result<Option<WaitingCall>, AgentError> {
        let waiting = self.waiting_runs.get(thread_id).await?;
        Ok(waiting.as_ref().and_then(|w| self.waiting_of(w)))
    }

    /// The thread's waiting run and what it waits on, `go_on` checked against it:
    /// edited arguments must fit the tool's schema (an edited plan must be a plan); an
    /// answer must be to the question the run waits on, and fit it. A run kept on a
    /// question whose process still lives goes on there.
    async fn checked(
        &self,
        thread_id: &str,
        go_on: &GoOn,
    ) -> Result<(Waiting, WaitingCall), AgentError> {
        let nothing = || AgentError::NothingWaiting(thread_id.to_owned());
        let waiting = self
            .waiting_runs
            .get(thread_id)
            .await?
            .ok_or_else(nothing)?;
        let call = self.waiting_of(&waiting).ok_or_else(nothing)?;
        if let Some(asked) = &waiting.asked {
            if self.claims.busy(thread_id).await? {
                return Err(AgentError::Busy(thread_id.to_owned()));
            }
            let GoOn::Answer {
                question_id,
                answer,
            } = go_on
            else {
                return Err(AgentError::AwaitingAnswer(asked.question.server.clone()));
            };
            if *question_id != asked.question_id {
                return Err(nothing());
            }
            if let ElicitAnswer::Accept(values) = answer {
                check_answer(&asked.question.fields, values).map_err(AgentError::InvalidInput)?;
            }
            return Ok((waiting, call));
        }
        let GoOn::Decision(decision) = go_on else {
            return Err(nothing());
        };
        if let ApprovalDecision::Approve {
            arguments: Some(arguments),
            ..
        } = decision
        {
            if waiting.step.is_some() {
                self.tools
                    .registry()
                    .check_arguments(&call.call.tool_name, arguments)
                    .map_err(|e| AgentError::InvalidInput(e.message))?;
            } else {
                edited_steps(&waiting.run.steps, arguments, &[])
                    .map_err(AgentError::InvalidInput)?;
            }
        }
        Ok((waiting, call))
    }

    /// What the thread's run waits on, if `decision` can be taken on it.
    pub(super) async fn decidable(
        &self,
        thread_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<WaitingCall, AgentError> {
        self.checked(thread_id, &GoOn::Decision(decision.clone()))
            .await
            .map(|(_, call)| call)
    }

    /// Go on with the thread's waiting run, a decision taken on its call or the answer to
    /// its call's question given.
    pub(super) async fn resume_waiting(
        &self,
        thread_id: &str,
        go_on: GoOn,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let (waiting, _) = self.checked(thread_id, &go_on).await?;
        let call = waiting.step.as_ref().and_then(|s| s.calls.first().cloned());
        let claim = self.claims.claim(thread_id, &waiting.run.trace_id).await?;
        let Waiting {
            mut run,
            step,
            calls,
            intent,
            options,
            question,
            asked,
        } = match self.waiting_runs.take(thread_id).await {
            Ok(waiting) => waiting,
            Err(e) => {
                claim.release().await;
                return Err(e);
            }
        };
        let context = self.state.load_thread_context(thread_id).await?;
        let mut config = context.config;
        if let (GoOn::Decision(ApprovalDecision::Approve { always: true, .. }), Some(call)) =
            (&go_on, &call)
        {
            config
                .tool_policies
                .insert(call.tool_name.clone(), ToolPolicy::Auto);
            self.state.set_thread_config(thread_id, &config).await?;
        }
        run.go_on();
        let props = AgentProps {
            query: question.content.clone(),
            thread_id: thread_id.to_owned(),
            trace_id: Some(run.trace_id.clone()),
            options: options.clone(),
            attachments: Vec::new(),
        };
        let title = self.conversation.thread(thread_id).await?.title;
        // The history of the run's own branch (the thread may show another by now).
        let tip = run.tip.clone();
        let outcome = match self.setup(&props, config, title, tip.as_deref()).await {
            Ok(mut setup) => {
                // History as it was when the run began: without what this run added.
                let trace = run.trace_id.clone();
                setup.history.retain(|m| {
                    m.message_id == question.message_id || m.trace_id() != Some(trace.as_str())
                });
                run.call_ids
                    .extend(super::super::history::call_ids(&setup.history));
                super::search_first::told_found(&run, &mut setup);
                let start = match (step, call, go_on) {
                    (Some(step), Some(call), GoOn::Decision(decision)) => {
                        run.decisions.insert(call.call_id, decision);
                        Ok(Start::Resumed(step))
                    }
                    (Some(step), Some(call), GoOn::Answer { answer, .. }) => {
                        if let Some(asked) = asked {
                            self.answered_after(&run, &asked, &answer).await;
                            run.held = Some(HeldAnswer {
                                call_id: call.call_id,
                                asked,
                                answer,
                            });
                        }
                        Ok(Start::Resumed(step))
                    }
                    (Some(step), None, _) => Ok(Start::Resumed(step)),
                    (None, _, GoOn::Decision(decision)) => {
                        self.settle_review(&mut run, &setup, calls, decision).await
                    }
                    (None, _, GoOn::Answer { .. }) => Err(Stop::Agent(AgentError::NothingWaiting(
                        thread_id.to_owned(),
                    ))),
                };
                match start {
                    Ok(start) => {
                        let state = context.state;
                        self.after_plan(&mut run, setup, intent, options, start, state, &cancel)
                            .await
                    }
                    Err(stop) => Err(stop),
                }
            }
            Err(stop) => Err(stop),
        };
        let ended = self.ended(&run, outcome).await;
        claim.release().await;
        ended
    }

    /// The question a run's call waited on when its process ended has its answer: as
    /// its ELICITATION_ANSWER says (the call runs again, and its server asks again).
    async fn answered_after(&self, run: &Run, asked: &QuestionContent, answer: &ElicitAnswer) {
        let content = AnsweredContent {
            question_id: asked.question_id.clone(),
            call_id: asked.call_id.clone(),
            outcome: QuestionOutcome::Answered {
                answer: answer.clone(),
            },
        };
        let mut o = crate::observation::NewObservation::new(
            &run.thread_id,
            &run.trace_id,
            ObservationType::ElicitationAnswer,
            json!(content),
        );
        o.metadata = json!({ "server": asked.question.server, "afterRestart": true });
        self.record(o).await;
    }

    /// End the thread's waiting run as stopped (a run kept on a question whose process
    /// lives is that process's to stop).
    pub(super) async fn stop_waiting_run(
        &self,
        thread_id: &str,
    ) -> Result<Option<AgentFinalResponse>, AgentError> {
        if let Some(waiting) = self.waiting_runs.get(thread_id).await?
            && waiting.asked.is_some()
            && self.claims.busy(thread_id).await?
        {
            return Ok(None);
        }
        let Ok(waiting) = self.waiting_runs.take(thread_id).await else {
            return Ok(None);
        };
        let mut run = waiting.run;
        run.go_on();
        let stop = Stop::run(stopped(), Phase::Execution, None);
        self.ended(&run, Err(stop)).await.map(Some)
    }
}
