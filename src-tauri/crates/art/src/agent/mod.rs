//! Agent cores: the [`AgentCore`] trait and the Plan-Execute-Synthesize agent
//! ([`pes::PesAgent`]).

pub(crate) mod attached;
pub mod claims;
pub(crate) mod history;
pub mod pes;
mod streaming;

use art_types::approval::{ApprovalDecision, SuspensionContent};
use art_types::mcp::elicit::ElicitAnswer;
use art_types::mcp::question::QuestionContent;

/// The call a waiting run waits on, and the run.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingCall {
    /// The run (its trace id).
    pub trace_id: String,
    /// The call, as its SUSPENSION observation shows it.
    pub call: SuspensionContent,
    /// The server's question the call waits on, when it waits for an answer rather
    /// than a decision (its process ended while the question waited).
    pub asked: Option<QuestionContent>,
}

impl WaitingCall {
    /// Why nothing else may happen in the thread meanwhile.
    pub fn why(&self) -> AgentError {
        match &self.asked {
            Some(asked) => AgentError::AwaitingAnswer(asked.question.server.clone()),
            None => AgentError::AwaitingApproval(self.call.tool_name.clone()),
        }
    }
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
    /// The thread's run waits on an MCP server's question (named by the server).
    #[error(
        "this thread's run waits for your answer to MCP server `{0}`'s question: answer it \
         (or stop the run) first"
    )]
    AwaitingAnswer(String),
    /// The process closed while the run waited on an MCP server's question: the run is
    /// kept as it was, and goes on when the question is answered (in the app, or `art
    /// answer`).
    #[error(
        "closing while the run waits on an MCP server's question: it goes on when the \
         question is answered (in the app, or with `art answer`)"
    )]
    Closing,
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

    /// Go on with the run of `thread_id` kept on MCP server question `question_id` when
    /// its process ended, `answer` given to it: its call runs again, and the server's
    /// same question gets the answer.
    async fn answer_held(
        &self,
        thread_id: &str,
        question_id: &str,
        answer: ElicitAnswer,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let _ = (question_id, answer, cancel);
        Err(AgentError::NothingWaiting(thread_id.to_owned()))
    }

    /// The process is closing: a run waiting on a server's question stays kept on it
    /// while the servers stop (see [`AgentError::Closing`]).
    fn close(&self) {}

    /// End the suspended run of `thread_id` as stopped; `None` if none waits.
    async fn stop_waiting(
        &self,
        thread_id: &str,
    ) -> Result<Option<AgentFinalResponse>, AgentError> {
        let _ = thread_id;
        Ok(None)
    }

    /// The user's decision on the call a comparison's column (`trace_id`, of thread
    /// `thread_id`) waits on; the column goes on (see [`pes::PesAgent::decide_column`]).
    /// Default: nothing waits.
    fn decide_column(
        &self,
        thread_id: &str,
        trace_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), AgentError> {
        let _ = (trace_id, decision);
        Err(AgentError::NothingWaiting(thread_id.to_owned()))
    }

    /// Ask `props`'s question of several models at once, each column a run on its own
    /// branch (see [`pes::PesAgent::compare`]): each column's end. Default: refused.
    async fn compare(
        &self,
        props: AgentProps,
        columns: Vec<pes::Column>,
        ended: pes::ColumnEnded<'_>,
    ) -> Result<Vec<Result<AgentFinalResponse, AgentError>>, AgentError> {
        let _ = (props, columns, ended);
        Err(AgentError::InvalidInput(
            "this agent does not compare models".into(),
        ))
    }
}
