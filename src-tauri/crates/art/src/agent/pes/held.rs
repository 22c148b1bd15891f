//! A run whose MCP tool call waits on a server's question, kept beyond its process. While
//! the question waits the run is stored as waiting on it, as a run that waits for an
//! approval is; should the app or `art` end meanwhile — closed, killed, crashed — the
//! thread still shows the question, and answering it (in the app, or `art answer`) goes
//! on with the run here: the call runs again, its server (started again) asks again, and
//! the same question gets the answer without asking. A run that ends in its process lets
//! its hold go, whatever the question became.

use std::sync::Arc;

use art_types::approval::SuspensionContent;
use art_types::mcp::elicit::{ElicitAnswer, ElicitQuestion};
use art_types::mcp::question::QuestionContent;
use art_types::{ObservationType, Phase};
use serde::{Deserialize, Serialize};

use super::approvals::{Waiting, WaitingRuns};
use crate::clock;
use crate::observation::ObservationManager;
use crate::tools::CallHold;

/// The answer to the question a run's call waited on when its process ended, for the
/// call's next run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct HeldAnswer {
    /// The call.
    pub call_id: String,
    /// The question as it was asked.
    pub asked: QuestionContent,
    /// The user's answer.
    pub answer: ElicitAnswer,
}

/// A run's hold on one tool call: the run as it is when the call starts, stored if the
/// call's server asks something.
pub(super) struct Hold {
    pub runs: Arc<WaitingRuns>,
    pub observations: Arc<ObservationManager>,
    pub waiting: Waiting,
    /// The call as a SUSPENSION shows it.
    pub call: SuspensionContent,
    /// An answer given before to this call's question.
    pub before: Option<HeldAnswer>,
}

#[async_trait::async_trait]
impl CallHold for Hold {
    fn answered_before(&self, question: &ElicitQuestion) -> Option<ElicitAnswer> {
        self.before
            .as_ref()
            .filter(|held| held.asked.question == *question)
            .map(|held| held.answer.clone())
    }

    async fn hold(&self, asked: &QuestionContent) {
        let mut waiting = self.waiting.clone();
        waiting.asked = Some(asked.clone());
        if let Err(e) = self.runs.put(&waiting).await {
            tracing::warn!(
                thread = %waiting.run.thread_id,
                "a run waiting on a server's question could not be kept: {e}"
            );
            return;
        }
        // The run waits (for the app after a restart too): its answer ends the wait.
        let run = &waiting.run;
        let mut call = self.call.clone();
        call.question_id = Some(asked.question_id.clone());
        let span = waiting.step.as_ref().map(|s| s.span.clone());
        let root = run.root_span.clone();
        let span = run.span(
            Phase::Execution,
            span.as_deref().unwrap_or(&root),
            Some(&root),
            clock::now_ms(),
            false,
        );
        let mut o = run.obs(ObservationType::Suspension, serde_json::json!(call), span);
        o.title = Some(format!(
            "Waiting for your answer to {}'s question",
            asked.question.server
        ));
        if let Err(e) = self.observations.record(o).await {
            tracing::warn!(thread = %run.thread_id, "could not record the wait: {e}");
        }
    }

    fn kept(&self) -> bool {
        self.runs.closing()
    }

    async fn release(&self, asked: &QuestionContent) {
        let run = &self.waiting.run;
        if let Err(e) = self
            .runs
            .let_go(&run.thread_id, &run.trace_id, Some(&asked.question_id))
            .await
        {
            tracing::warn!(thread = %run.thread_id, "a run's hold could not be let go: {e}");
        }
    }
}
