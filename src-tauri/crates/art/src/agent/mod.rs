//! Agent cores: the [`AgentCore`] trait and the Plan-Execute-Synthesize agent
//! ([`pes::PesAgent`]).

pub(crate) mod attached;
pub mod claims;
pub(crate) mod history;
pub mod pes;
mod streaming;

use art_types::approval::{ApprovalDecision, SuspensionContent};

/// The call a waiting run waits on, and the run.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingCall {
    /// The run (its trace id).
    pub trace_id: String,
    /// The call, as its SUSPENSION observation shows it.
    pub call: SuspensionContent,
}
use art_types::{AgentFinalResponse, AgentProps};
pub use tokio_util::sync::CancellationToken;

use crate::context::ContextError;

/// Why a run could not even start (failures after it started are reported in the
/// [`AgentFinalResponse`] with status `error`, and recorded as observations).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The request was not acceptable.
    #[error("{0}")]
    InvalidInput(String),
    /// The thread does not exist or storage failed.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The thread's run waits for a decision on a tool call: decide, or stop it, first.
    #[error("this thread's run waits for your decision on `{0}`: approve, deny or stop it first")]
    AwaitingApproval(String),
    /// Nothing in the thread waits for a decision.
    #[error("no run of thread {0} waits for a decision")]
    NothingWaiting(String),
    /// The thread is answering already (here or in another process).
    #[error("thread {0} is answering already: stop that run or wait for its answer first")]
    Busy(String),
    /// The thread has no provider and model to run on yet.
    #[error(
        "choose a provider and a model in this thread's settings first (in the app, or with \
         `art config --thread ID --provider NAME --model MODEL`)"
    )]
    NotConfigured,
}

impl From<crate::storage::StorageError> for AgentError {
    fn from(e: crate::storage::StorageError) -> Self {
        Self::Context(e.into())
    }
}

/// Runs one user message through an agent (ART's IAgentCore).
#[async_trait::async_trait]
pub trait AgentCore: Send + Sync {
    /// Process `props`; `cancel` stops the run at its next await point.
    async fn process(
        &self,
        props: AgentProps,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError>;

    /// Whether a run may start in `thread_id` now: it exists, has a provider and a model,
    /// does not wait for a decision and is not answering (here or in another process).
    /// The app asks before it starts a run in the background; a run checks the same.
    async fn ready(&self, thread_id: &str) -> Result<(), AgentError> {
        let _ = thread_id;
        Ok(())
    }

    /// Whether nothing is at work in `thread_id`: no run waits for a decision and none
    /// is answering (here or in another process) — what moving its branch needs (a run
    /// adds to the branch it started on). [`Self::ready`] checks this too.
    async fn idle(&self, thread_id: &str) -> Result<(), AgentError> {
        let _ = thread_id;
        Ok(())
    }

    /// The call a suspended run of `thread_id` waits on, if any.
    async fn waiting(&self, thread_id: &str) -> Result<Option<WaitingCall>, AgentError> {
        let _ = thread_id;
        Ok(None)
    }

    /// What the suspended run of `thread_id` waits on, if `decision` can be taken on it
    /// (edited arguments must fit the tool's schema; an edited plan must be a plan).
    async fn check_decision(
        &self,
        thread_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<WaitingCall, AgentError> {
        let _ = decision;
        Err(AgentError::NothingWaiting(thread_id.to_owned()))
    }

    /// Go on with the suspended run of `thread_id`, `decision` taken on the call it
    /// waits on; it then runs to its end (or its next suspension).
    async fn resume(
        &self,
        thread_id: &str,
        decision: ApprovalDecision,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let _ = (decision, cancel);
        Err(AgentError::NothingWaiting(thread_id.to_owned()))
    }

    /// End the suspended run of `thread_id` as stopped; `None` if none waits.
    async fn stop_waiting(
        &self,
        thread_id: &str,
    ) -> Result<Option<AgentFinalResponse>, AgentError> {
        let _ = thread_id;
        Ok(None)
    }
}
