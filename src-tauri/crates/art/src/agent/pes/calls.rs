//! What every phase of a run does the same way: one LLM call with its LLM_STREAM_*
//! observations, recording an observation, ending a run that failed, and the TOOL
//! message a tool result is kept as.

use std::sync::Arc;

use art_types::record::ErrorContent;
use art_types::{
    AgentFinalResponse, ConversationMessage, ErrorClass, FailureCode, GenerationParams,
    MessageRole, MessageStatus, ObservationType, ParsedToolCall, Phase, PromptMessage,
    ProviderConfig, RunError, StreamError, ToolCalling, ToolResult, ToolSchema, ToolStatus,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::AgentError;
use super::super::streaming::{self, Ending, StageResult, StageSinks};
use super::PesAgent;
use super::run::Run;
use crate::clock;
use crate::observation::NewObservation;
use crate::reasoning::prompts;
use crate::reasoning::provider::{CallOptions, CallStage};
use art_types::message::{TOOL_ARGUMENTS, TOOL_CALL_ID, TOOL_NAME, TOOL_SIGNATURE};

/// One LLM call: what it asks, where its spans go.
pub(super) struct Call<'a> {
    pub provider: &'a ProviderConfig,
    pub generation: &'a GenerationParams,
    pub prompt: Vec<PromptMessage>,
    pub stage: CallStage,
    pub phase: Phase,
    pub parent_span: &'a str,
    /// Tools offered natively (empty: none).
    pub tools: Vec<ToolSchema>,
    /// The answer message to checkpoint while it streams (synthesis).
    pub checkpoint: Option<ConversationMessage>,
    /// The JSON Schema the answer must follow (the plan), as structured output.
    pub schema: Option<serde_json::Value>,
}

fn ended(ending: Ending) -> StageResult {
    StageResult {
        ending,
        text: String::new(),
        thinking: String::new(),
        metadata: Default::default(),
        tool_calls: Vec::new(),
        first_token_ms: None,
    }
}

pub(super) fn run_error(code: FailureCode, message: impl Into<String>) -> RunError {
    RunError {
        code,
        message: message.into(),
    }
}

pub(super) fn stopped() -> RunError {
    run_error(FailureCode::Cancelled, "the run was stopped")
}

pub(super) fn stage_error(error: &StreamError) -> RunError {
    run_error(error.code.clone(), error.message.clone())
}

