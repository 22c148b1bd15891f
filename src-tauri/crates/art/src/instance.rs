//! `ArtInstance` (ART's `createArtInstance`): wires storage, providers, tools, the agent
//! core and the managers into one value with `process`, the sockets and the managers.

use std::collections::HashSet;
use std::sync::Arc;

use art_types::{
    AgentFinalResponse, AgentProps, ConversationMessage, MessageRole, ThreadConfig, ThreadSummary,
};

use crate::agent::claims::Claims;
use crate::agent::pes::{PesAgent, WaitingRuns};
use crate::agent::{AgentCore, AgentError, CancellationToken, WaitingCall};
use crate::attachments::{Attachments, BlobId};
use crate::context::MessageOptions;
use crate::context::{
    ContextError, ConversationManager, PromptLibrary, StateManager, StateSavingStrategy,
};
use crate::observation::ObservationManager;
use crate::reasoning::engine::ReasoningEngine;
use crate::reasoning::prompts::PromptManager;
use crate::reasoning::provider::ProviderSource;
use crate::secrets::{MemoryStore, SecretStore};
use crate::settings::SettingsStore;
use crate::sockets::Sockets;
use crate::storage::StorageAdapter;
use crate::tools::calculator::CalculatorTool;
use crate::tools::current_time::CurrentTimeTool;
use crate::tools::mcp::{McpManager, McpStore};
use crate::tools::{RegistryError, ToolExecutor, ToolRegistry, ToolSystem};
use crate::usage::UsageLedger;
use art_types::approval::ApprovalDecision;

/// A configured ART framework.
pub struct ArtInstance {
    /// Pub/sub for stream events, observations and messages.
    pub sockets: Arc<Sockets>,
    /// Threads and messages.
    pub conversation: Arc<ConversationManager>,
    /// Thread config and state.
    pub state: Arc<StateManager>,
    /// Observations.
    pub observations: Arc<ObservationManager>,
    /// Tools.
    pub tools: Arc<ToolRegistry>,
    /// Named system prompts.
    pub library: Arc<PromptLibrary>,
    /// The app's settings: what new threads start with ([`Self::new_thread`]), the
    /// models chosen lately.
    pub settings: Arc<SettingsStore>,
    /// What runs used and cost (each finished run is recorded by the methods below).
    pub usage: Arc<UsageLedger>,
    /// MCP servers (configured in the storage), whose tools join [`Self::tools`]; a run
    /// starts the ones its thread uses.
    pub mcp: Arc<McpManager>,
    /// The attachment store, when the instance was given one
    /// ([`ArtInstanceBuilder::attachments`]); without it a question cannot carry files.
    pub attachments: Option<Arc<Attachments>>,
    agent: Arc<dyn AgentCore>,
}

impl ArtInstance {
    /// Start building an instance over `storage` and `providers`.
    pub fn builder(
        storage: Arc<dyn StorageAdapter>,
        providers: Arc<dyn ProviderSource>,
    ) -> ArtInstanceBuilder {
        ArtInstanceBuilder {
            storage,
            providers,
            tools: Vec::new(),
            builtin_tools: true,
            strategy: StateSavingStrategy::Explicit,
            system_prompt: None,
            prompts: PromptManager::default(),
            mcp_secrets: Arc::new(MemoryStore::new()),
            attachments: None,
        }
    }

    /// Run one message through the agent, once the MCP servers of the tools the thread
    /// enables are started (a server that fails leaves its tools unavailable to the run,
    /// which says so; it does not stop the run).
    pub async fn process(
        &self,
        props: AgentProps,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        self.mcp
            .start_for_thread(&self.state, &props.thread_id)
            .await;
        let out = self.agent.process(props, cancel).await?;
        self.ledger(&out).await;
        Ok(out)
    }

    /// One question to several models at once, each column a run on its own branch of
    /// the thread (see [`crate::agent::pes::PesAgent::compare`]), once the thread's MCP
    /// servers are started: each column's end (`ended` hears of each as it comes), each
    /// finished one in the usage ledger.
    pub async fn compare(
        &self,
        props: AgentProps,
        columns: Vec<crate::agent::pes::Column>,
        ended: crate::agent::pes::ColumnEnded<'_>,
    ) -> Result<Vec<Result<AgentFinalResponse, AgentError>>, AgentError> {
        self.mcp
            .start_for_thread(&self.state, &props.thread_id)
            .await;
        let ended = self.agent.compare(props, columns, ended).await?;
        for out in ended.iter().flatten() {
            self.ledger(out).await;
        }
        Ok(ended)
    }

