//! OpenAI Chat Completions over SSE (also the wire of DeepSeek and OpenRouter): the
//! standard prompt translated faithfully (tool calls and results linked by id), text,
//! reasoning (`reasoning_content` / `reasoning`), tool-call deltas aggregated by index,
//! usage from the trailing chunk, mid-stream `{"error"}` objects, and a stream that
//! ends without `[DONE]` reported as interrupted. Dropping the stream aborts the request.

use std::collections::BTreeMap;

use art_types::{
    ErrorClass, FailureCode, LlmMetadata, ParsedToolCall, Prompt, PromptMessage, PromptRole,
    StreamEventKind, TokenType,
};
use serde_json::{Value, json};

use super::http::{self, HttpOptions};
use super::request;
use super::sse::{SseDecoder, interrupted, sse_stream};
use super::stream::{error_event, parse_chunk};
use crate::reasoning::provider::{CallOptions, EventStream, ProviderAdapter, ProviderError};
use crate::secrets::Secret;

mod fast;

/// Where and how to reach an OpenAI-compatible API.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Provider name (`openai`, `deepseek`, `openrouter`).
    pub name: String,
    /// Base URL including the version, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// API key.
    pub api_key: Option<Secret>,
    /// Extra headers (OpenRouter: `HTTP-Referer`, `X-Title`).
    pub extra_headers: Vec<(String, String)>,
    /// Timeouts and retries.
    pub http: HttpOptions,
}

/// The adapter.
pub struct OpenAiAdapter {
    config: OpenAiConfig,
    client: reqwest::Client,
}

impl OpenAiAdapter {
    /// An adapter for `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let client = http::client(&config.http)?;
        Ok(Self { config, client })
    }
}

/// The standard prompt as Chat Completions messages.
pub fn translate(prompt: &Prompt) -> Vec<Value> {
    prompt
        .iter()
        .map(|m| match m.role {
            PromptRole::System => json!({ "role": "system", "content": m.content }),
            PromptRole::User => user_message(m),
            PromptRole::Assistant | PromptRole::ToolRequest => {
                let mut msg = json!({ "role": "assistant", "content": m.content });
                if !m.tool_calls.is_empty() {
                    if m.content.is_empty() {
                        msg["content"] = Value::Null;
                    }
                    // Built field by field: a signature from another provider stays out.
                    msg["tool_calls"] = m
                        .tool_calls
                        .iter()
                        .map(|c| json!({ "id": c.id, "type": "function", "function": c.function }))
                        .collect();
                }
                msg
            }
            PromptRole::ToolResult => json!({
                "role": "tool",
                "tool_call_id": m.tool_call_id,
                "name": m.name,
                "content": m.content,
            }),
        })
        .collect()
}

/// A user message: its text, or with images a list of parts — the text, then each image
/// as an `image_url` with a data URL.
fn user_message(m: &PromptMessage) -> Value {
    let text = request::user_text(m);
    if m.images.is_empty() {
        return json!({ "role": "user", "content": text });
    }
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({ "type": "text", "text": text }));
    }
    for (image, data) in request::images_base64(m) {
        let url = format!("data:{};base64,{data}", image.mime);
        parts.push(json!({ "type": "image_url", "image_url": { "url": url } }));
    }
    json!({ "role": "user", "content": parts })
}

/// The request body of a streaming call.
pub fn request_body(prompt: &Prompt, options: &CallOptions) -> Value {
    let mut body = json!({
        "model": options.model_id,
        "messages": translate(prompt),
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    let generation = &options.generation;
    if let Some(t) = generation.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = generation.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(n) = generation.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if !options.tools.is_empty() {
        body["tools"] = request::function_tools(&options.tools);
    }
    // Structured output (OpenAI, OpenRouter, llama.cpp's server, vLLM). Not strict: a
    // strict schema may not leave an object open, and a tool's arguments are one.
    if let Some(schema) = &options.response_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": { "name": "response", "schema": schema },
        });
    }
    body
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Chunk decoder: feed each `data:` payload; call `finish` at `[DONE]`.
#[derive(Default)]
pub struct Decoder {
    calls: BTreeMap<u64, PartialCall>,
    metadata: LlmMetadata,
}

