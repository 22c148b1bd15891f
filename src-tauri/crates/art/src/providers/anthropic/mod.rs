//! Anthropic Messages over SSE: `system` as a top-level field, strictly alternating
//! user / assistant turns (consecutive same-role messages merged), tool results as
//! `tool_result` blocks in a user turn (`is_error` on failed ones) — as text in a
//! request that offers no tools, which the API requires —, thinking blocks sent back
//! with their signature.
//! Streams text, thinking, signatures and `tool_use` input assembled from
//! `input_json_delta` fragments; `ping` and unknown events are ignored; an `error` event
//! after HTTP 200 ends the stream with that error; no `message_stop` is an interruption.

use std::collections::BTreeMap;

use art_types::{
    ErrorClass, FailureCode, LlmMetadata, ParsedToolCall, Prompt, PromptMessage, PromptRole,
    StreamEventKind, TokenType,
};
use serde_json::{Value, json};

use super::http::{self, HttpOptions};
use super::request::{images_base64, push_merged, user_text};
use super::sse::{SseDecoder, interrupted, sse_stream};
use super::stream::{error_event, parse_chunk};
use crate::reasoning::provider::{CallOptions, EventStream, ProviderAdapter, ProviderError};
use crate::reasoning::text_form;
use crate::secrets::Secret;

/// Default base URL (with the API version path).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The API version header value this adapter speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is used when the thread sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Where and how to reach Anthropic.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Base URL including the version, e.g. `https://api.anthropic.com/v1`.
    pub base_url: String,
    /// API key (sent as `x-api-key`).
    pub api_key: Secret,
    /// Extended thinking budget in tokens (≥ 1024), or `None` for no thinking.
    pub thinking_budget: Option<u32>,
    /// Timeouts and retries.
    pub http: HttpOptions,
}

/// The adapter.
pub struct AnthropicAdapter {
    config: AnthropicConfig,
    client: reqwest::Client,
}

impl AnthropicAdapter {
    /// An adapter for `config`.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let client = http::client(&config.http)?;
        Ok(Self { config, client })
    }
}