/// A tool's output as the model reads it: text as is, anything else as JSON.
pub(super) fn output_text(output: &serde_json::Value) -> String {
    match output {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl PesAgent {
    pub(super) async fn record(&self, obs: NewObservation) {
        if let Err(e) = self.observations.record(obs).await {
            tracing::warn!("could not record an observation: {e}");
        }
    }

    /// One LLM call with its LLM_STREAM_* observations.
    pub(super) async fn llm_call(
        &self,
        run: &mut Run,
        mut call: Call<'_>,
        cancel: &CancellationToken,
    ) -> StageResult {
        // In the text form (asked for, or a server that refused tools), calls already
        // made go as text too: never `tool_calls` and `tool` messages to such a server.
        if run.tool_calling == ToolCalling::Text {
            call.prompt = crate::reasoning::text_form::calls_as_text(call.prompt);
        }
        let span_id = clock::new_id();
        let start_ms = clock::now_ms();
        let (phase, parent, stage) = (call.phase, call.parent_span, call.stage);
        let model =
            json!({ "provider": call.provider.provider_name, "model": call.provider.model_id });
        let mut start = run.obs(
            ObservationType::LlmStreamStart,
            json!({
                "stage": format!("{:?}", call.stage).to_lowercase(),
                "input": crate::observation::sent::messages(&call.prompt),
            }),
            run.span(phase, &span_id, Some(parent), start_ms, false),
        );
        start.metadata = model.clone();
        self.record(start).await;
        run.llm_calls += 1;
        let options = CallOptions {
            thread_id: run.thread_id.clone(),
            trace_id: run.trace_id.clone(),
            stage: call.stage,
            model_id: call.provider.model_id.clone(),
            generation: call.generation.clone(),
            tools: call.tools,
            response_schema: call.schema,
        };
        let outcome = match prompts::validate(&call.prompt) {
            Err(e) => Err(StreamError {
                class: ErrorClass::Permanent,
                code: FailureCode::InvalidPrompt,
                message: e.to_string(),
            }),
            Ok(()) => tokio::select! {
                biased;
                () = cancel.cancelled() => Err(StreamError {
                    class: ErrorClass::Cancelled,
                    code: FailureCode::Cancelled,
                    message: "the run was stopped".into(),
                }),
                started = self.engine.call(call.provider, &call.prompt, &options) => started.map_err(|e| e.into_stream_error()),
            },
        };
        let result = match outcome {
            Ok(stream) => {
                let sinks = StageSinks {
                    sockets: &self.sockets,
                    observations: &self.observations,
                    thread_id: &run.thread_id,
                    trace_id: &run.trace_id,
                    checkpoint: call.checkpoint.map(|m| (Arc::clone(&self.conversation), m)),
                };
                streaming::consume(stream, call.stage, sinks, cancel).await
            }
            Err(error) if error.class == ErrorClass::Cancelled => ended(Ending::Cancelled),
            Err(error) => ended(Ending::Failed(error)),
        };
        run.add_usage(&result);
        if result.metadata != Default::default() {
            let mut meta = run.obs(
                ObservationType::LlmStreamMetadata,
                json!(result.metadata),
                run.span(phase, &span_id, Some(parent), start_ms, false),
            );
            meta.metadata = model.clone();
            self.record(meta).await;
        }
        let span = run.span(phase, &span_id, Some(parent), start_ms, true);
        let mut end = match &result.ending {
            Ending::Failed(error) => run.obs(
                ObservationType::LlmStreamError,
                json!({ "code": error.code, "class": error.class, "message": error.message }),
                span,
            ),
            _ => {
                let mut content = json!({ "metadata": result.metadata, "cancelled": matches!(result.ending, Ending::Cancelled) });
                // What a planning or step call answered (the answer's is the answer
                // message): every model call's output reaches its trace span.
                if stage != CallStage::Synthesis {
                    content["output"] = crate::observation::sent::answered(
                        &result.text,
                        &result.tool_calls,
                        result.metadata.stop_reason.as_deref(),
                    );
                }
                run.obs(ObservationType::LlmStreamEnd, content, span)
            }
        };
        end.metadata = model;
        self.record(end).await;
        result
    }

    /// End the run with an error (or cancellation), keeping any partial answer.
    pub(super) async fn fail(
        &self,
        run: &Run,
        error: RunError,
        phase: Phase,
        partial: Option<ConversationMessage>,
    ) -> Result<AgentFinalResponse, AgentError> {
        let mut obs = run.obs(
            ObservationType::Error,
            json!(ErrorContent {
                code: error.code.clone(),
                message: Some(error.message.clone()),
                phase: Some(phase),
                problems: Vec::new(),
            }),
            run.span(phase, &run.root_span, None, run.run_start_ms, false),
        );
        obs.title = Some(if error.code == FailureCode::Cancelled {
            "Run stopped".into()
        } else {
            "Run failed".into()
        });
        self.record(obs).await;
        // A question left without any answer — failed, or stopped before a word of the
        // answer (`art stop` on a waiting run, Stop during planning) — is marked, so it
        // shows as not answered (with Retry) and is left out of later questions.
        let answered = partial.as_ref().is_some_and(|m| !m.content.is_empty());
        if !answered {
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
                parent_id: run.tip.clone(),
                attachments: Vec::new(),
            },
        };
        Ok(AgentFinalResponse {
            response,
            metadata: run.metadata(art_types::RunStatus::Error, Some(error)),
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
}

/// A tool result as the `TOOL` message history keeps (and later prompts replay).
pub(super) fn tool_message(
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
        parent_id: run.tip.clone(),
        attachments: Vec::new(),
    }
}