impl Decoder {
    /// Decode one chunk, appending its events to `out`.
    pub fn feed(&mut self, data: &str, out: &mut Vec<StreamEventKind>) {
        // Most chunks carry a piece of text and nothing else: no JSON tree for those.
        if let Some(plain) = fast::plain(data) {
            if let Some(reason) = plain.finish_reason {
                self.metadata.stop_reason = Some(reason.into_owned());
            }
            if self.metadata.response_model.is_none()
                && let Some(model) = plain.model.filter(|m| !m.is_empty())
            {
                self.metadata.response_model = Some(model.into_owned());
            }
            if let Some(text) = plain.text.filter(|t| !t.is_empty()) {
                out.push(StreamEventKind::Token {
                    text: text.into_owned(),
                    token_type: TokenType::LlmResponse,
                });
            }
            return;
        }
        let chunk = match parse_chunk("the provider", data) {
            Ok(v) => v,
            Err(events) => {
                out.extend(events);
                return;
            }
        };
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the provider reported an error")
                .to_owned();
            out.push(error_event(
                ErrorClass::Transient,
                FailureCode::ProviderStreamError,
                message,
            ));
            return;
        }
        if self.metadata.response_model.is_none()
            && let Some(model) = chunk
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
        {
            self.metadata.response_model = Some(model.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.metadata.input_tokens = usage.get("prompt_tokens").and_then(Value::as_u64);
            // OpenAI and OpenRouter say how much of the prompt came from the cache in the
            // details; DeepSeek at the top.
            self.metadata.cached_input_tokens = usage
                .pointer("/prompt_tokens_details/cached_tokens")
                .or_else(|| usage.get("prompt_cache_hit_tokens"))
                .and_then(Value::as_u64);
            self.metadata.output_tokens = usage.get("completion_tokens").and_then(Value::as_u64);
            self.metadata.thinking_tokens = usage
                .pointer("/completion_tokens_details/reasoning_tokens")
                .and_then(Value::as_u64);
            // OpenRouter says what the call cost, in US dollars (credits).
            self.metadata.cost_nanos = usage
                .get("cost")
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite() && *c >= 0.0)
                .map(|c| (c * 1e9).round() as u64);
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.metadata.stop_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return;
        };
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(StreamEventKind::Token {
                    text: text.to_owned(),
                    token_type: TokenType::LlmThinking,
                });
            }
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            out.push(StreamEventKind::Token {
                text: text.to_owned(),
                token_type: TokenType::LlmResponse,
            });
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(self.calls.len() as u64);
            let id = call.get("id").and_then(Value::as_str);
            // A new id on a used index is a new call (some servers reuse index 0).
            let index = match (id, self.calls.get(&index)) {
                (Some(id), Some(existing)) if !existing.id.is_empty() && existing.id != id => {
                    self.calls.keys().max().map_or(0, |k| k + 1)
                }
                _ => index,
            };
            let entry = self.calls.entry(index).or_default();
            if let Some(id) = id {
                entry.id = id.to_owned();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                entry.name.push_str(name);
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                entry.arguments.push_str(args);
            }
        }
    }

    /// At `[DONE]`: the aggregated tool calls, the metadata, then END.
    pub fn finish(&mut self) -> Vec<StreamEventKind> {
        let mut out: Vec<StreamEventKind> = std::mem::take(&mut self.calls)
            .into_values()
            .enumerate()
            .map(|(i, call)| {
                let arguments = if call.arguments.trim().is_empty() {
                    json!({})
                } else {
                    // Unparseable arguments stay visible as a string; schema validation then
                    // tells the model what was wrong.
                    serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments))
                };
                let call_id = if call.id.is_empty() {
                    format!("call_{}", i + 1)
                } else {
                    call.id
                };
                StreamEventKind::ToolCall(ParsedToolCall {
                    call_id,
                    tool_name: call.name,
                    arguments,
                    signature: None,
                })
            })
            .collect();
        out.push(StreamEventKind::Metadata(std::mem::take(
            &mut self.metadata,
        )));
        out.push(StreamEventKind::End);
        out
    }
}

impl SseDecoder for Decoder {
    fn event(&mut self, _name: &str, data: &str, out: &mut Vec<StreamEventKind>) {
        match data.trim() {
            "[DONE]" => out.extend(self.finish()),
            _ => self.feed(data, out),
        }
    }

    fn end_of_stream(&mut self) -> Vec<StreamEventKind> {
        vec![interrupted()]
    }

    /// A complete chat completion: its `message` is read as one chunk's `delta`.
    fn whole(&mut self, body: &str) -> Vec<StreamEventKind> {
        let mut chunk = match parse_chunk("the provider", body) {
            Ok(chunk) => chunk,
            Err(events) => return events,
        };
        if let Some(choice) = chunk.pointer_mut("/choices/0")
            && let Some(message) = choice.get_mut("message").map(Value::take)
        {
            choice["delta"] = message;
        }
        let mut out = Vec::new();
        self.feed(&chunk.to_string(), &mut out);
        if !out.iter().any(|e| matches!(e, StreamEventKind::Error(_))) {
            out.extend(self.finish());
        }
        out
    }
}