/// The standard prompt as (`system`, `messages`).
pub fn translate(prompt: &[PromptMessage]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<Value> = Vec::new();
    let text = |t: &str| (!t.is_empty()).then(|| json!({ "type": "text", "text": t }));
    for m in prompt {
        match m.role {
            PromptRole::System => system.push(&m.content),
            PromptRole::User => {
                // Images first, then the text (as Anthropic's documentation advises).
                let mut blocks: Vec<Value> = images_base64(m)
                    .map(|(image, data)| {
                        json!({ "type": "image", "source": {
                            "type": "base64", "media_type": image.mime, "data": data,
                        } })
                    })
                    .collect();
                blocks.extend(text(&user_text(m)));
                push_merged(&mut turns, "user", "content", blocks);
            }
            PromptRole::Assistant | PromptRole::ToolRequest => {
                let mut blocks = Vec::new();
                // Unsigned thinking would be rejected; only signed blocks go back.
                if let Some(r) = &m.reasoning
                    && let Some(signature) = &r.signature
                {
                    blocks.push(
                        json!({ "type": "thinking", "thinking": r.text, "signature": signature }),
                    );
                }
                blocks.extend(text(&m.content));
                for call in &m.tool_calls {
                    let input: Value = serde_json::from_str(&call.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(json!({ "type": "tool_use", "id": call.id, "name": call.function.name, "input": input }));
                }
                push_merged(&mut turns, "assistant", "content", blocks);
            }
            PromptRole::ToolResult => {
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                    "content": m.content,
                });
                if m.is_error {
                    block["is_error"] = json!(true);
                }
                push_merged(&mut turns, "user", "content", vec![block]);
            }
        }
    }
    // The first turn must be the user's.
    if turns.first().is_some_and(|t| t["role"] == "assistant") {
        let start =
            json!({ "role": "user", "content": [{ "type": "text", "text": "(continued)" }] });
        turns.insert(0, start);
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

/// The request body of a streaming call.
pub fn request_body(
    prompt: &[PromptMessage],
    options: &CallOptions,
    thinking: Option<u32>,
) -> Value {
    // The API refuses `tool_use` / `tool_result` blocks in a request without `tools`
    // (a synthesis call after tool calls): there they go as text.
    let (system, messages) = if options.tools.is_empty() && text_form::has_native_calls(prompt) {
        translate(&text_form::calls_as_text(prompt.to_vec()))
    } else {
        translate(prompt)
    };
    let generation = &options.generation;
    let mut max_tokens = generation.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({ "model": options.model_id, "messages": messages, "stream": true });
    if let Some(system) = system {
        body["system"] = json!(system);
    }
    match thinking {
        Some(budget) => {
            let budget = budget.max(1024);
            // The answer needs room beyond the thinking budget.
            if max_tokens <= budget {
                max_tokens = budget + DEFAULT_MAX_TOKENS;
            }
            body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
            // Sampling parameters are fixed while thinking is on.
        }
        None => {
            if let Some(t) = generation.temperature {
                body["temperature"] = json!(t.min(1.0));
            }
            if let Some(p) = generation.top_p {
                body["top_p"] = json!(p);
            }
        }
    }
    body["max_tokens"] = json!(max_tokens);
    if !options.tools.is_empty() {
        body["tools"] = options
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
            .collect();
    }
    body
}

/// A `tool_use` block being received.
struct PendingTool {
    id: String,
    name: String,
    /// `input` of `content_block_start` (normally `{}`) until JSON fragments arrive.
    start_input: Value,
    json: String,
}

/// Decodes Anthropic's event stream.
#[derive(Default)]
pub struct Decoder {
    tools: BTreeMap<u64, PendingTool>,
    metadata: LlmMetadata,
}

fn error_class(kind: &str) -> ErrorClass {
    match kind {
        "rate_limit_error" => ErrorClass::RateLimited,
        "authentication_error" | "permission_error" => ErrorClass::Auth,
        "overloaded_error" | "api_error" | "timeout_error" => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

impl Decoder {
    fn block_stop(&mut self, index: u64) -> Vec<StreamEventKind> {
        let Some(tool) = self.tools.remove(&index) else {
            return Vec::new();
        };
        let arguments = if tool.json.trim().is_empty() {
            tool.start_input
        } else {
            // Unparseable input stays visible as a string; validation reports it.
            serde_json::from_str(&tool.json).unwrap_or(Value::String(tool.json))
        };
        vec![StreamEventKind::ToolCall(ParsedToolCall {
            call_id: tool.id,
            tool_name: tool.name,
            arguments,
            signature: None,
        })]
    }

    fn delta(&mut self, index: u64, delta: &Value) -> Vec<StreamEventKind> {
        let field = |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default();
        let token = |text: &str, token_type| {
            (!text.is_empty())
                .then(|| StreamEventKind::Token {
                    text: text.to_owned(),
                    token_type,
                })
                .into_iter()
                .collect()
        };
        match field("type") {
            "text_delta" => token(field("text"), TokenType::LlmResponse),
            "thinking_delta" => token(field("thinking"), TokenType::LlmThinking),
            "signature_delta" => {
                let signature = self.metadata.reasoning_signature.get_or_insert_default();
                signature.push_str(field("signature"));
                Vec::new()
            }
            "input_json_delta" => {
                if let Some(tool) = self.tools.get_mut(&index) {
                    tool.json.push_str(field("partial_json"));
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Anthropic counts the prompt in three parts: `input_tokens` (after the last cache
    /// breakpoint), `cache_read_input_tokens` and `cache_creation_input_tokens`. The
    /// input recorded is their sum, with the cached parts kept apart.
    fn usage(&mut self, usage: Option<&Value>) {
        let get = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
        let read = get("cache_read_input_tokens").or(self.metadata.cached_input_tokens);
        let written = get("cache_creation_input_tokens").or(self.metadata.cache_write_tokens);
        if let Some(n) = get("input_tokens") {
            self.metadata.input_tokens = Some(n + read.unwrap_or(0) + written.unwrap_or(0));
            self.metadata.cached_input_tokens = read;
            self.metadata.cache_write_tokens = written;
        }
        if let Some(n) = get("output_tokens") {
            self.metadata.output_tokens = Some(n);
        }
    }

    /// One event's payload decoded (its `type` names the event, as the `event:` line does).
    fn decode(&mut self, data: &str) -> Vec<StreamEventKind> {
        let event = match parse_chunk("Anthropic", data) {
            Ok(v) => v,
            Err(events) => return events,
        };
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        // The payload's `type` names the event (the `event:` line says the same).
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                self.usage(event.pointer("/message/usage"));
                self.metadata.response_model = event
                    .pointer("/message/model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Vec::new()
            }
            "content_block_start" => {
                let block = &event["content_block"];
                if block["type"] == "tool_use" {
                    let text = |k: &str| block[k].as_str().unwrap_or_default().to_owned();
                    let start_input = Some(block["input"].clone())
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    let tool = PendingTool {
                        id: text("id"),
                        name: text("name"),
                        start_input,
                        json: String::new(),
                    };
                    self.tools.insert(index, tool);
                }
                Vec::new()
            }
            "content_block_delta" => self.delta(index, &event["delta"]),
            "content_block_stop" => self.block_stop(index),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.metadata.stop_reason = Some(reason.to_owned());
                }
                self.usage(event.get("usage"));
                Vec::new()
            }
            "message_stop" => vec![
                StreamEventKind::Metadata(std::mem::take(&mut self.metadata)),
                StreamEventKind::End,
            ],
            "error" => {
                let kind = event
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("Anthropic reported an error");
                let code = if kind == "overloaded_error" {
                    FailureCode::ProviderOverloaded
                } else {
                    FailureCode::ProviderStreamError
                };
                vec![error_event(
                    error_class(kind),
                    code,
                    format!("{kind}: {message}"),
                )]
            }
            // `ping` and event types added after this adapter was written.
            _ => Vec::new(),
        }
    }
}

impl SseDecoder for Decoder {
    fn event(&mut self, _name: &str, data: &str, out: &mut Vec<StreamEventKind>) {
        out.extend(self.decode(data));
    }

    fn end_of_stream(&mut self) -> Vec<StreamEventKind> {
        vec![interrupted()]
    }

    /// A complete Messages response, replayed as the events a stream of it carries.
    fn whole(&mut self, body: &str) -> Vec<StreamEventKind> {
        let message = match parse_chunk("Anthropic", body) {
            Ok(message) => message,
            Err(events) => return events,
        };
        if message.get("type").and_then(Value::as_str) != Some("message") {
            return self.decode(body); // an error object, or something unknown
        }
        let mut events = vec![json!({
            "type": "message_start",
            "message": { "usage": message["usage"], "model": message["model"] },
        })];
        let blocks = message["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (index, block) in blocks.iter().enumerate() {
            let (start, deltas) = match block["type"].as_str() {
                Some("text") => (
                    json!({ "type": "text", "text": "" }),
                    vec![json!({ "type": "text_delta", "text": block["text"] })],
                ),
                Some("thinking") => (
                    json!({ "type": "thinking", "thinking": "" }),
                    std::iter::once(
                        json!({ "type": "thinking_delta", "thinking": block["thinking"] }),
                    )
                    .chain(block["signature"].as_str().map(
                        |signature| json!({ "type": "signature_delta", "signature": signature }),
                    ))
                    .collect(),
                ),
                Some("tool_use") => (
                    json!({ "type": "tool_use", "id": block["id"], "name": block["name"], "input": {} }),
                    vec![
                        json!({ "type": "input_json_delta", "partial_json": block["input"].to_string() }),
                    ],
                ),
                _ => continue,
            };
            events.push(
                json!({ "type": "content_block_start", "index": index, "content_block": start }),
            );
            for delta in deltas {
                events
                    .push(json!({ "type": "content_block_delta", "index": index, "delta": delta }));
            }
            events.push(json!({ "type": "content_block_stop", "index": index }));
        }
        events.push(json!({
            "type": "message_delta",
            "delta": { "stop_reason": message["stop_reason"] },
            "usage": message["usage"],
        }));
        events.push(json!({ "type": "message_stop" }));
        events
            .iter()
            .flat_map(|event| self.decode(&event.to_string()))
            .collect()
    }
}

#[async_trait::async_trait]
impl ProviderAdapter for AnthropicAdapter {
    fn provider_name(&self) -> &str {
        "anthropic"
    }

    async fn call(
        &self,
        prompt: &Prompt,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let url = http::join(&self.config.base_url, "messages");
        let body = request_body(prompt, options, self.config.thinking_budget);
        let response = http::send_with_retries(&self.config.http, || {
            self.client
                .post(&url)
                .header("x-api-key", self.config.api_key.expose())
                .header("anthropic-version", API_VERSION)
                .header("Accept", "text/event-stream")
                .header("Accept-Encoding", "identity")
                .json(&body)
        })
        .await?;
        Ok(sse_stream(
            response,
            self.config.http.idle_timeout,
            Decoder::default(),
        ))
    }
}

#[cfg(test)]
mod tests;
