//! Streaming events from LLM calls (ART's `StreamEvent`) and LLM call metadata.

use serde::{Deserialize, Serialize};

use crate::FailureCode;
use crate::tool::ParsedToolCall;

/// What a token is: thinking or answer, and from which stage of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TokenType {
    /// Thinking from an LLM call outside the agent stages.
    LlmThinking,
    /// Answer text from an LLM call outside the agent stages.
    LlmResponse,
    /// Thinking during planning.
    AgentThoughtLlmThinking,
    /// Planning output text.
    AgentThoughtLlmResponse,
    /// Thinking during synthesis.
    FinalSynthesisLlmThinking,
    /// The final answer text, as it streams.
    FinalSynthesisLlmResponse,
}

impl TokenType {
    /// Whether this is thinking (as opposed to response text).
    pub fn is_thinking(self) -> bool {
        matches!(
            self,
            Self::LlmThinking | Self::AgentThoughtLlmThinking | Self::FinalSynthesisLlmThinking
        )
    }
}

/// Usage and timing of one LLM call (ART's `LLMMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmMetadata {
    /// Prompt tokens, those the provider read from or wrote to its prompt cache included
    /// (as OpenTelemetry's `gen_ai.usage.input_tokens` counts them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Of the prompt tokens, those read from the provider's prompt cache (billed lower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Of the prompt tokens, those written to the provider's prompt cache (Anthropic:
    /// billed higher).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Reasoning tokens, where the provider reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
    /// Milliseconds from request to the first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<u64>,
    /// Milliseconds from request to the end of the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_generation_time_ms: Option<u64>,
    /// What the provider charged for the call, as it reports it (OpenRouter: its usage
    /// says, in US dollars), in billionths of a US dollar. Never estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_nanos: Option<u64>,
    /// Why generation stopped (`stop`, `length`, `tool_calls`, ...), as the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Opaque signature of the thinking (Anthropic), needed to send that thinking back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_signature: Option<String>,
    /// The model that answered, as the provider names it in its reply (OpenAI-compatible
    /// `model`, Anthropic's `message.model`, Gemini's `modelVersion`, Ollama's `model`):
    /// often more precise than the one asked for (a dated version, the model an
    /// OpenRouter route chose). OpenTelemetry's `gen_ai.response.model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
}

impl LlmMetadata {
    /// Whether the call stopped because it reached its token limit (each provider's
    /// word for it: OpenAI's and Ollama's `length`, Anthropic's `max_tokens`, Gemini's
    /// `MAX_TOKENS`): what it wrote is cut off.
    pub fn ran_out_of_tokens(&self) -> bool {
        self.stop_reason
            .as_deref()
            .is_some_and(|r| matches!(r.to_ascii_lowercase().as_str(), "length" | "max_tokens"))
    }

    /// Take what a later report of the same call says, keeping what it leaves out
    /// (providers report usage in pieces: the prompt at the start, the rest at the end).
    pub fn merge(&mut self, later: LlmMetadata) {
        // Destructured whole: a new field cannot be forgotten here.
        let LlmMetadata {
            input_tokens,
            cached_input_tokens,
            cache_write_tokens,
            output_tokens,
            thinking_tokens,
            time_to_first_token_ms,
            total_generation_time_ms,
            cost_nanos,
            stop_reason,
            reasoning_signature,
            response_model,
        } = later;
        self.input_tokens = input_tokens.or(self.input_tokens);
        self.cached_input_tokens = cached_input_tokens.or(self.cached_input_tokens);
        self.cache_write_tokens = cache_write_tokens.or(self.cache_write_tokens);
        self.output_tokens = output_tokens.or(self.output_tokens);
        self.thinking_tokens = thinking_tokens.or(self.thinking_tokens);
        self.time_to_first_token_ms = time_to_first_token_ms.or(self.time_to_first_token_ms);
        self.total_generation_time_ms = total_generation_time_ms.or(self.total_generation_time_ms);
        self.cost_nanos = cost_nanos.or(self.cost_nanos);
        self.stop_reason = stop_reason.or(self.stop_reason.take());
        self.reasoning_signature = reasoning_signature.or(self.reasoning_signature.take());
        self.response_model = response_model.or(self.response_model.take());
    }
}

/// Class of an LLM call failure: decides retry and what the user is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Wrong or missing credentials.
    Auth,
    /// Too many requests or quota.
    RateLimited,
    /// Network trouble or a 5xx: may work if tried again.
    Transient,
    /// A request the provider will never accept.
    Permanent,
    /// The prompt is longer than the model's context.
    ContextLength,
    /// The user or the app stopped it.
    Cancelled,
}

/// What went wrong in a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamError {
    /// Class (retry policy and user message follow from it).
    pub class: ErrorClass,
    /// Stable code, e.g. `RATE_LIMITED`.
    pub code: FailureCode,
    /// The message, keeping the provider's own words where it gave some.
    pub message: String,
}

/// Body of a stream event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StreamEventKind {
    /// A piece of text.
    Token {
        /// The text.
        text: String,
        /// Thinking or answer, and the stage.
        #[serde(rename = "tokenType")]
        token_type: TokenType,
    },
    /// A complete tool call requested natively by the model (streamed deltas aggregated).
    ToolCall(ParsedToolCall),
    /// Usage and timing.
    Metadata(LlmMetadata),
    /// The stream failed; no more events follow.
    Error(StreamError),
    /// The stream ended normally.
    End,
}

/// One event of an LLM stream, addressed to a thread and run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamEvent {
    /// Thread of the run.
    pub thread_id: String,
    /// Run (trace) id.
    pub trace_id: String,
    /// A token, a tool call, usage, an error or the end (flattened: `type` and `data`).
    #[serde(flatten)]
    pub kind: StreamEventKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_events_have_art_wire_shape() {
        let ev = StreamEvent {
            thread_id: "t".into(),
            trace_id: "r".into(),
            kind: StreamEventKind::Token {
                text: "Hi".into(),
                token_type: TokenType::FinalSynthesisLlmResponse,
            },
        };
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["type"], "TOKEN");
        assert_eq!(json["data"]["tokenType"], "FINAL_SYNTHESIS_LLM_RESPONSE");
        assert_eq!(serde_json::from_value::<StreamEvent>(json).unwrap(), ev);
        let end = serde_json::to_value(StreamEventKind::End).unwrap();
        assert_eq!(end, serde_json::json!({"type": "END"}));
    }

    #[test]
    fn thinking_classification() {
        assert!(TokenType::AgentThoughtLlmThinking.is_thinking());
        assert!(!TokenType::FinalSynthesisLlmResponse.is_thinking());
    }
}