#[async_trait::async_trait]
impl ProviderAdapter for OpenAiAdapter {
    fn provider_name(&self) -> &str {
        &self.config.name
    }

    async fn call(
        &self,
        prompt: &Prompt,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let url = http::join(&self.config.base_url, "chat/completions");
        let body = request_body(prompt, options);
        let response = http::send_with_retries(&self.config.http, || {
            let mut request = self
                .client
                .post(&url)
                .header("Accept", "text/event-stream")
                .header("Accept-Encoding", "identity")
                .json(&body);
            if let Some(key) = &self.config.api_key {
                request = request.bearer_auth(key.expose());
            }
            for (name, value) in &self.config.extra_headers {
                request = request.header(name, value);
            }
            request
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
mod tests {
    use art_types::{FunctionCall, PromptMessage, ToolCallRequest};

    use super::*;

    #[test]
    fn tool_calls_and_results_keep_their_ids_and_names() {
        let mut assistant = PromptMessage::text(PromptRole::Assistant, "");
        assistant.tool_calls = vec![ToolCallRequest {
            id: "c1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "calculator".into(),
                arguments: "{\"expression\":\"1\"}".into(),
            },
            signature: None,
        }];
        let mut result = PromptMessage::text(PromptRole::ToolResult, "{\"result\":1}");
        result.tool_call_id = Some("c1".into());
        result.name = Some("calculator".into());
        let wire = translate(&vec![
            PromptMessage::text(PromptRole::User, "q"),
            assistant,
            result,
        ]);
        assert_eq!(wire[1]["content"], Value::Null);
        assert_eq!(wire[1]["tool_calls"][0]["id"], "c1");
        assert_eq!(
            wire[1]["tool_calls"][0]["function"]["arguments"],
            "{\"expression\":\"1\"}"
        );
        assert_eq!(
            wire[2],
            json!({"role": "tool", "tool_call_id": "c1", "name": "calculator", "content": "{\"result\":1}"})
        );
    }

    #[test]
    fn a_reported_cost_is_kept_and_none_is_invented() {
        let cost = |usage: &str| {
            let mut d = Decoder::default();
            d.feed(
                &format!(r#"{{"choices":[],"usage":{usage}}}"#),
                &mut Vec::new(),
            );
            match d.finish().first() {
                Some(StreamEventKind::Metadata(meta)) => meta.cost_nanos,
                other => panic!("{other:?}"),
            }
        };
        // OpenRouter's usage accounting: $0.0001235 for the call.
        assert_eq!(
            cost(r#"{"prompt_tokens":194,"completion_tokens":2,"cost":0.0001235}"#),
            Some(123_500)
        );
        assert_eq!(cost(r#"{"prompt_tokens":194,"completion_tokens":2}"#), None);
        assert_eq!(cost(r#"{"prompt_tokens":1,"cost":-3}"#), None);
        assert_eq!(cost(r#"{"prompt_tokens":1,"cost":"free"}"#), None);
    }

    #[test]
    fn cached_prompt_tokens_are_kept_apart() {
        for usage in [
            r#"{"prompt_tokens":420,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":400}}"#,
            // DeepSeek
            r#"{"prompt_tokens":420,"completion_tokens":7,"prompt_cache_hit_tokens":400}"#,
        ] {
            let mut d = Decoder::default();
            let mut out = Vec::new();
            d.feed(&format!(r#"{{"choices":[],"usage":{usage}}}"#), &mut out);
            let end = d.finish();
            let Some(StreamEventKind::Metadata(meta)) = end.first() else {
                panic!("{end:?}")
            };
            assert_eq!(meta.input_tokens, Some(420), "{usage}");
            assert_eq!(meta.cached_input_tokens, Some(400), "{usage}");
        }
    }

    #[test]
    fn garbage_chunks_are_errors_not_panics() {
        let mut d = Decoder::default();
        for junk in [
            "",
            "{",
            "null",
            "[]",
            "{\"choices\": 5}",
            "{\"choices\":[{\"delta\":{\"tool_calls\":[7]}}]}",
        ] {
            d.feed(junk, &mut Vec::new());
        }
        let mut out = Vec::new();
        d.feed("{", &mut out);
        assert!(matches!(out[..], [StreamEventKind::Error(_)]));
    }
}