    /// Whether a run may start in the thread now (see [`AgentCore::ready`]).
    pub async fn ready(&self, thread_id: &str) -> Result<(), AgentError> {
        self.agent.ready(thread_id).await
    }

    /// Whether nothing is at work in the thread (see [`AgentCore::idle`]).
    pub async fn idle(&self, thread_id: &str) -> Result<(), AgentError> {
        self.agent.idle(thread_id).await
    }

    /// The tool call the thread's run waits on, if it waits.
    pub async fn waiting(&self, thread_id: &str) -> Result<Option<WaitingCall>, AgentError> {
        self.agent.waiting(thread_id).await
    }

    /// The process is closing: MCP servers stop (none outlives it), and a run waiting on
    /// a server's question stays kept on it, to go on when it is answered after a
    /// restart.
    pub async fn close(&self) {
        self.agent.close();
        self.mcp.shutdown().await;
    }

    /// The thread's run kept on an MCP server's question when its process ended (the
    /// app or `art` closed, killed or crashed while it waited), if any — its `asked` is
    /// the question: answered with [`Self::answer_held`], the run goes on here. `None`
    /// too while the process that asked lives (it takes the answer itself).
    pub async fn kept_on(&self, thread_id: &str) -> Result<Option<WaitingCall>, AgentError> {
        if matches!(self.agent.idle(thread_id).await, Err(AgentError::Busy(_))) {
            return Ok(None);
        }
        Ok(self
            .agent
            .waiting(thread_id)
            .await?
            .filter(|w| w.asked.is_some()))
    }

    /// Go on with the run kept on question `question_id` (see [`Self::kept_on`]),
    /// `answer` given to it: its call runs again and the server's same question gets the
    /// answer; then the run goes on to its end (or its next wait).
    pub async fn answer_held(
        &self,
        thread_id: &str,
        question_id: &str,
        answer: art_types::mcp::elicit::ElicitAnswer,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        self.mcp.start_for_thread(&self.state, thread_id).await;
        let out = self
            .agent
            .answer_held(thread_id, question_id, answer, cancel)
            .await?;
        self.ledger(&out).await;
        Ok(out)
    }

