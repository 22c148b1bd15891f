//! The IPC commands the page may call: one struct per command holding its arguments, and
//! [`Command`] giving its name and what it returns. One definition for every side: the
//! backend registers a handler per type of [`for_each_command!`] (a missing one does not
//! compile), declares [`NAMES`] in its app manifest and checks its capability file
//! against them; the page calls `ipc::call(&SendMessage { … })` and gets the typed output.
//!
//! Arguments travel as a JSON object in camelCase (`threadId`). A key a command does not
//! take is refused (`deny_unknown_fields`): Tauri alone would ignore it, so a misspelt
//! optional argument would silently do nothing.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

mod attachments;
mod catalog;
mod compare;
mod defaults;
mod knowledge;
mod models;
mod push;
mod signin;

pub use crate::mcp::question::AnswerQuestion;
pub use attachments::{AttachBytes, AttachmentContent, PickAttachments, Picked, ReadAttachment};
pub use catalog::{
    AttachMcpResource, ListMcpPrompts, ListMcpResourceTemplates, ListMcpResources, UseMcpPrompt,
};
pub use compare::{CompareModels, Comparison, ComparisonColumn, DiffRuns, ReplayRun, ShowRun};
pub use defaults::{ChooseModel, GetAppSettings, SetNewThreadDefaults};
pub use knowledge::{
    AddAttachedToKnowledge, AddToCollection, CancelIndexing, CreateCollection, DeleteCollection,
    IndexingStatus, ListCollections, ListDocuments, ReadPassages, ReindexCollection,
    RemoveDocument, RenameCollection, SearchKnowledge, SetCollectionEmbedder, StopSyncing,
    SyncFolders,
};
pub use models::{
    CancelPull, DeleteModel, DismissPulls, ListLocalModels, ModelPulls, OllamaAddress, PullModel,
    UnloadModel,
};
pub use push::{SetTracePush, TracePushStatus};
pub use signin::{CancelMcpSignIn, SignInMcpServer, SignOutMcpServer};

use crate::knowledge::{
    Added, AddedAttached, Collection, Document, IndexProgress, Passages, Searched,
};
use crate::mcp::catalog::{FilledPrompt, McpPrompt, McpResource, McpResourceTemplate};
use crate::mcp::{McpImportReport, McpServerConfig, McpServerStatus, McpToolInfo};
use crate::models::{LocalModel, PullState};
use crate::push::PushStatus;
use crate::usage::{ModelPrice, UsageBy, UsageReport, UsageTotals};
use crate::{
    AppInfo as AppInfoOutput, AppSettings, Attachment, BranchPoint, ConversationMessage,
    DoctorReport, ExportDone, ExportRequest, KeyState, ModelInfo, Observation, ObservationType,
    ProviderInfo, SavedPrompt, SearchResult, ThreadConfig, ThreadSummary, ToolSchema,
};

/// A command of the app: its arguments are the struct's fields.
pub trait Command: Serialize + DeserializeOwned + Send + 'static {
    /// The name the backend registers and the page invokes (`snake_case`).
    const NAME: &'static str;
    /// What a successful call returns.
    type Output: Serialize + DeserializeOwned + Send + 'static;
}

