//! The Plan-Execute-Synthesize agent (ART's PESAgent), working in steps.
//!
//! 1. load thread config + state; commit the user message (before any LLM call);
//! 2. a thread that always searches first has its collections searched for the question
//!    (`search_first.rs`), what was found given to every phase;
//!    planning (`planning.rs`): a todo list — title, intent, steps — recorded as
//!    TITLE / INTENT / PLAN observations;
//! 3. the steps (`steps.rs`): each step that acts is a loop of LLM calls and tool calls
//!    (native tool calling, or calls written as JSON), within the thread's limits; a
//!    step may change the steps after it (PLAN_UPDATE); each step's status is a STEP
//!    observation, its tools TOOL_CALL / TOOL_EXECUTION, results kept in history;
//! 4. synthesis (`synthesis.rs`) streams the answer from what the steps produced,
//!    checkpointed every 80 ms; the answer, state and FINAL_RESPONSE are saved.
//!
//! Provider failures and cancellation end the run with status `error`, an ERROR
//! observation and an `interrupted` answer (if any text had arrived); a failed tool or
//! step makes the run `partial`. Every observation carries span information.

mod approvals;
mod calls;
mod column_wait;
mod compare;
mod exchange;
mod held;
mod planning;
mod replan;
mod replay;
mod review;
mod run;
mod search_first;
mod steps;
mod synthesis;
mod tool_calls;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use art_types::approval::ApprovalDecision;
use art_types::mcp::elicit::ElicitAnswer;
use art_types::{
    AgentFinalResponse, AgentOptions, AgentProps, AgentState, AttachmentProblem,
    ConversationMessage, FailureCode, GenerationParams, ObservationType, Phase, ProviderConfig,
    ThreadConfig, ToolSchema,
};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::attached::{self, Attached};
use super::claims::Claims;
use super::history;
use super::{AgentCore, AgentError, WaitingCall};
use crate::attachments::Attachments;
use crate::context::{ConversationManager, MessageOptions, PromptLibrary, StateManager};
use crate::observation::ObservationManager;
use crate::reasoning::engine::ReasoningEngine;
use crate::reasoning::prompts::{self, PromptManager};
use crate::sockets::Sockets;
use crate::tools::ToolSystem;
pub use approvals::WaitingRuns;
use calls::run_error;
pub use column_wait::ColumnWaits;
pub use compare::{Column, ColumnEnded, MAX_COLUMNS, MIN_COLUMNS, queued_behind};
pub use replan::UPDATE_PLAN;
use run::{Failed, Run, Stop};
use steps::Start;

/// Longest accepted user message, in bytes.
pub const MAX_QUERY_BYTES: usize = 1_000_000;

/// What the PES agent works with.
pub struct PesAgent {
    /// Threads and messages.
    pub conversation: Arc<ConversationManager>,
    /// Thread config and state.
    pub state: Arc<StateManager>,
    /// Observations.
    pub observations: Arc<ObservationManager>,
    /// Tools.
    pub tools: Arc<ToolSystem>,
    /// LLM calls.
    pub engine: Arc<ReasoningEngine>,
    /// Prompt fragments.
    pub prompts: Arc<PromptManager>,
    /// Named system prompts threads can pick.
    pub library: Arc<PromptLibrary>,
    /// Sockets.
    pub sockets: Arc<Sockets>,
    /// Instance-level custom system prompt.
    pub instance_system_prompt: Option<String>,
    /// Runs that wait for a decision on a tool call.
    pub waiting_runs: Arc<WaitingRuns>,
    /// One run per thread, across processes.
    pub claims: Arc<Claims>,
    /// The attachment store (`None`: this instance takes no attachments).
    pub attachments: Option<Arc<Attachments>>,
    /// Comparisons' columns that wait for a decision (in this process).
    pub column_waits: Arc<ColumnWaits>,
}

/// What every phase of one run works from.
struct Setup {
    config: ThreadConfig,
    provider: ProviderConfig,
    /// The system prompt (agent base + the custom one that applies).
    system: String,
    /// History up to and with the question (fitted to the window for planning).
    history: Vec<ConversationMessage>,
    /// How many past messages a run sends.
    limit: u32,
    /// The model's context window ([`art_types::attachment::ASSUMED_WINDOW`] when its
    /// own is not known): what the history and documents are fitted to.
    window: u64,
    /// The thread's enabled tools.
    schemas: Vec<ToolSchema>,
    /// The thread's title before the run (an untitled thread takes the plan's).
    thread_title: String,
    /// The history's documents and images, loaded.
    attached: Attached,
    /// The options the run was started with.
    options: AgentOptions,
    /// The plan's intent, once there is a plan.
    intent: Option<String>,
    /// A replay's record, in recorded mode.
    recorded: Option<Arc<replay::Recorded>>,
}