    /// What the thread's waiting run waits on, if `decision` can be taken on it.
    pub async fn check_decision(
        &self,
        thread_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<WaitingCall, AgentError> {
        self.agent.check_decision(thread_id, decision).await
    }

    /// Go on with the thread's waiting run, `decision` taken on its call.
    pub async fn resume(
        &self,
        thread_id: &str,
        decision: ApprovalDecision,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        self.mcp.start_for_thread(&self.state, thread_id).await;
        let out = self.agent.resume(thread_id, decision, cancel).await?;
        self.ledger(&out).await;
        Ok(out)
    }

    /// The user's decision on the call column `trace_id` (of a comparison in thread
    /// `thread_id`) waits on: checked, then the column goes on.
    pub fn decide_column(
        &self,
        thread_id: &str,
        trace_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), AgentError> {
        self.agent.decide_column(thread_id, trace_id, decision)
    }

    /// Show the branch through `message_id` (see [`ConversationManager::switch_to`]).
    /// Refused while a run of the thread is at work or waits for a decision: it adds to
    /// the branch it started on.
    pub async fn switch_branch(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<ThreadSummary, AgentError> {
        self.agent.idle(thread_id).await?;
        Ok(self.conversation.switch_to(thread_id, message_id).await?)
    }

    /// "Edit and resend", before the edited question is asked: a new branch beside the
    /// user's question `message_id` (it and what followed stay, as an alternative). Only
    /// the user's own questions can be edited, and not while a run of the thread is at
    /// work or waits for a decision. Returns the question as it was (its attachments go
    /// with the edited text).
    pub async fn branch_to_edit(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<ConversationMessage, AgentError> {
        self.agent.idle(thread_id).await?;
        let original = match self.conversation.message(thread_id, message_id).await? {
            Some(message) if message.role == MessageRole::User => message,
            Some(_) => {
                return Err(ContextError::InvalidField {
                    field: "messageId",
                    message: "only your own messages can be edited and sent again".into(),
                }
                .into());
            }
            None => return Err(ContextError::MessageNotFound(message_id.to_owned()).into()),
        };
        self.conversation
            .branch_beside(thread_id, message_id)
            .await?;
        Ok(original)
    }

    /// "Regenerate", before the question is asked again: a new branch beside the active
    /// branch's last question; returns that question (its text and attachments are
    /// asked again). Not while a run of the thread is at work or waits for a decision.
    pub async fn branch_to_regenerate(
        &self,
        thread_id: &str,
    ) -> Result<ConversationMessage, AgentError> {
        self.agent.idle(thread_id).await?;
        let question = self
            .conversation
            .last_question(thread_id)
            .await?
            .ok_or_else(|| {
                AgentError::InvalidInput(
                    "there is no question in this thread to answer again".into(),
                )
            })?;
        self.conversation
            .branch_beside(thread_id, &question.message_id)
            .await?;
        Ok(question)
    }

    /// "Replay with…", before the replay runs: a new branch beside the question of run
    /// `trace_id` of the thread; returns that question (its text and attachments are
    /// asked again, with the replay's options — [`art_types::AgentOptions::replay`]).
    /// Not while a run of the thread is at work or waits for a decision.
    pub async fn branch_to_replay(
        &self,
        thread_id: &str,
        trace_id: &str,
    ) -> Result<ConversationMessage, AgentError> {
        self.agent.idle(thread_id).await?;
        let question = self
            .conversation
            .messages_of_run(thread_id, trace_id)
            .await?
            .into_iter()
            .find(|m| m.role == MessageRole::User)
            .ok_or_else(|| {
                AgentError::InvalidInput(format!(
                    "there is no run {trace_id} in thread {thread_id} to replay"
                ))
            })?;
        self.conversation
            .branch_beside(thread_id, &question.message_id)
            .await?;
        Ok(question)
    }

    /// Create a thread titled `title` (or "New thread") with the settings new threads
    /// start with (the app's default model, tools, prompt), so it can be asked at once.
    pub async fn new_thread(&self, title: Option<&str>) -> Result<ThreadSummary, ContextError> {
        let config = self.settings.get().await?.new_thread;
        let thread = self.conversation.create_thread(title).await?;
        if config != ThreadConfig::default() {
            self.state
                .set_thread_config(&thread.thread_id, &config)
                .await?;
        }
        Ok(thread)
    }

    /// Delete a thread with its messages, observations, configuration and state, and
    /// the attachments only its questions used (their bytes, copies and texts); one that
    /// another thread's question also carries stays. Returns how many stored files went.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<usize, ContextError> {
        let candidates: HashSet<BlobId> = self
            .conversation
            .messages(thread_id, MessageOptions::default())
            .await?
            .iter()
            .flat_map(|m| &m.attachments)
            .flat_map(Attachments::blob_ids)
            .collect();
        self.conversation.delete_thread(thread_id).await?;
        let Some(store) = self.attachments.clone().filter(|_| !candidates.is_empty()) else {
            return Ok(0);
        };
        let used: HashSet<BlobId> = self
            .conversation
            .attachments_in_use()
            .await?
            .iter()
            .flat_map(Attachments::blob_ids)
            .collect();
        let unused: Vec<BlobId> = candidates.difference(&used).cloned().collect();
        let removed = tokio::task::spawn_blocking(move || {
            unused
                .iter()
                .filter(|id| match store.store().remove(id) {
                    Ok(removed) => removed,
                    Err(e) => {
                        tracing::warn!("attachment {id} of a deleted thread stays: {e}");
                        false
                    }
                })
                .count()
        })
        .await
        .unwrap_or(0);
        Ok(removed)
    }

    /// "Fork from here": a new thread with the branch of `thread_id` ending at
    /// `message_id` and the same settings (not the agent's state: the fork starts its
    /// own). See [`ConversationManager::fork`].
    pub async fn fork_thread(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<ThreadSummary, ContextError> {
        let thread = self.conversation.fork(thread_id, message_id).await?;
        if let (Some(config), _) = self.state.saved(thread_id).await? {
            self.state
                .set_thread_config(&thread.thread_id, &config)
                .await?;
        }
        Ok(thread)
    }

    /// End the thread's waiting run as stopped; `None` if none waits.
    pub async fn stop_waiting(
        &self,
        thread_id: &str,
    ) -> Result<Option<AgentFinalResponse>, AgentError> {
        let out = self.agent.stop_waiting(thread_id).await?;
        if let Some(out) = &out {
            self.ledger(out).await;
        }
        Ok(out)
    }

    /// Enter a finished run in the usage ledger. A failure to do so is logged: the run
    /// and its answer are recorded already, and the ledger must not fail them.
    async fn ledger(&self, out: &AgentFinalResponse) {
        if let Err(e) = self.usage.record(&out.metadata).await {
            tracing::warn!(
                "cannot enter run {} in the usage ledger: {e}",
                out.metadata.trace_id
            );
        }
    }
}

/// Options of an [`ArtInstance`] (ART's `ArtInstanceConfig`).
pub struct ArtInstanceBuilder {
    storage: Arc<dyn StorageAdapter>,
    providers: Arc<dyn ProviderSource>,
    tools: Vec<Arc<dyn ToolExecutor>>,
    builtin_tools: bool,
    strategy: StateSavingStrategy,
    system_prompt: Option<String>,
    prompts: PromptManager,
    mcp_secrets: Arc<dyn SecretStore>,
    attachments: Option<Arc<Attachments>>,
}

impl ArtInstanceBuilder {
    /// Where attachments' bytes are kept (the app and the CLI: the data directory's
    /// `attachments` folder). Without one, questions carry no files.
    pub fn attachments(mut self, attachments: Arc<Attachments>) -> Self {
        self.attachments = Some(attachments);
        self
    }

    /// Register an extra tool.
    pub fn tool(mut self, tool: Arc<dyn ToolExecutor>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Leave out the built-in calculator and clock.
    pub fn without_builtin_tools(mut self) -> Self {
        self.builtin_tools = false;
        self
    }

    /// State saving strategy (default explicit).
    pub fn state_saving(mut self, strategy: StateSavingStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Instance-level custom system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Replace the prompt fragments.
    pub fn prompts(mut self, prompts: PromptManager) -> Self {
        self.prompts = prompts;
        self
    }

    /// Where MCP servers' header values and secret environment values are kept (default:
    /// in memory, for this process only; the app and the CLI give the OS keychain).
    pub fn mcp_secrets(mut self, secrets: Arc<dyn SecretStore>) -> Self {
        self.mcp_secrets = secrets;
        self
    }

    /// Build. Fails only when a tool has an invalid name or schema.
    pub fn build(self) -> Result<ArtInstance, RegistryError> {
        let sockets = Arc::new(Sockets::default());
        let observations = Arc::new(ObservationManager::new(
            Arc::clone(&self.storage),
            Arc::clone(&sockets),
        ));
        let conversation = Arc::new(
            ConversationManager::new(Arc::clone(&self.storage), Arc::clone(&sockets))
                .tapped(observations.shared_tap()),
        );
        let state = Arc::new(StateManager::new(Arc::clone(&self.storage), self.strategy));
        let library = Arc::new(PromptLibrary::new(Arc::clone(&self.storage)));
        let registry = Arc::new(ToolRegistry::new());
        if self.builtin_tools {
            registry.register(Arc::new(CalculatorTool::default()))?;
            registry.register(Arc::new(CurrentTimeTool::default()))?;
        }
        for tool in self.tools {
            registry.register(tool)?;
        }
        let agent = PesAgent {
            conversation: Arc::clone(&conversation),
            state: Arc::clone(&state),
            observations: Arc::clone(&observations),
            tools: Arc::new(ToolSystem::new(
                Arc::clone(&registry),
                Arc::clone(&observations),
            )),
            engine: Arc::new(ReasoningEngine::new(self.providers)),
            prompts: Arc::new(self.prompts),
            library: Arc::clone(&library),
            sockets: Arc::clone(&sockets),
            instance_system_prompt: self.system_prompt,
            waiting_runs: Arc::new(WaitingRuns::new(Arc::clone(&self.storage))),
            claims: Arc::new(Claims::new(Arc::clone(&self.storage))),
            attachments: self.attachments.clone(),
            column_waits: Arc::default(),
        };
        let usage = Arc::new(UsageLedger::new(
            Arc::clone(&self.storage),
            Arc::clone(&conversation),
        ));
        let mcp = Arc::new(
            McpManager::new(
                McpStore::new(Arc::clone(&self.storage), self.mcp_secrets),
                Arc::clone(&registry),
            )
            .recording_questions(Arc::clone(&observations), Arc::clone(&self.storage)),
        );
        let settings = Arc::new(SettingsStore::new(Arc::clone(&self.storage)));
        Ok(ArtInstance {
            attachments: self.attachments,
            settings,
            sockets,
            usage,
            mcp,
            conversation,
            state,
            observations,
            tools: registry,
            library,
            agent: Arc::new(agent),
        })
    }
}