/// Calls the macro `$callback!` with the path of every command type, in one list: the
/// backend's handler registration, [`NAMES`] and the tests are made from it.
#[macro_export]
macro_rules! for_each_command {
    ($callback:ident) => {
        $callback! {
            $crate::commands::AppInfo,
            $crate::commands::UiReady,
            $crate::commands::ListThreads,
            $crate::commands::CreateThread,
            $crate::commands::RenameThread,
            $crate::commands::DeleteThread,
            $crate::commands::ListMessages,
            $crate::commands::ListBranches,
            $crate::commands::SwitchBranch,
            $crate::commands::ForkThread,
            $crate::commands::Search,
            $crate::commands::HighlightCode,
            $crate::commands::SendMessage,
            $crate::commands::Regenerate,
            $crate::commands::EditAndResend,
            $crate::commands::CancelRun,
            $crate::commands::DecideApproval,
            $crate::commands::StopWaiting,
            $crate::commands::ListObservations,
            $crate::commands::GetThreadConfig,
            $crate::commands::SetThreadConfig,
            $crate::commands::ListTools,
            $crate::commands::ListProviders,
            $crate::commands::ListModels,
            $crate::commands::OllamaDoctor,
            $crate::commands::SetApiKey,
            $crate::commands::DeleteApiKey,
            $crate::commands::ListPrompts,
            $crate::commands::SavePrompt,
            $crate::commands::DeletePrompt,
            $crate::commands::ExportTraces,
            $crate::commands::ListMcpServers,
            $crate::commands::SaveMcpServer,
            $crate::commands::RemoveMcpServer,
            $crate::commands::RestartMcpServer,
            $crate::commands::ListMcpTools,
            $crate::commands::ImportMcpServers,
            $crate::commands::SignInMcpServer,
            $crate::commands::CancelMcpSignIn,
            $crate::commands::SignOutMcpServer,
            $crate::commands::AnswerQuestion,
            $crate::commands::ListMcpPrompts,
            $crate::commands::UseMcpPrompt,
            $crate::commands::ListMcpResources,
            $crate::commands::ListMcpResourceTemplates,
            $crate::commands::AttachMcpResource,
            $crate::commands::GetUsage,
            $crate::commands::GetThreadUsage,
            $crate::commands::ListPrices,
            $crate::commands::SavePrice,
            $crate::commands::DeletePrice,
            $crate::commands::AttachBytes,
            $crate::commands::ReadAttachment,
            $crate::commands::PickAttachments,
            $crate::commands::ListCollections,
            $crate::commands::CreateCollection,
            $crate::commands::RenameCollection,
            $crate::commands::SetCollectionEmbedder,
            $crate::commands::DeleteCollection,
            $crate::commands::ListDocuments,
            $crate::commands::AddToCollection,
            $crate::commands::RemoveDocument,
            $crate::commands::ReindexCollection,
            $crate::commands::IndexingStatus,
            $crate::commands::CancelIndexing,
            $crate::commands::SearchKnowledge,
            $crate::commands::StopSyncing,
            $crate::commands::SyncFolders,
            $crate::commands::ReadPassages,
            $crate::commands::AddAttachedToKnowledge,
            $crate::commands::ListLocalModels,
            $crate::commands::PullModel,
            $crate::commands::ModelPulls,
            $crate::commands::CancelPull,
            $crate::commands::DismissPulls,
            $crate::commands::DeleteModel,
            $crate::commands::UnloadModel,
            $crate::commands::OllamaAddress,
            $crate::commands::GetAppSettings,
            $crate::commands::SetNewThreadDefaults,
            $crate::commands::ChooseModel,
            $crate::commands::SetTracePush,
            $crate::commands::TracePushStatus,
            $crate::commands::CompareModels,
            $crate::commands::ShowRun,
            $crate::commands::ReplayRun,
            $crate::commands::DiffRuns,
        }
    };
}

macro_rules! names {
    ($($command:ty),* $(,)?) => {
        /// Every command's name, as the backend's app manifest declares them (each needs
        /// an `allow-<name>` permission in the capability file).
        pub const NAMES: &[&str] = &[$(<$command as Command>::NAME),*];
    };
}
for_each_command!(names);

/// Implements [`Command`] for each `Type = "name" -> Output`, and lists the names so a
/// test can check that [`for_each_command!`] (which the handlers come from) leaves none
/// out: a type there without an entry here does not compile, the other way round the
/// test fails.
macro_rules! commands {
    ($($command:ident = $name:literal -> $output:ty;)*) => {
        $(impl Command for $command {
            const NAME: &'static str = $name;
            type Output = $output;
        })*
        #[cfg(test)]
        const DECLARED: &[&str] = &[$($name),*];
    };
}

