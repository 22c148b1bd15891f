//! Asking before a tool runs. Each call's policy (the thread's own for the tool, else
//! the tool's default: built-ins run, an MCP tool follows its server's) decides: run,
//! refuse, or wait for the user. A run that waits ends with status `suspended`: what it
//! needs to go on (the run's bookkeeping, the step at work, the options it was started
//! with) is stored, so a decision continues it in this process or after a restart.
//! Every decision — the user's or a policy's refusal — is an APPROVAL observation.

use std::sync::Arc;

use art_types::approval::{
    ApprovalContent, ApprovalDecision, Decider, PLAN_REVIEW, SuspensionContent, ToolPolicy,
};
use art_types::{
    AgentFinalResponse, AgentOptions, AgentProps, ConversationMessage, MessageRole, MessageStatus,
    ObservationType, ParsedToolCall, Phase, RunStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::{AgentError, WaitingCall};
use super::calls::stopped;
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
}

/// A run that waits for a decision, as stored (one per thread).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Waiting {
    run: Run,
    /// The step whose call waits; none while the plan waits for review.
    #[serde(default)]
    step: Option<StepState>,
    /// The planner's calls of the first step (a plan in review).
    #[serde(default)]
    calls: Vec<ParsedToolCall>,
    intent: Option<String>,
    options: AgentOptions,
    question: ConversationMessage,
}

/// The stored runs that wait.
pub struct WaitingRuns {
    storage: Arc<dyn StorageAdapter>,
}

impl WaitingRuns {
    /// Waiting runs kept in `storage`.
    pub fn new(storage: Arc<dyn StorageAdapter>) -> Self {
        Self { storage }
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

    async fn put(&self, waiting: &Waiting) -> Result<(), AgentError> {
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
        match self.policy_of(setup, &call.tool_name) {
            ToolPolicy::Auto => Some(Verdict::Run(call.clone())),
            ToolPolicy::Deny => {
                let mut content = approval(call, Decider::Policy);
                content.reason = Some("this thread's policy for the tool is deny".into());
                self.record_approval(run, None, &content).await;
                Some(Verdict::Refuse(ToolError::new(
                    "TOOL_DENIED",
                    format!(
                        "`{}` may not run in this thread (its policy is deny)",
                        call.tool_name
                    ),
                )))
            }
            ToolPolicy::Ask => None,
        }
    }

    /// What the user's decision on `call` lets happen, recorded.
    async fn decided(
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
        let content = self.suspension_of(run, &step, &call);
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
    fn suspension_of(
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
        }
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
            },
        };
        Some(WaitingCall { trace_id, call })
    }

    /// The call the thread's waiting run waits on.
    pub(super) async fn waiting_call(
        &self,
        thread_id: &str,
    ) -> Result<Option<WaitingCall>, AgentError> {
        let waiting = self.waiting_runs.get(thread_id).await?;
        Ok(waiting.as_ref().and_then(|w| self.waiting_of(w)))
    }

    /// The thread's waiting run and what it waits on, `decision` checked against it:
    /// edited arguments must fit the tool's schema (an edited plan must be a plan).
    async fn checked(
        &self,
        thread_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<(Waiting, WaitingCall), AgentError> {
        let nothing = || AgentError::NothingWaiting(thread_id.to_owned());
        let waiting = self
            .waiting_runs
            .get(thread_id)
            .await?
            .ok_or_else(nothing)?;
        let call = self.waiting_of(&waiting).ok_or_else(nothing)?;
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
        self.checked(thread_id, decision)
            .await
            .map(|(_, call)| call)
    }

    /// Go on with the thread's waiting run, `decision` taken on its call.
    pub(super) async fn resume_waiting(
        &self,
        thread_id: &str,
        decision: ApprovalDecision,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let (waiting, _) = self.checked(thread_id, &decision).await?;
        let call = waiting.step.as_ref().and_then(|s| s.calls.first().cloned());
        let claim = self.claims.claim(thread_id, &waiting.run.trace_id).await?;
        let Waiting {
            mut run,
            step,
            calls,
            intent,
            options,
            question,
        } = match self.waiting_runs.take(thread_id).await {
            Ok(waiting) => waiting,
            Err(e) => {
                claim.release().await;
                return Err(e);
            }
        };
        let context = self.state.load_thread_context(thread_id).await?;
        let mut config = context.config;
        if let (ApprovalDecision::Approve { always: true, .. }, Some(call)) = (&decision, &call) {
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
        let outcome = match self.setup(&props, config, title).await {
            Ok(mut setup) => {
                // History as it was when the run began: without what this run added.
                let trace = run.trace_id.clone();
                setup.history.retain(|m| {
                    m.message_id == question.message_id || m.trace_id() != Some(trace.as_str())
                });
                run.call_ids
                    .extend(super::super::history::call_ids(&setup.history));
                super::search_first::told_found(&run, &mut setup);
                let start = match (step, call) {
                    (Some(step), Some(call)) => {
                        run.decisions.insert(call.call_id, decision);
                        Ok(Start::Resumed(step))
                    }
                    (Some(step), None) => Ok(Start::Resumed(step)),
                    (None, _) => self.settle_review(&mut run, &setup, calls, decision).await,
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

    /// End the thread's waiting run as stopped.
    pub(super) async fn stop_waiting_run(
        &self,
        thread_id: &str,
    ) -> Result<Option<AgentFinalResponse>, AgentError> {
        let Ok(waiting) = self.waiting_runs.take(thread_id).await else {
            return Ok(None);
        };
        let mut run = waiting.run;
        run.go_on();
        let stop = Stop::run(stopped(), Phase::Execution, None);
        self.ended(&run, Err(stop)).await.map(Some)
    }
}