impl PesAgent {
    /// The base prompt (a planning agent's, or a direct answer's) with the custom one
    /// that applies after it.
    fn system_prompt(&self, call: Option<&str>, thread: Option<&str>, direct: bool) -> String {
        let base = if direct {
            prompts::CHAT_BASE
        } else {
            prompts::PES_BASE
        };
        let custom = call
            .or(thread)
            .or(self.instance_system_prompt.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match custom {
            Some(custom) => format!("{base}\n\n{custom}"),
            None => base.to_owned(),
        }
    }

    /// Store `props`'s question as `run`'s, below `parent` (after the thread's head
    /// when `None`); the run's messages follow it.
    async fn store_question(
        &self,
        props: &AgentProps,
        run: &mut Run,
        parent: Option<String>,
    ) -> Result<(), AgentError> {
        let user = ConversationMessage {
            message_id: crate::clock::new_id(),
            thread_id: run.thread_id.clone(),
            role: art_types::MessageRole::User,
            content: props.query.clone(),
            timestamp: crate::clock::now_ms(),
            status: art_types::MessageStatus::Complete,
            metadata: question_metadata(run, props.options.replay.as_ref()),
            parent_id: parent,
            attachments: props.attachments.clone(),
        };
        self.conversation
            .add_messages(&run.thread_id, std::slice::from_ref(&user))
            .await?;
        run.tip = Some(user.message_id.clone());
        run.question = Some(user);
        Ok(())
    }

    /// Plan, execute and synthesize `run`, whose question is stored: the run's end,
    /// recorded whatever happened.
    async fn answer(
        &self,
        props: &AgentProps,
        mut run: Run,
        config: ThreadConfig,
        thread_title: String,
        state: AgentState,
        cancel: &CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let options = props.options.clone();
        let question = run.tip.clone();
        let outcome = match self
            .setup(props, config, thread_title, question.as_deref())
            .await
        {
            Ok(setup) => {
                run.call_ids.extend(history::call_ids(&setup.history));
                run.provider = Some(setup.provider.provider_name.clone());
                run.model = Some(setup.provider.model_id.clone());
                self.phases(&mut run, setup, options, state, cancel).await
            }
            Err(stop) => Err(stop),
        };
        self.ended(&run, outcome).await
    }

    /// Everything the phases need, read once; the question is already stored.
    async fn setup(
        &self,
        props: &AgentProps,
        mut config: ThreadConfig,
        thread_title: String,
        question: Option<&str>,
    ) -> Result<Setup, Stop> {
        if let Some(tools) = &props.options.tools {
            config.enabled_tools.clone_from(tools);
        }
        let recorded = match &props.options.replay {
            Some(replay) => replay::Recorded::load(&self.observations, &props.thread_id, replay)
                .await
                .map_err(AgentError::from)?,
            None => None,
        };
        let provider = match props.options.provider_config.clone() {
            // Another model of the thread's own provider, given without options (a
            // replay on another model), is reached where the thread reaches it.
            Some(mut other)
                if other.provider_name == config.provider_config.provider_name
                    && other.adapter_options.is_empty() =>
            {
                other
                    .adapter_options
                    .clone_from(&config.provider_config.adapter_options);
                other
            }
            Some(other) => other,
            None => config.provider_config.clone(),
        };
        if provider.provider_name.trim().is_empty() || provider.model_id.trim().is_empty() {
            let error = run_error(
                FailureCode::ProviderNotConfigured,
                "choose a provider and a model in the thread's settings (in the app, or with \
                 `art config --thread ID --provider NAME --model MODEL`)",
            );
            return Err(Stop::run(error, Phase::Planning, None));
        }
        let limit = props
            .options
            .history_limit
            .unwrap_or(config.history_limit)
            .max(1);
        let history = self
            .conversation
            .path_to(
                &props.thread_id,
                question,
                MessageOptions {
                    limit: Some(limit as usize),
                    before: None,
                },
            )
            .await?;
        // Not known: assumed, so a huge file or history is never sent whole.
        let known = context_window(&self.engine, &config, &provider).await;
        let window = known.unwrap_or(art_types::attachment::ASSUMED_WINDOW);
        // The thread's level: its own text, else the library prompt it picked (a
        // deleted one is skipped, so the instance's applies).
        let picked = match &config.prompt_id {
            Some(id) => self.library.get(id).await?.map(|p| p.content),
            None => None,
        };
        let thread_prompt = config.system_prompt.clone().or(picked);
        let system = self.system_prompt(
            props.options.system_prompt.as_deref(),
            thread_prompt.as_deref(),
            config.answers_directly(),
        );
        let schemas = self.tools.registry().list_enabled(&config.enabled_tools);
        let attached = self
            .attachments_for(
                props,
                &history,
                &config,
                &provider,
                &system,
                window,
                known.is_none(),
            )
            .await?;
        Ok(Setup {
            config,
            provider,
            system,
            history,
            limit,
            window,
            schemas,
            thread_title,
            attached,
            options: props.options.clone(),
            intent: None,
            recorded: recorded.map(Arc::new),
        })
    }

    /// Check the question's attachments against the model's window (`assumed` when its
    /// own is not known), then load the history's.
    #[allow(clippy::too_many_arguments)]
    async fn attachments_for(
        &self,
        props: &AgentProps,
        history: &[ConversationMessage],
        config: &ThreadConfig,
        provider: &ProviderConfig,
        system: &str,
        window: u64,
        assumed: bool,
    ) -> Result<Attached, Stop> {
        let refused = |problem: AttachmentProblem| {
            let code = match problem {
                AttachmentProblem::TooLongForModel { .. } => FailureCode::DocumentTooLong,
                _ => FailureCode::AttachmentRefused,
            };
            let error = run_error(code, problem.to_string());
            Stop::run(error, Phase::Planning, None)
        };
        let has_images = history
            .iter()
            .flat_map(|m| &m.attachments)
            .chain(&props.attachments)
            .any(art_types::Attachment::is_image);
        let sees_images = match has_images {
            true => self.engine.sees_images(provider).await,
            false => None,
        };
        let reach = attached::ModelReach {
            model: &provider.model_id,
            sees_images,
            room: Some(history_budget(window, system, &config.generation)),
            window: Some(window),
            assumed,
        };
        attached::check(&props.attachments, reach).map_err(refused)?;
        Attached::load(self.attachments.as_ref(), history, sees_images)
            .await
            .map_err(refused)
    }

    /// Plan, the steps, the answer.
    async fn phases(
        &self,
        run: &mut Run,
        mut setup: Setup,
        options: AgentOptions,
        state: AgentState,
        cancel: &CancellationToken,
    ) -> Result<AgentFinalResponse, Stop> {
        self.search_first(run, &mut setup, &state).await;
        if setup.config.answers_directly() {
            return self.answer_directly(run, setup, state, cancel).await;
        }
        let planned = self.plan(run, &mut setup, cancel).await?;
        // An empty plan waits too: the user may add the steps it lacks.
        // (A comparison's columns are not held: their plans are what it shows.)
        if setup.config.plan_checkpoint && run.comparison.is_none() {
            return self
                .hold_plan(run, planned.intent, options, planned.calls)
                .await;
        }
        let start = Start::Planned(planned.calls);
        self.after_plan(run, setup, planned.intent, options, start, state, cancel)
            .await
    }

    /// A thread that offers no tools: the answer in one streamed call, no plan (it could
    /// only say "reply"); an untitled thread is titled from the question.
    async fn answer_directly(
        &self,
        run: &mut Run,
        setup: Setup,
        state: AgentState,
        cancel: &CancellationToken,
    ) -> Result<AgentFinalResponse, Stop> {
        run.direct = true;
        if setup.thread_title == crate::context::UNTITLED
            && let Some(title) = run
                .question
                .as_ref()
                .and_then(|q| crate::context::title_from_question(&q.content))
            && let Err(e) = self
                .conversation
                .rename_thread(&run.thread_id, &title)
                .await
        {
            tracing::debug!("could not title the thread: {e}");
        }
        let (answer, usage) = self.synthesize(run, &setup, None, cancel).await?;
        self.finalise(run, answer, usage, &state).await
    }

    /// The steps (from the start, or from one that waited) and the answer; or the run
    /// waits for a decision.
    #[allow(clippy::too_many_arguments)]
    async fn after_plan(
        &self,
        run: &mut Run,
        mut setup: Setup,
        intent: Option<String>,
        options: AgentOptions,
        start: Start,
        state: AgentState,
        cancel: &CancellationToken,
    ) -> Result<AgentFinalResponse, Stop> {
        setup.intent.clone_from(&intent);
        let shared = Arc::new(Mutex::new(state.clone()));
        let waiting = self.execute(run, &setup, start, &shared, cancel).await?;
        let new_state: AgentState = shared.lock().await.clone();
        // Saved when a tool asked, else as the thread's strategy says (explicit: not);
        // a change is observed either way, with whether it outlives the run.
        let asked = run.state_save_asked.swap(false, Ordering::Relaxed);
        if new_state != state {
            let saved = if asked {
                self.state
                    .set_agent_state(&run.thread_id, &new_state)
                    .await?;
                true
            } else {
                self.state
                    .save_state_if_modified(&run.thread_id, &new_state)
                    .await?
            };
            let root = run.root_span.clone();
            self.record(run.obs(
                ObservationType::StateUpdate,
                json!({
                    "keys": new_state.data.keys().collect::<Vec<_>>(),
                    "saved": saved,
                }),
                run.span(Phase::Execution, &root, None, run.run_start_ms, false),
            ))
            .await;
        }
        if let Some(step) = waiting {
            return self.suspend(run, intent, options, step).await;
        }
        let (answer, usage) = self
            .synthesize(run, &setup, intent.as_deref(), cancel)
            .await?;
        self.finalise(run, answer, usage, &new_state).await
    }

    /// The run's response, or its failure recorded as its end.
    async fn ended(
        &self,
        run: &Run,
        outcome: Result<AgentFinalResponse, Stop>,
    ) -> Result<AgentFinalResponse, AgentError> {
        // Closing while kept on a question: nothing more is recorded; it goes on later.
        if self.waiting_runs.closing()
            && outcome.is_err()
            && self.waiting_runs.kept(&run.thread_id, &run.trace_id).await
        {
            return Err(AgentError::Closing);
        }
        let waits =
            matches!(&outcome, Ok(r) if r.metadata.status == art_types::RunStatus::Suspended);
        if !waits {
            // Kept on a question that never had its answer (the run was stopped, say).
            if let Err(e) = self
                .waiting_runs
                .let_go(&run.thread_id, &run.trace_id, None)
                .await
            {
                tracing::warn!(thread = %run.thread_id, "a run's hold could not be let go: {e}");
            }
        }
        match outcome {
            Ok(response) => Ok(response),
            Err(Stop::Run(failed)) => {
                let Failed {
                    error,
                    phase,
                    partial,
                } = *failed;
                self.fail(run, error, phase, partial).await
            }
            Err(Stop::Agent(e)) => Err(e),
        }
    }
}

#[async_trait::async_trait]
impl AgentCore for PesAgent {
    async fn process(
        &self,
        props: AgentProps,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        check_question(&props)?;
        let thread = self.conversation.thread(&props.thread_id).await?;
        if let Some(waiting) = self.waiting_call(&props.thread_id).await? {
            return Err(waiting.why());
        }
        let context = self.state.load_thread_context(&props.thread_id).await?;
        let trace_id = props.trace_id.clone().unwrap_or_else(crate::clock::new_id);
        let claim = self.claims.claim(&props.thread_id, &trace_id).await?;
        let mut run = Run::new(
            &props.thread_id,
            trace_id,
            context.config.limits,
            context.config.tool_calling,
        );
        // The user's message is safe before anything can fail.
        let asked = self.store_question(&props, &mut run, None).await;
        let ended = match asked {
            Ok(()) => {
                self.answer(
                    &props,
                    run,
                    context.config,
                    thread.title,
                    context.state,
                    &cancel,
                )
                .await
            }
            Err(e) => Err(e),
        };
        claim.release().await;
        ended
    }

