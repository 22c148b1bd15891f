//! The Plan-Execute-Synthesize agent (ART's PESAgent).
//!
//! 1. load thread config + state; commit the user message (before any LLM call);
//! 2. gather history, enabled tool schemas and the system prompt
//!    (call > thread > instance, appended to the agent's base prompt);
//! 3. planning call → INTENT / TITLE / PLAN / TOOL_CALL observations;
//! 4. tools run in order → TOOL_EXECUTION observations, results kept in history;
//! 5. synthesis call streams the answer, checkpointed every 80 ms;
//! 6. answer saved, state saved if modified, FINAL_RESPONSE recorded.
//!
//! Provider failures and cancellation end the run with status `error`, an ERROR
//! observation and an `interrupted` answer (if any text had arrived); a failed tool
//! makes the run `partial`. Every observation carries span information.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use art_types::{
    AgentFinalResponse, AgentProps, AgentState, ConversationMessage, ExecutionMetadata,
    FailureCode, GenerationParams, MessageRole, MessageStatus, ObservationType, ParsedToolCall,
    Phase, PromptMessage, PromptRole, ProviderConfig, RunError, RunStatus, SpanInfo, StreamError,
    ThreadConfig, TokenUsage, ToolResult, ToolStatus,
};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::history;
use super::streaming::{self, Ending, StageResult, StageSinks};
use super::{AgentCore, AgentError};
use crate::clock;
use crate::context::{ConversationManager, MessageOptions, PromptLibrary, StateManager, UNTITLED};
use crate::observation::{NewObservation, ObservationManager};
use crate::reasoning::engine::ReasoningEngine;
use crate::reasoning::output_parser::{self, PlanningOutput};
use crate::reasoning::prompts::{self, PromptManager};
use crate::reasoning::provider::{CallOptions, CallStage};
use crate::sockets::Sockets;
use crate::tools::{ExecutionContext, ToolSystem};
use art_types::message::{TOOL_ARGUMENTS, TOOL_CALL_ID, TOOL_NAME, TOOL_SIGNATURE};

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
}

fn ms_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One run's bookkeeping.
struct Run {
    thread_id: String,
    trace_id: String,
    root_span: String,
    run_start_ms: i64,
    started: Instant,
    llm_calls: u32,
    tool_calls: u32,
    usage: TokenUsage,
    planning_ms: Option<u64>,
    execution_ms: Option<u64>,
    synthesis_ms: Option<u64>,
    tool_failed: bool,
    /// The user's message, once stored.
    question: Option<ConversationMessage>,
    /// Earlier messages left out so the prompt fits the model's context window.
    history_left_out: usize,
}

impl Run {
    fn span(
        &self,
        phase: Phase,
        span_id: &str,
        parent: Option<&str>,
        start_ms: i64,
        end: bool,
    ) -> Option<SpanInfo> {
        Some(SpanInfo {
            phase,
            span_id: span_id.to_owned(),
            parent_span_id: parent.map(str::to_owned),
            start_ms,
            end_ms: end.then(clock::now_ms),
        })
    }

    fn obs(&self, kind: ObservationType, content: Value, span: Option<SpanInfo>) -> NewObservation {
        let mut o = NewObservation::new(&self.thread_id, &self.trace_id, kind, content);
        o.span = span;
        o
    }

    fn add_usage(&mut self, result: &StageResult) {
        self.usage.input_tokens += result.metadata.input_tokens.unwrap_or(0);
        self.usage.cached_input_tokens += result.metadata.cached_input_tokens.unwrap_or(0);
        self.usage.output_tokens += result.metadata.output_tokens.unwrap_or(0);
        self.usage.thinking_tokens += result.metadata.thinking_tokens.unwrap_or(0);
    }

    fn metadata(&self, status: RunStatus, error: Option<RunError>) -> ExecutionMetadata {
        ExecutionMetadata {
            thread_id: self.thread_id.clone(),
            trace_id: self.trace_id.clone(),
            status,
            total_duration_ms: ms_since(self.started),
            planning_duration_ms: self.planning_ms,
            execution_duration_ms: self.execution_ms,
            synthesis_duration_ms: self.synthesis_ms,
            llm_calls: self.llm_calls,
            tool_calls: self.tool_calls,
            usage: self.usage,
            history_left_out: u32::try_from(self.history_left_out).unwrap_or(u32::MAX),
            error,
        }
    }
}

