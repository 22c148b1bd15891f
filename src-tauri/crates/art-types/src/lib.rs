//! The data model of ART Workbench that crosses the IPC boundary.
//!
//! Everything here is plain serde data: no I/O, no async runtime, no platform code, so
//! the crate compiles for the desktop backend and for the wasm32 UI alike. The backend
//! (`art`, `art-workbench`) produces these values; the UI (`art-ui`) renders them.
//!
//! May not depend on tokio, reqwest, rusqlite, Tauri or anything else that does I/O.

pub mod agent;
pub mod app;
pub mod approval;
pub mod attachment;
pub mod commands;
pub mod error;
pub mod events;
pub mod export;
pub mod failure;
pub mod knowledge;
pub mod library;
pub mod mcp;
pub mod message;
pub mod models;
pub mod observation;
pub mod prompt;
pub mod provider;
pub mod push;
pub mod record;
pub mod settings;
pub mod stream;
pub mod thread;
pub mod tool;
pub mod usage;

pub use agent::{
    AgentFinalResponse, AgentOptions, AgentProps, ExecutionMetadata, Replay, ReplayMode, RunError,
    RunStatus, TokenUsage, Unmatched,
};
pub use app::{AppInfo, KeychainStatus, ReadyEvent};
pub use attachment::{Attachment, AttachmentKind, AttachmentProblem};
pub use error::{ErrorCode, IpcError};
pub use events::{RunFinished, StreamBatch};
pub use export::{ExportDone, ExportProgress, ExportRequest, ExportScope};
pub use failure::FailureCode;
pub use library::SavedPrompt;
pub use message::{BranchPoint, ConversationMessage, MessageRole, MessageStatus};
pub use models::{
    Capability, LocalModel, ModelsProblem, PullPhase, PullProgress, PullState, PullStep,
};
pub use observation::{Observation, ObservationType, Phase, SpanInfo};
pub use prompt::{
    FunctionCall, Prompt, PromptImage, PromptMessage, PromptRole, ReasoningBlock, ToolCallRequest,
};
pub use provider::{
    AdapterKind, DoctorFinding, DoctorReport, KeyState, ModelInfo, ProviderInfo, Severity,
};
pub use settings::{AppSettings, ModelChoice, ModelSpec};
pub use stream::{ErrorClass, LlmMetadata, StreamError, StreamEvent, StreamEventKind, TokenType};
pub use thread::{
    AgentState, ForkOrigin, GenerationParams, ProviderConfig, RunLimits, SearchResult,
    StateSavingStrategy, ThreadConfig, ThreadContext, ThreadSummary, ToolCalling,
};
pub use tool::{ParsedToolCall, ToolExample, ToolResult, ToolSchema, ToolStatus};