    async fn ready(&self, thread_id: &str) -> Result<(), AgentError> {
        self.conversation.thread(thread_id).await?;
        let config = self.state.load_thread_context(thread_id).await?.config;
        let provider = &config.provider_config;
        if provider.provider_name.trim().is_empty() || provider.model_id.trim().is_empty() {
            return Err(AgentError::NotConfigured);
        }
        self.idle(thread_id).await
    }

    async fn idle(&self, thread_id: &str) -> Result<(), AgentError> {
        // (A run kept on a server's question is at work while its process lives.)
        if self.claims.busy(thread_id).await? {
            return Err(AgentError::Busy(thread_id.to_owned()));
        }
        if let Some(waiting) = self.waiting_call(thread_id).await? {
            return Err(waiting.why());
        }
        Ok(())
    }

    async fn waiting(&self, thread_id: &str) -> Result<Option<WaitingCall>, AgentError> {
        self.waiting_call(thread_id).await
    }

    async fn check_decision(
        &self,
        thread_id: &str,
        decision: &ApprovalDecision,
    ) -> Result<WaitingCall, AgentError> {
        self.decidable(thread_id, decision).await
    }

    async fn resume(
        &self,
        thread_id: &str,
        decision: ApprovalDecision,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        self.resume_waiting(thread_id, approvals::GoOn::Decision(decision), cancel)
            .await
    }