impl PesAgent {
    async fn record(&self, obs: NewObservation) {
        if let Err(e) = self.observations.record(obs).await {
            tracing::warn!("could not record an observation: {e}");
        }
    }

    fn system_prompt(&self, call: Option<&str>, thread: Option<&str>) -> String {
        let custom = call
            .or(thread)
            .or(self.instance_system_prompt.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match custom {
            Some(custom) => format!("{}\n\n{custom}", prompts::PES_BASE),
            None => prompts::PES_BASE.to_owned(),
        }
    }

    /// One LLM call with its LLM_STREAM_* observations.
    #[allow(clippy::too_many_arguments)]
    async fn llm_call(
        &self,
        run: &mut Run,
        provider: &art_types::ProviderConfig,
        generation: &art_types::GenerationParams,
        prompt: Vec<PromptMessage>,
        stage: CallStage,
        phase: Phase,
        parent_span: &str,
        checkpoint: Option<ConversationMessage>,
        cancel: &CancellationToken,
    ) -> StageResult {
        let span_id = clock::new_id();
        let start_ms = clock::now_ms();
        let model = json!({ "provider": provider.provider_name, "model": provider.model_id });
        let mut start = run.obs(
            ObservationType::LlmStreamStart,
            json!({ "stage": format!("{stage:?}").to_lowercase() }),
            run.span(phase, &span_id, Some(parent_span), start_ms, false),
        );
        start.metadata = model.clone();
        self.record(start).await;
        run.llm_calls += 1;
        let options = CallOptions {
            thread_id: run.thread_id.clone(),
            trace_id: run.trace_id.clone(),
            stage,
            model_id: provider.model_id.clone(),
            generation: generation.clone(),
            tools: Vec::new(),
        };
        let outcome = match prompts::validate(&prompt) {
            Err(e) => Err(StreamError {
                class: art_types::ErrorClass::Permanent,
                code: FailureCode::InvalidPrompt,
                message: e.to_string(),
            }),
            Ok(()) => tokio::select! {
                biased;
                () = cancel.cancelled() => Err(StreamError {
                    class: art_types::ErrorClass::Cancelled,
                    code: FailureCode::Cancelled,
                    message: "the run was stopped".into(),
                }),
                started = self.engine.call(provider, &prompt, &options) => started.map_err(|e| e.into_stream_error()),
            },
        };
        let result = match outcome {
            Ok(stream) => {
                let sinks = StageSinks {
                    sockets: &self.sockets,
                    observations: &self.observations,
                    thread_id: &run.thread_id,
                    trace_id: &run.trace_id,
                    checkpoint: checkpoint.map(|m| (Arc::clone(&self.conversation), m)),
                };
                streaming::consume(stream, stage, sinks, cancel).await
            }
            Err(error) if error.class == art_types::ErrorClass::Cancelled => StageResult {
                ending: Ending::Cancelled,
                text: String::new(),
                thinking: String::new(),
                metadata: Default::default(),
                tool_calls: Vec::new(),
                first_token_ms: None,
            },
            Err(error) => StageResult {
                ending: Ending::Failed(error),
                text: String::new(),
                thinking: String::new(),
                metadata: Default::default(),
                tool_calls: Vec::new(),
                first_token_ms: None,
            },
        };
        run.add_usage(&result);
        if result.metadata != Default::default() {
            let mut meta = run.obs(
                ObservationType::LlmStreamMetadata,
                json!(result.metadata),
                run.span(phase, &span_id, Some(parent_span), start_ms, false),
            );
            meta.metadata = model.clone();
            self.record(meta).await;
        }
        let span = run.span(phase, &span_id, Some(parent_span), start_ms, true);
        let mut end = match &result.ending {
            Ending::Failed(error) => run.obs(ObservationType::LlmStreamError, json!({ "code": error.code, "class": error.class, "message": error.message }), span),
            _ => run.obs(ObservationType::LlmStreamEnd, json!({ "metadata": result.metadata, "cancelled": matches!(result.ending, Ending::Cancelled) }), span),
        };
        end.metadata = model;
        self.record(end).await;
        result
    }

    /// End the run with an error (or cancellation), keeping any partial answer.
    async fn fail(
        &self,
        run: &Run,
        error: RunError,
        phase: Phase,
        partial: Option<ConversationMessage>,
    ) -> Result<AgentFinalResponse, AgentError> {
        let mut obs = run.obs(
            ObservationType::Error,
            json!({ "code": error.code, "message": error.message, "phase": phase }),
            run.span(phase, &run.root_span, None, run.run_start_ms, false),
        );
        obs.title = Some(if error.code == FailureCode::Cancelled {
            "Run stopped".into()
        } else {
            "Run failed".into()
        });
        self.record(obs).await;
        let answered = partial.as_ref().is_some_and(|m| !m.content.is_empty());
        if !answered && error.code != FailureCode::Cancelled {
            self.mark_failed(run, &error).await?;
        }
        let response = match partial {
            Some(mut message) if !message.content.is_empty() => {
                message.status = MessageStatus::Interrupted;
                self.conversation
                    .add_messages(&run.thread_id, std::slice::from_ref(&message))
                    .await?;
                message
            }
            _ => ConversationMessage {
                message_id: clock::new_id(),
                thread_id: run.thread_id.clone(),
                role: MessageRole::Ai,
                content: String::new(),
                timestamp: clock::now_ms(),
                status: MessageStatus::Interrupted,
                metadata: json!({ "traceId": run.trace_id }),
            },
        };
        Ok(AgentFinalResponse {
            response,
            metadata: run.metadata(RunStatus::Error, Some(error)),
        })
    }

    /// The question got no answer: keep it, with the error, out of later prompts.
    async fn mark_failed(&self, run: &Run, error: &RunError) -> Result<(), AgentError> {
        let Some(mut question) = run.question.clone() else {
            return Ok(());
        };
        question.mark_failed(error);
        self.conversation
            .add_messages(&run.thread_id, std::slice::from_ref(&question))
            .await?;
        Ok(())
    }

    async fn record_plan(
        &self,
        run: &Run,
        plan: &PlanningOutput,
        planning_span: &str,
        planning_start: i64,
    ) {
        let point = |kind, content| {
            run.obs(
                kind,
                content,
                run.span(
                    Phase::Planning,
                    planning_span,
                    Some(&run.root_span),
                    planning_start,
                    false,
                ),
            )
        };
        let mut batch = Vec::new();
        if let Some(title) = &plan.title {
            batch.push(point(ObservationType::Title, json!({ "title": title })));
        }
        if let Some(intent) = &plan.intent {
            batch.push(point(ObservationType::Intent, json!({ "intent": intent })));
        }
        let plan_span = run.span(
            Phase::Planning,
            planning_span,
            Some(&run.root_span),
            planning_start,
            true,
        );
        batch.push(run.obs(
            ObservationType::Plan,
            json!({ "plan": plan.plan, "intent": plan.intent, "toolCalls": plan.tool_calls }),
            plan_span,
        ));
        for call in &plan.tool_calls {
            let mut o = point(
                ObservationType::ToolCall,
                json!({ "callId": call.call_id, "toolName": call.tool_name, "arguments": call.arguments }),
            );
            o.title = Some(format!("Tool call: {}", call.tool_name));
            batch.push(o);
        }
        if !plan.problems.is_empty() {
            let mut o = point(
                ObservationType::Error,
                json!({ "code": FailureCode::PlanningOutputUnparseable, "problems": plan.problems, "phase": Phase::Planning }),
            );
            o.title = Some("Could not fully read the plan".into());
            o.metadata = json!({ "recoverable": true });
            batch.push(o);
        }
        if let Err(e) = self.observations.record_all(batch).await {
            tracing::warn!("could not record the plan: {e}");
        }
    }

    fn tool_message(
        &self,
        run: &Run,
        call: &ParsedToolCall,
        result: &ToolResult,
    ) -> ConversationMessage {
        let content = match result.status {
            // Text is the model's as it is (an MCP result), not a JSON string literal.
            ToolStatus::Success => output_text(&result.output),
            ToolStatus::Error => format!(
                "Error: {}",
                result.error.as_deref().unwrap_or("the tool failed")
            ),
        };
        let mut metadata = json!({
            "traceId": run.trace_id,
            TOOL_CALL_ID: result.call_id,
            TOOL_NAME: result.tool_name,
            TOOL_ARGUMENTS: call.arguments,
            "status": result.status,
        });
        if let Some(signature) = &call.signature {
            metadata[TOOL_SIGNATURE] = json!(signature);
        }
        ConversationMessage {
            message_id: clock::new_id(),
            thread_id: run.thread_id.clone(),
            role: MessageRole::Tool,
            content,
            timestamp: clock::now_ms(),
            status: MessageStatus::Complete,
            metadata,
        }
    }
}

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

fn tool_results_text(results: &[ToolResult]) -> String {
    if results.is_empty() {
        return "(no tools were used)".into();
    }
    results
        .iter()
        .map(|r| match r.status {
            ToolStatus::Success => format!(
                "- {} ({}): {}",
                r.tool_name,
                r.call_id,
                output_text(&r.output)
            ),
            ToolStatus::Error => format!(
                "- {} ({}) FAILED: {}",
                r.tool_name,
                r.call_id,
                r.error.as_deref().unwrap_or("")
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool's output as the model reads it: text as is, anything else as JSON.
fn output_text(output: &serde_json::Value) -> String {
    match output {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
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
fn history_budget(window: u64, system: &str, generation: &GenerationParams) -> u64 {
    let answer = generation
        .max_tokens
        .map_or(window / 4, u64::from)
        .min(window / 2);
    window
        .saturating_sub(answer)
        .saturating_sub(history::estimated_tokens(system))
}

fn run_error(code: FailureCode, message: impl Into<String>) -> RunError {
    RunError {
        code,
        message: message.into(),
    }
}

fn stage_error(error: &StreamError) -> RunError {
    run_error(error.code.clone(), error.message.clone())
}

#[async_trait::async_trait]
impl AgentCore for PesAgent {
    async fn process(
        &self,
        props: AgentProps,
        cancel: CancellationToken,
    ) -> Result<AgentFinalResponse, AgentError> {
        let query = props.query.trim();
        if query.is_empty() {
            return Err(AgentError::InvalidInput("the message is empty".into()));
        }
        if props.query.len() > MAX_QUERY_BYTES {
            return Err(AgentError::InvalidInput(format!(
                "the message is longer than {MAX_QUERY_BYTES} bytes"
            )));
        }
        let thread = self.conversation.thread(&props.thread_id).await?;
        let context = self.state.load_thread_context(&props.thread_id).await?;
        let mut run = Run {
            thread_id: props.thread_id.clone(),
            trace_id: props.trace_id.clone().unwrap_or_else(clock::new_id),
            root_span: clock::new_id(),
            run_start_ms: clock::now_ms(),
            started: Instant::now(),
            llm_calls: 0,
            tool_calls: 0,
            usage: TokenUsage::default(),
            planning_ms: None,
            execution_ms: None,
            synthesis_ms: None,
            tool_failed: false,
            question: None,
            history_left_out: 0,
        };

        // 1. The user's message is safe before anything can fail.
        let user = ConversationMessage {
            message_id: clock::new_id(),
            thread_id: run.thread_id.clone(),
            role: MessageRole::User,
            content: props.query.clone(),
            timestamp: clock::now_ms(),
            status: MessageStatus::Complete,
            metadata: json!({ "traceId": run.trace_id }),
        };
        self.conversation
            .add_messages(&run.thread_id, std::slice::from_ref(&user))
            .await?;
        run.question = Some(user);

        let provider = props
            .options
            .provider_config
            .clone()
            .unwrap_or_else(|| context.config.provider_config.clone());
        if provider.provider_name.trim().is_empty() || provider.model_id.trim().is_empty() {
            let error = run_error(
                FailureCode::ProviderNotConfigured,
                "choose a provider and a model in the thread settings",
            );
            return self.fail(&run, error, Phase::Planning, None).await;
        }

        // 2. Context for planning.
        let limit = props
            .options
            .history_limit
            .unwrap_or(context.config.history_limit)
            .max(1);
        let mut history = self
            .conversation
            .messages(
                &run.thread_id,
                MessageOptions {
                    limit: Some(limit as usize),
                    before: None,
                },
            )
            .await?;
        let window = context_window(&self.engine, &context.config, &provider).await;
        // The thread's level: its own text, else the library prompt it picked (a
        // deleted one is skipped, so the instance's applies).
        let picked = match &context.config.prompt_id {
            Some(id) => self.library.get(id).await?.map(|p| p.content),
            None => None,
        };
        let thread_prompt = context.config.system_prompt.clone().or(picked);
        let system = self.system_prompt(
            props.options.system_prompt.as_deref(),
            thread_prompt.as_deref(),
        );
        let schemas = self
            .tools
            .registry()
            .list_enabled(&context.config.enabled_tools);
        let values = HashMap::from([("tools", tools_list(&schemas))]);
        let planning_text = self
            .prompts
            .render("pes_planning", &values)
            .map_err(|e| AgentError::InvalidInput(e.to_string()))?;
        let planning_system = format!("{system}\n\n{planning_text}");
        if let Some(window) = window {
            let budget = history_budget(window, &planning_system, &context.config.generation);
            run.history_left_out = history::fit(&mut history, budget);
        }
        let mut planning_prompt = vec![PromptMessage::text(PromptRole::System, planning_system)];
        planning_prompt.extend(history::to_prompt(&history));

        // 3. Planning.
        let planning_span = clock::new_id();
        let planning_start_ms = clock::now_ms();
        let planning_started = Instant::now();
        let root = run.root_span.clone();
        let planned = self
            .llm_call(
                &mut run,
                &provider,
                &context.config.generation,
                planning_prompt,
                CallStage::Planning,
                Phase::Planning,
                &planning_span,
                None,
                &cancel,
            )
            .await;
        run.planning_ms = Some(ms_since(planning_started));
        match &planned.ending {
            Ending::Cancelled => {
                return self
                    .fail(
                        &run,
                        run_error(FailureCode::Cancelled, "the run was stopped"),
                        Phase::Planning,
                        None,
                    )
                    .await;
            }
            Ending::Failed(e) => {
                return self.fail(&run, stage_error(e), Phase::Planning, None).await;
            }
            Ending::Completed => {}
        }
        let mut plan = output_parser::parse_planning(&planned.text);
        if plan.tool_calls.is_empty() && !planned.tool_calls.is_empty() {
            plan.tool_calls = planned.tool_calls.clone();
        }
        if plan.thinking.is_none() && !planned.thinking.trim().is_empty() {
            plan.thinking = Some(planned.thinking.trim().to_owned());
        }
        self.record_plan(&run, &plan, &planning_span, planning_start_ms)
            .await;
        if let (Some(title), true) = (&plan.title, thread.title == UNTITLED)
            && let Err(e) = self.conversation.rename_thread(&run.thread_id, title).await
        {
            tracing::debug!("could not title the thread: {e}");
        }

        // 4. Tools, in order.
        let mut results = Vec::new();
        let state = Arc::new(Mutex::new(context.state.clone()));
        if !plan.tool_calls.is_empty() {
            let execution_started = Instant::now();
            let exec = ExecutionContext {
                thread_id: run.thread_id.clone(),
                trace_id: run.trace_id.clone(),
                state: Arc::clone(&state),
            };
            results = tokio::select! {
                biased;
                () = cancel.cancelled() => return self.fail(&run, run_error(FailureCode::Cancelled, "the run was stopped"), Phase::Execution, None).await,
                results = self.tools.execute_tools(&plan.tool_calls, &context.config.enabled_tools, &exec, Some(&root)) => results,
            };
            run.execution_ms = Some(ms_since(execution_started));
            run.tool_calls = u32::try_from(results.len()).unwrap_or(u32::MAX);
            run.tool_failed = results.iter().any(|r| r.status == ToolStatus::Error);
            let messages: Vec<_> = plan
                .tool_calls
                .iter()
                .zip(&results)
                .map(|(c, r)| self.tool_message(&run, c, r))
                .collect();
            self.conversation
                .add_messages(&run.thread_id, &messages)
                .await?;
            let new_state: AgentState = state.lock().await.clone();
            if new_state != context.state {
                self.state
                    .set_agent_state(&run.thread_id, &new_state)
                    .await?;
                self.record(run.obs(
                    ObservationType::StateUpdate,
                    json!({ "keys": new_state.data.keys().collect::<Vec<_>>() }),
                    run.span(Phase::Execution, &root, None, run.run_start_ms, false),
                ))
                .await;
            }
        }

        // 5. Synthesis.
        let synth_values = HashMap::from([
            (
                "intent",
                plan.intent.clone().unwrap_or_else(|| "(not stated)".into()),
            ),
            ("plan", plan.plan.clone().unwrap_or_else(|| "(none)".into())),
            ("tool_results", tool_results_text(&results)),
        ]);
        let synthesis_text = self
            .prompts
            .render("pes_synthesis", &synth_values)
            .map_err(|e| AgentError::InvalidInput(e.to_string()))?;
        let synthesis_system = format!("{system}\n\n{synthesis_text}");
        let mut history_now = self
            .conversation
            .messages(
                &run.thread_id,
                MessageOptions {
                    limit: Some(limit as usize + results.len()),
                    before: None,
                },
            )
            .await?;
        if let Some(window) = window {
            let budget = history_budget(window, &synthesis_system, &context.config.generation);
            let left_out = history::fit(&mut history_now, budget);
            run.history_left_out = run.history_left_out.max(left_out);
        }
        let mut synthesis_prompt = vec![PromptMessage::text(PromptRole::System, synthesis_system)];
        synthesis_prompt.extend(history::to_prompt(&history_now));
        let answer = ConversationMessage {
            message_id: clock::new_id(),
            thread_id: run.thread_id.clone(),
            role: MessageRole::Ai,
            content: String::new(),
            timestamp: clock::now_ms(),
            status: MessageStatus::Streaming,
            metadata: json!({ "traceId": run.trace_id, "provider": provider.provider_name, "model": provider.model_id }),
        };
        let synthesis_span = clock::new_id();
        let synthesis_start_ms = clock::now_ms();
        let synthesis_started = Instant::now();
        let synthesized = self
            .llm_call(
                &mut run,
                &provider,
                &context.config.generation,
                synthesis_prompt,
                CallStage::Synthesis,
                Phase::Synthesis,
                &synthesis_span,
                Some(answer.clone()),
                &cancel,
            )
            .await;
        run.synthesis_ms = Some(ms_since(synthesis_started));
        let mut partial = answer.clone();
        partial.content = synthesized.text.clone();
        match &synthesized.ending {
            Ending::Cancelled => {
                return self
                    .fail(
                        &run,
                        run_error(FailureCode::Cancelled, "the run was stopped"),
                        Phase::Synthesis,
                        Some(partial),
                    )
                    .await;
            }
            Ending::Failed(e) => {
                return self
                    .fail(&run, stage_error(e), Phase::Synthesis, Some(partial))
                    .await;
            }
            Ending::Completed => {}
        }
        let (text, _) = output_parser::parse_synthesis(&synthesized.text);
        let mut synthesis_obs = run.obs(
            ObservationType::Synthesis,
            json!({ "length": text.len() }),
            run.span(
                Phase::Synthesis,
                &synthesis_span,
                Some(&root),
                synthesis_start_ms,
                true,
            ),
        );
        synthesis_obs.metadata =
            json!({ "provider": provider.provider_name, "model": provider.model_id });
        self.record(synthesis_obs).await;

        // 6. Finalise.
        let status = if run.tool_failed {
            RunStatus::Partial
        } else {
            RunStatus::Success
        };
        let mut final_message = answer;
        final_message.content = text;
        final_message.status = MessageStatus::Complete;
        final_message.metadata = json!({
            "traceId": run.trace_id,
            "provider": provider.provider_name,
            "model": provider.model_id,
            "usage": synthesized.metadata,
            "status": status,
        });
        self.conversation
            .add_messages(&run.thread_id, std::slice::from_ref(&final_message))
            .await?;
        let final_state = state.lock().await.clone();
        if self
            .state
            .save_state_if_modified(&run.thread_id, &final_state)
            .await?
        {
            self.record(run.obs(
                ObservationType::StateUpdate,
                json!({ "implicit": true }),
                None,
            ))
            .await;
        }
        let metadata = run.metadata(status, None);
        let root_span = run.span(Phase::Run, &root, None, run.run_start_ms, true);
        self.record(run.obs(
            ObservationType::FinalResponse,
            json!({ "messageId": final_message.message_id, "metadata": metadata }),
            root_span,
        ))
        .await;
        Ok(AgentFinalResponse {
            response: final_message,
            metadata,
        })
    }
}