commands! {
    AppInfo = "app_info" -> AppInfoOutput;
    UiReady = "ui_ready" -> ();
    ListThreads = "list_threads" -> Vec<ThreadSummary>;
    CreateThread = "create_thread" -> ThreadSummary;
    RenameThread = "rename_thread" -> ThreadSummary;
    DeleteThread = "delete_thread" -> ();
    ListMessages = "list_messages" -> Vec<ConversationMessage>;
    ListBranches = "list_branches" -> Vec<BranchPoint>;
    SwitchBranch = "switch_branch" -> ThreadSummary;
    ForkThread = "fork_thread" -> ThreadSummary;
    Search = "search" -> Vec<SearchResult>;
    HighlightCode = "highlight_code" -> Vec<Option<String>>;
    SendMessage = "send_message" -> String;
    Regenerate = "regenerate" -> String;
    EditAndResend = "edit_and_resend" -> String;
    CancelRun = "cancel_run" -> ();
    DecideApproval = "decide_approval" -> String;
    StopWaiting = "stop_waiting" -> ();
    ListObservations = "list_observations" -> Vec<Observation>;
    GetThreadConfig = "get_thread_config" -> ThreadConfig;
    SetThreadConfig = "set_thread_config" -> ThreadConfig;
    ListTools = "list_tools" -> Vec<ToolSchema>;
    ListProviders = "list_providers" -> Vec<ProviderInfo>;
    ListModels = "list_models" -> Vec<ModelInfo>;
    OllamaDoctor = "ollama_doctor" -> DoctorReport;
    SetApiKey = "set_api_key" -> KeyState;
    DeleteApiKey = "delete_api_key" -> KeyState;
    ListPrompts = "list_prompts" -> Vec<SavedPrompt>;
    SavePrompt = "save_prompt" -> SavedPrompt;
    DeletePrompt = "delete_prompt" -> ();
    ExportTraces = "export_traces" -> Option<ExportDone>;
    ListMcpServers = "list_mcp_servers" -> Vec<McpServerStatus>;
    SaveMcpServer = "save_mcp_server" -> McpServerStatus;
    RemoveMcpServer = "remove_mcp_server" -> ();
    RestartMcpServer = "restart_mcp_server" -> McpServerStatus;
    ListMcpTools = "list_mcp_tools" -> Vec<McpToolInfo>;
    ImportMcpServers = "import_mcp_servers" -> McpImportReport;
    SignInMcpServer = "sign_in_mcp_server" -> McpServerStatus;
    CancelMcpSignIn = "cancel_mcp_sign_in" -> ();
    SignOutMcpServer = "sign_out_mcp_server" -> McpServerStatus;
    AnswerQuestion = "answer_question" -> ();
    ListMcpPrompts = "list_mcp_prompts" -> Vec<McpPrompt>;
    UseMcpPrompt = "use_mcp_prompt" -> FilledPrompt;
    ListMcpResources = "list_mcp_resources" -> Vec<McpResource>;
    ListMcpResourceTemplates = "list_mcp_resource_templates" -> Vec<McpResourceTemplate>;
    AttachMcpResource = "attach_mcp_resource" -> Picked;
    GetUsage = "get_usage" -> UsageReport;
    GetThreadUsage = "get_thread_usage" -> UsageTotals;
    ListPrices = "list_prices" -> Vec<ModelPrice>;
    SavePrice = "save_price" -> ModelPrice;
    DeletePrice = "delete_price" -> ();
    AttachBytes = "attach_bytes" -> Attachment;
    ReadAttachment = "read_attachment" -> AttachmentContent;
    PickAttachments = "pick_attachments" -> Picked;
    ListCollections = "list_collections" -> Vec<Collection>;
    CreateCollection = "create_collection" -> Collection;
    RenameCollection = "rename_collection" -> Collection;
    SetCollectionEmbedder = "set_collection_embedder" -> Collection;
    DeleteCollection = "delete_collection" -> ();
    ListDocuments = "list_documents" -> Vec<Document>;
    AddToCollection = "add_to_collection" -> Added;
    RemoveDocument = "remove_document" -> ();
    ReindexCollection = "reindex_collection" -> ();
    IndexingStatus = "indexing_status" -> IndexProgress;
    CancelIndexing = "cancel_indexing" -> ();
    SearchKnowledge = "search_knowledge" -> Searched;
    StopSyncing = "stop_syncing" -> ();
    SyncFolders = "sync_folders" -> ();
    ReadPassages = "read_passages" -> Passages;
    AddAttachedToKnowledge = "add_attached_to_knowledge" -> AddedAttached;
    ListLocalModels = "list_local_models" -> Vec<LocalModel>;
    PullModel = "pull_model" -> Vec<PullState>;
    ModelPulls = "model_pulls" -> Vec<PullState>;
    CancelPull = "cancel_pull" -> Vec<PullState>;
    DismissPulls = "dismiss_pulls" -> Vec<PullState>;
    DeleteModel = "delete_model" -> u64;
    UnloadModel = "unload_model" -> ();
    OllamaAddress = "ollama_address" -> String;
    GetAppSettings = "get_app_settings" -> AppSettings;
    SetNewThreadDefaults = "set_new_thread_defaults" -> AppSettings;
    ChooseModel = "choose_model" -> ThreadConfig;
    SetTracePush = "set_trace_push" -> PushStatus;
    TracePushStatus = "trace_push_status" -> PushStatus;
    CompareModels = "compare_models" -> Comparison;
    ShowRun = "show_run" -> ThreadSummary;
    ReplayRun = "replay_run" -> String;
    DiffRuns = "diff_runs" -> crate::record::diff::RunDiff;
}