    async fn answer_held(
        &self,
        thread_id: &str,
        question_id: &str,
        answer: ElicitAnswer,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let go_on = approvals::GoOn::Answer {
            question_id: question_id.to_owned(),
            answer,
        };
        self.resume_waiting(thread_id, go_on, cancel).await
    }

    fn close(&self) {
        self.waiting_runs.close();
    }

    async fn stop_waiting(
        &self,
        thread_id: &str,
    ) -> Result<Option<AgentFinalResponse>, AgentError> {
        self.stop_waiting_run(thread_id).await
    }

    fn decide_column(
        &self,
        thread_id: &str,
        trace_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), AgentError> {
        PesAgent::decide_column(self, thread_id, trace_id, decision)
    }

    async fn compare(
        &self,
        props: AgentProps,
        columns: Vec<Column>,
        ended: ColumnEnded<'_>,
    ) -> Result<Vec<Result<AgentFinalResponse, AgentError>>, AgentError> {
        PesAgent::compare(self, props, columns, ended).await
    }
}

/// The model's context window: the thread's setting, else the Ollama `num_ctx` the
/// thread passes, else what the model's server reports (a local Ollama), else unknown
/// (no limit of ours).
async fn context_window(
    engine: &ReasoningEngine,
    config: &ThreadConfig,
    provider: &ProviderConfig,
) -> Option<u64> {
    let set = config.context_window.map(u64::from).or_else(|| {
        provider
            .adapter_options
            .get("num_ctx")
            .and_then(serde_json::Value::as_u64)
    });
    match set {
        Some(window) => Some(window),
        None => engine.context_window(provider).await,
    }
}

/// Room for history in a prompt of `window` tokens: what the system text and the
/// answer (`max_tokens`, else a quarter of the window) do not take.
pub(super) fn history_budget(window: u64, system: &str, generation: &GenerationParams) -> u64 {
    let answer = generation
        .max_tokens
        .map_or(window / 4, u64::from)
        .min(window / 2);
    window
        .saturating_sub(answer)
        .saturating_sub(history::estimated_tokens(system))
}

/// The tools as the model reads them in a prompt, one line each.
fn tools_list(schemas: &[art_types::ToolSchema]) -> String {
    if schemas.is_empty() {
        return "(none: answer without tools)".into();
    }
    schemas
        .iter()
        .map(|s| {
            format!(
                "- {}: {} Arguments (JSON Schema): {}",
                s.name, s.description, s.input_schema
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A question the agent takes: some text or files, not too long.
fn check_question(props: &AgentProps) -> Result<(), AgentError> {
    // Files alone are a question too ("what is in this picture?" goes without saying).
    if props.query.trim().is_empty() && props.attachments.is_empty() {
        return Err(AgentError::InvalidInput("the message is empty".into()));
    }
    if props.query.len() > MAX_QUERY_BYTES {
        return Err(AgentError::InvalidInput(format!(
            "the message is longer than {MAX_QUERY_BYTES} bytes"
        )));
    }
    Ok(())
}

/// A question's metadata: its run, the run it replays and the comparison it is a
/// column of (when it is).
fn question_metadata(run: &Run, replay: Option<&art_types::Replay>) -> serde_json::Value {
    let mut metadata = json!({ art_types::message::TRACE_ID: run.trace_id });
    if let Some(replay) = replay {
        metadata[art_types::message::REPLAY_OF] = json!(replay.of);
    }
    if let Some(comparison) = &run.comparison {
        metadata[art_types::message::COMPARISON] = json!(comparison);
    }
    metadata
}
