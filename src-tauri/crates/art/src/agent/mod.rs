//! Agent cores: the [`AgentCore`] trait and the Plan-Execute-Synthesize agent
//! ([`pes::PesAgent`]).

mod history;
pub mod pes;
mod streaming;

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
}