/// Version, data directory, database path and keychain reachability (the About panel).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppInfo {}

/// The page has subscribed to events: the backend answers with the `art://ready` event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiReady {}

/// Threads, most recently active first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListThreads {}

/// Start a thread; returns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateThread {
    /// Its title; "New thread" until renamed when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Rename a thread; returns it renamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameThread {
    /// The thread.
    pub thread_id: String,
    /// The new title (not blank).
    pub title: String,
}

/// Delete a thread with its messages, observations, settings and state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteThread {
    /// The thread.
    pub thread_id: String,
}

/// A page of the messages of a thread's active branch, oldest first: the newest
/// `limit`, or those before `before` when paging back. An unknown thread is an error,
/// not an empty page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMessages {
    /// The thread.
    pub thread_id: String,
    /// Messages in the page, 1 to 500 (100 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Only messages older than this (unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
}

/// Where a thread's history branches (edit & resend, regenerate): every place with two
/// or more alternatives, on any branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListBranches {
    /// The thread.
    pub thread_id: String,
}

/// Make the thread's active branch go through a message: unchanged when it already
/// does, else the branch below the message that was added to last. Refused while the
/// thread answers. Returns the thread with its new head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SwitchBranch {
    /// The thread.
    pub thread_id: String,
    /// A message of it, on any branch.
    pub message_id: String,
}

/// "Fork from here": a new thread with the history up to and including a message (its
/// branch only) and the same settings; it records where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkThread {
    /// The thread forked.
    pub thread_id: String,
    /// The message the new thread's history ends with.
    pub message_id: String,
}

/// Full-text search over messages and tool calls, best matches first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Search {
    /// What to look for (at most 500 characters).
    pub query: String,
}

/// Syntax-highlight the code blocks of a finished answer, done by the backend so that the
/// grammars and their regex engine stay out of the page. Returns one entry per block, in
/// order: its code as escaped HTML with `hl-` scope classes (which the stylesheet colours),
/// or `None` when its language is unknown, it is larger than [`HighlightCode::MAX_BYTES`]
/// or there are more than [`HighlightCode::MAX_BLOCKS`] blocks before it (those are shown
/// plain).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HighlightCode {
    /// The blocks, in the answer's order.
    pub blocks: Vec<CodeBlock>,
}

impl HighlightCode {
    /// Largest block that is highlighted.
    pub const MAX_BYTES: usize = 64 * 1024;
    /// Most blocks highlighted in one call.
    pub const MAX_BLOCKS: usize = 256;
}

/// One fenced code block of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CodeBlock {
    /// The fence's language tag (`rust`, `py`, `sh`, …), empty when it has none.
    pub language: String,
    /// The code, as written.
    pub code: String,
}

/// Start a run of the thread's agent on `text`; returns its trace id at once, progress
/// arrives as events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendMessage {
    /// The thread.
    pub thread_id: String,
    /// The question (at most 200,000 characters; blank only with attachments).
    pub text: String,
    /// Files for the question, attached first ([`PickAttachments`], [`AttachBytes`],
    /// a drop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

