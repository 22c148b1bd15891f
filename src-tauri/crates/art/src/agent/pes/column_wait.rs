//! A comparison's column whose tool call asks first waits for the user where it is: the
//! SUSPENSION is recorded (the app shows the call's approval card in the column), the
//! column keeps its place beside the others under the comparison's claim, and the
//! user's decision ([`PesAgent::decide_column`]) lets it go on — recorded like any
//! decision. Stopped while it waits, the column ends as stopped. The wait is not stored:
//! a column does not outlive its process (no run at work does), whereas a lone run that
//! waits is stored and ends (`approvals.rs`), since it holds nothing else up.

use std::collections::HashMap;
use std::sync::Mutex;

use art_types::approval::{ApprovalDecision, SuspensionContent, ToolPolicy};
use art_types::{ParsedToolCall, Phase};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::PesAgent;
use super::approvals::Verdict;
use super::calls::stopped;
use super::run::{Run, Stop};
use super::steps::StepState;
use crate::agent::AgentError;

/// The comparisons' columns that wait for a decision, by their run's trace id.
#[derive(Default)]
pub struct ColumnWaits {
    waiting: Mutex<HashMap<String, Waiter>>,
}

/// A column's waiting call and where its decision goes.
struct Waiter {
    thread_id: String,
    call: SuspensionContent,
    decide: oneshot::Sender<ApprovalDecision>,
}

impl ColumnWaits {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        // A panic elsewhere cannot leave the map half-changed: each change is one call.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The call column `trace_id` of thread `thread_id` waits on, if it waits.
    pub fn call(&self, thread_id: &str, trace_id: &str) -> Option<SuspensionContent> {
        self.waiting()
            .get(trace_id)
            .filter(|w| w.thread_id == thread_id)
            .map(|w| w.call.clone())
    }
}

impl PesAgent {
    /// Column `run` waits for the user's decision on `call` (its policy asks first): the
    /// decision's verdict, recorded; stopped while it waits, the column ends. The wait
    /// is left out of the column's time.
    pub(super) async fn wait_in_column(
        &self,
        run: &mut Run,
        st: &StepState,
        call: &ParsedToolCall,
        cancel: &CancellationToken,
    ) -> Result<Verdict, Stop> {
        let (content, record) = self.suspension(run, st, call);
        let (decide, decided) = oneshot::channel();
        self.column_waits.waiting().insert(
            run.trace_id.clone(),
            Waiter {
                thread_id: run.thread_id.clone(),
                call: content,
                decide,
            },
        );
        self.record(record).await;
        run.pause();
        let decision = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            decision = decided => decision.ok(),
        };
        run.go_on();
        let Some(decision) = decision else {
            self.column_waits.waiting().remove(&run.trace_id);
            return Err(Stop::run(stopped(), Phase::Execution, None));
        };
        if let ApprovalDecision::Approve { always: true, .. } = &decision {
            // "Always allow in this thread": the thread's policy for the tool, from now.
            let mut config = self.state.load_thread_context(&run.thread_id).await?.config;
            config
                .tool_policies
                .insert(call.tool_name.clone(), ToolPolicy::Auto);
            self.state
                .set_thread_config(&run.thread_id, &config)
                .await?;
        }
        Ok(self.decided(run, call, decision).await)
    }

    /// The user's decision on the call column `trace_id` of thread `thread_id` waits on:
    /// edited arguments that do not fit the tool's schema are refused (the column keeps
    /// waiting); else the column goes on with it.
    pub fn decide_column(
        &self,
        thread_id: &str,
        trace_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), AgentError> {
        let nothing = || AgentError::NothingWaiting(thread_id.to_owned());
        let call = self
            .column_waits
            .call(thread_id, trace_id)
            .ok_or_else(nothing)?;
        if let ApprovalDecision::Approve {
            arguments: Some(arguments),
            ..
        } = &decision
        {
            self.tools
                .registry()
                .check_arguments(&call.tool_name, arguments)
                .map_err(|e| AgentError::InvalidInput(e.message))?;
        }
        let waiter = self
            .column_waits
            .waiting()
            .remove(trace_id)
            .ok_or_else(nothing)?;
        // (Stopped between the two: its run has ended, and the decision has no taker.)
        waiter.decide.send(decision).map_err(|_| nothing())
    }
}