/// Answer the active branch's last question again, as a new branch beside it (the old
/// answer stays, one switch away). Returns the new run's trace id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Regenerate {
    /// The thread.
    pub thread_id: String,
}

/// Edit a question and send it again: a new branch starts beside it with `text` (the
/// question and what followed it stay, one switch away). Returns the new run's trace id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditAndResend {
    /// The thread.
    pub thread_id: String,
    /// The user message edited.
    pub message_id: String,
    /// Its new text.
    pub text: String,
}

/// Stop a run: it ends at its next step, keeping what was streamed (marked stopped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelRun {
    /// The run.
    pub trace_id: String,
}

/// Decide on the tool call a thread's run waits on; the run goes on in the background
/// (its events as any run's). Returns the run's trace id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecideApproval {
    /// The thread whose run waits.
    pub thread_id: String,
    /// Approve (maybe with edited arguments, maybe always) or deny (maybe with a reason).
    pub decision: crate::approval::ApprovalDecision,
    /// The run that waits, when it is a comparison's column (several of a thread's
    /// columns may wait at once); the thread's waiting run otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// Stop a run that waits for a decision: it ends as stopped, and the thread takes new
/// questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopWaiting {
    /// The thread whose run waits.
    pub thread_id: String,
}

/// Observations of a thread, oldest first: a view of a long thread asks for the runs of
/// the messages it shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListObservations {
    /// The thread.
    pub thread_id: String,
    /// Only these runs (at most 500); every run when absent or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_ids: Option<Vec<String>>,
    /// Only these types; every type when absent or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<ObservationType>>,
}

/// A thread's settings (the defaults when never saved).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetThreadConfig {
    /// The thread.
    pub thread_id: String,
}

/// Save a thread's settings after checking every field; the error lists each problem
/// (`details.problems[]` with `field` and `message`) and nothing is saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetThreadConfig {
    /// The thread.
    pub thread_id: String,
    /// The settings, whole.
    pub config: ThreadConfig,
}

/// Every tool with its schema.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListTools {}

/// The providers, with their default base URL and whether a key is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListProviders {}

/// The models a provider offers (a real call to the provider).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListModels {
    /// The provider's name.
    pub provider: String,
    /// Overrides the provider's default base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// What is wrong with the local Ollama, and how to fix it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OllamaDoctor {
    /// Overrides the Ollama provider's default base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// A model to check for (pulled? loaded?).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Store a provider's API key in the OS keychain (and nowhere else); returns the key's
/// new state, never the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetApiKey {
    /// The provider's name.
    pub provider: String,
    /// The key: 1 to 4096 characters without spaces or line breaks.
    pub key: String,
}

/// Remove a provider's API key from the keychain; returns the key's new state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteApiKey {
    /// The provider's name.
    pub provider: String,
}

/// Every library prompt, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListPrompts {}

/// Create a library prompt (no `prompt_id`) or edit one; returns it as stored. Problems
/// come back with the field they concern (`name`, `content` or `promptId`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavePrompt {
    /// The prompt edited; absent to create one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// Its name, unique in the library.
    pub name: String,
    /// The system prompt's text.
    pub content: String,
}

/// Delete a library prompt; threads that picked it fall back to the app's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeletePrompt {
    /// The prompt.
    pub prompt_id: String,
}

/// Export traces to a file the user chooses (progress as events); `None` when they
/// cancelled the save dialog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportTraces {
    /// What to export, and how.
    pub request: ExportRequest,
}

/// Every MCP server with its state (starting, ready with N tools, failed and why).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListMcpServers {}

/// Add or replace an MCP server, then start it (or stop it, when disabled); returns its
/// state. Problems come back with the field they concern. Header values go to the OS
/// keychain; a listed header without a new value keeps its stored one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveMcpServer {
    /// The server.
    pub config: McpServerConfig,
    /// New values of its HTTP headers, by header name (secrets: never sent back).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub header_values: std::collections::BTreeMap<String, String>,
    /// The name it had, when renamed (the old one is removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_name: Option<String>,
    /// A new client secret for signing in (with `config.oauth.client_id`; a secret:
    /// kept in the OS keychain, never sent back). Without one, a secret already kept
    /// stays while `config.oauth.client_secret` says there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// Stop an MCP server and remove it (with its header values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveMcpServer {
    /// The server's name.
    pub name: String,
}

/// Start an MCP server again (the Tools page's "Test"): the handshake and the tool
/// list anew; returns its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestartMcpServer {
    /// The server's name.
    pub name: String,
}

/// The tools an MCP server offers, each with its schema (and why it is unusable, if so).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMcpTools {
    /// The server's name.
    pub name: String,
}

/// Add the servers of a pasted `{"mcpServers": {…}}` JSON (started when enabled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportMcpServers {
    /// The JSON text.
    pub json: String,
}

/// The usage ledger grouped one way (the Usage page, `art usage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetUsage {
    /// Per model, provider, thread or day.
    #[serde(default)]
    pub by: UsageBy,
    /// Only runs from this day on (`YYYY-MM-DD`, local time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

/// What one thread's runs used (its header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetThreadUsage {
    /// The thread.
    pub thread_id: String,
}

/// The prices the user entered, by provider and model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListPrices {}

/// Enter (or change) a model's price; a price out of range is refused per field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavePrice {
    /// The price.
    pub price: ModelPrice,
}

/// Forget a model's price (its runs' cost becomes unknown again unless reported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeletePrice {
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// `(type name, command name)` of every command, from the one list.
    macro_rules! pairs {
        ($($command:ty),* $(,)?) => {
            [$((stringify!($command), <$command as Command>::NAME)),*]
        };
    }

    fn snake(camel: &str) -> String {
        let mut out = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        }
        out
    }

    #[test]
    fn each_command_is_named_after_its_type_and_names_are_unique() {
        let pairs = for_each_command!(pairs);
        for (path, name) in pairs {
            let ty = path.rsplit("::").next().unwrap().trim();
            assert_eq!(snake(ty), name, "{path}");
        }
        let unique: BTreeSet<&str> = NAMES.iter().copied().collect();
        assert_eq!(unique.len(), NAMES.len());
        assert_eq!(NAMES.len(), pairs.len());
    }

    /// A command given a name and an output but left out of `for_each_command!` would
    /// compile and answer "not found" at run time: the two lists must hold the same names.
    #[test]
    fn every_declared_command_is_in_the_one_list_handlers_come_from() {
        let listed: BTreeSet<&str> = NAMES.iter().copied().collect();
        let declared: BTreeSet<&str> = DECLARED.iter().copied().collect();
        assert_eq!(declared.len(), DECLARED.len(), "a name declared twice");
        let missing: Vec<_> = declared.difference(&listed).collect();
        assert!(missing.is_empty(), "not in for_each_command!: {missing:?}");
        assert_eq!(listed, declared);
    }

    #[test]
    fn arguments_are_camel_case_and_unknown_keys_are_refused() {
        let send = SendMessage {
            thread_id: "t".into(),
            text: "hi".into(),
            attachments: Vec::new(),
        };
        let json = serde_json::to_value(&send).unwrap();
        assert_eq!(json, serde_json::json!({ "threadId": "t", "text": "hi" }));
        assert_eq!(serde_json::from_value::<SendMessage>(json).unwrap(), send);
        let typo = serde_json::json!({ "threadId": "t", "titel": "x" });
        let err = serde_json::from_value::<RenameThread>(typo).unwrap_err();
        assert!(err.to_string().contains("unknown field `titel`"), "{err}");
        let err = serde_json::from_value::<ListThreads>(serde_json::json!({ "x": 1 }));
        assert!(err.is_err());
        assert!(serde_json::from_value::<ListThreads>(serde_json::json!({})).is_ok());
    }

    #[test]
    fn absent_options_are_left_out_and_read_back_as_none() {
        let page = ListMessages {
            thread_id: "t".into(),
            limit: None,
            before: None,
        };
        let json = serde_json::to_value(&page).unwrap();
        assert_eq!(json, serde_json::json!({ "threadId": "t" }));
        let null = serde_json::json!({ "threadId": "t", "limit": null });
        assert_eq!(serde_json::from_value::<ListMessages>(null).unwrap(), page);
    }
}
