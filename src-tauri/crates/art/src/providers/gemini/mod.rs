//! Gemini `streamGenerateContent` over SSE: the system prompt as `systemInstruction`,
//! roles `user` / `model` (merged when consecutive; never starting with `model`), tool
//! calls as `functionCall` parts carrying their `thoughtSignature` back, tool results as
//! `functionResponse` parts. Every `data:` line is a whole response: text, thought
//! summaries (`thought: true`), whole function calls, cumulative usage (the last wins).
//! There is no terminator: a stream that closes after a `finishReason` is complete, one
//! that closes before is interrupted.

use art_types::{
    ErrorClass, FailureCode, LlmMetadata, ParsedToolCall, Prompt, PromptMessage, PromptRole,
    StreamEventKind, TokenType,
};
use serde_json::{Map, Value, json};

use super::http::{self, HttpOptions};
use super::request::{images_base64, push_merged, thinking_budget, user_text};
use super::sse::{SseDecoder, interrupted, sse_stream};
use super::stream::{error_event, parse_chunk};
use crate::reasoning::provider::{CallOptions, EventStream, ProviderAdapter, ProviderError};
use crate::secrets::Secret;

/// Default base URL (with the API version path).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Where and how to reach Gemini.
#[derive(Debug, Clone)]
pub struct GeminiConfig {
    /// Base URL including the version, e.g. `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    /// API key (sent as `x-goog-api-key`, never in the URL).
    pub api_key: Secret,
    /// Ask for thought summaries (`thinkingConfig.includeThoughts`).
    pub include_thoughts: bool,
    /// Thinking budget in tokens, where the model takes one.
    pub thinking_budget: Option<u32>,
    /// Timeouts and retries.
    pub http: HttpOptions,
}

impl GeminiConfig {
    /// Read `include_thoughts` (default on) and `thinking_budget` from provider options.
    pub fn thinking_from(&mut self, options: &Map<String, Value>) {
        if let Some(on) = options.get("include_thoughts").and_then(Value::as_bool) {
            self.include_thoughts = on;
        }
        self.thinking_budget = thinking_budget(options);
    }
}

/// The adapter.
pub struct GeminiAdapter {
    config: GeminiConfig,
    client: reqwest::Client,
}

impl GeminiAdapter {
    /// An adapter for `config`.
    pub fn new(config: GeminiConfig) -> Result<Self, ProviderError> {
        let client = http::client(&config.http)?;
        Ok(Self { config, client })
    }
}

/// A tool result as the `response` object Gemini wants: JSON objects as they are,
/// anything else wrapped as `{"result": …}`.
fn response_object(content: &str) -> Value {
    match serde_json::from_str::<Value>(content) {
        Ok(v) if v.is_object() => v,
        Ok(v) => json!({ "result": v }),
        Err(_) => json!({ "result": content }),
    }
}

/// The standard prompt as (`systemInstruction`, `contents`).
pub fn translate(prompt: &[PromptMessage]) -> (Option<Value>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    let text = |t: &str| (!t.is_empty()).then(|| json!({ "text": t }));
    for m in prompt {
        match m.role {
            PromptRole::System => system.push(&m.content),
            PromptRole::User => {
                let mut parts: Vec<Value> = images_base64(m)
                    .map(|(image, data)| {
                        json!({ "inline_data": { "mime_type": image.mime, "data": data } })
                    })
                    .collect();
                parts.extend(text(&user_text(m)));
                push_merged(&mut contents, "user", "parts", parts);
            }
            PromptRole::Assistant | PromptRole::ToolRequest => {
                let mut parts: Vec<Value> = text(&m.content).into_iter().collect();
                for call in &m.tool_calls {
                    let args: Value = serde_json::from_str(&call.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    let mut part = json!({ "functionCall": { "id": call.id, "name": call.function.name, "args": args } });
                    if let Some(signature) = &call.signature {
                        part["thoughtSignature"] = json!(signature);
                    }
                    parts.push(part);
                }
                push_merged(&mut contents, "model", "parts", parts);
            }
            PromptRole::ToolResult => {
                let part = json!({ "functionResponse": {
                    "id": m.tool_call_id,
                    "name": m.name.as_deref().unwrap_or_default(),
                    "response": response_object(&m.content),
                } });
                push_merged(&mut contents, "user", "parts", vec![part]);
            }
        }
    }
    if contents.first().is_some_and(|c| c["role"] == "model") {
        contents.insert(
            0,
            json!({ "role": "user", "parts": [{ "text": "(continued)" }] }),
        );
    }
    let system =
        (!system.is_empty()).then(|| json!({ "parts": [{ "text": system.join("\n\n") }] }));
    (system, contents)
}

/// The request body of a streaming call.
pub fn request_body(
    prompt: &[PromptMessage],
    options: &CallOptions,
    config: &GeminiConfig,
) -> Value {
    let (system, contents) = translate(prompt);
    let mut body = json!({ "contents": contents });
    if let Some(system) = system {
        body["systemInstruction"] = system;
    }
    let generation = &options.generation;
    let mut config_json = Map::new();
    if let Some(t) = generation.temperature {
        config_json.insert("temperature".into(), json!(t));
    }
    if let Some(p) = generation.top_p {
        config_json.insert("topP".into(), json!(p));
    }
    if let Some(n) = generation.max_tokens {
        config_json.insert("maxOutputTokens".into(), json!(n));
    }
    let mut thinking = Map::new();
    if config.include_thoughts {
        thinking.insert("includeThoughts".into(), json!(true));
    }
    if let Some(budget) = config.thinking_budget {
        thinking.insert("thinkingBudget".into(), json!(budget));
    }
    if !thinking.is_empty() {
        config_json.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    // Structured output. `responseJsonSchema` takes full JSON Schema (`responseSchema`
    // only an OpenAPI subset, in which an open object — a tool's arguments — is refused).
    if let Some(schema) = &options.response_schema {
        config_json.insert("responseMimeType".into(), json!("application/json"));
        config_json.insert("responseJsonSchema".into(), schema.clone());
    }
    if !config_json.is_empty() {
        body["generationConfig"] = Value::Object(config_json);
    }
    if !options.tools.is_empty() {
        // `parametersJsonSchema` takes full JSON Schema (`parameters` only an OpenAPI subset).
        let declarations: Vec<Value> = options
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema }))
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
    }
    body
}

/// Decodes Gemini's stream of whole responses.
#[derive(Default)]
pub struct Decoder {
    metadata: LlmMetadata,
    calls: usize,
    finished: bool,
}

impl Decoder {
    fn part(&mut self, part: &Value) -> Option<StreamEventKind> {
        if let Some(call) = part.get("functionCall") {
            self.calls += 1;
            let call_id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{}", self.calls), str::to_owned);
            return Some(StreamEventKind::ToolCall(ParsedToolCall {
                call_id,
                tool_name: call
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                arguments: call.get("args").cloned().unwrap_or_else(|| json!({})),
                signature: part
                    .get("thoughtSignature")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            }));
        }
        let text = part
            .get("text")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())?;
        let token_type = match part.get("thought").and_then(Value::as_bool) {
            Some(true) => TokenType::LlmThinking,
            _ => TokenType::LlmResponse,
        };
        Some(StreamEventKind::Token {
            text: text.to_owned(),
            token_type,
        })
    }

    /// One chunk of the stream decoded.
    fn decode(&mut self, data: &str) -> Vec<StreamEventKind> {
        let response = match parse_chunk("Gemini", data) {
            Ok(v) => v,
            Err(events) => return events,
        };
        if let Some(error) = response.get("error") {
            let status = error
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("Gemini reported an error");
            let class = match status {
                "RESOURCE_EXHAUSTED" => ErrorClass::RateLimited,
                "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" => ErrorClass::Transient,
                _ => ErrorClass::Permanent,
            };
            // Proxies that speak Gemini's protocol may leave `status` out.
            let said = match status {
                "" => message.to_owned(),
                status => format!("{status}: {message}"),
            };
            return vec![error_event(class, FailureCode::ProviderStreamError, said)];
        }
        if let Some(reason) = response
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            return vec![error_event(
                ErrorClass::Permanent,
                FailureCode::PromptBlocked,
                format!("Gemini refused the prompt ({reason})"),
            )];
        }
        if let Some(model) = response.get("modelVersion").and_then(Value::as_str) {
            self.metadata.response_model = Some(model.to_owned());
        }
        if let Some(usage) = response.get("usageMetadata") {
            // Cumulative: each chunk's figures replace the previous ones.
            let get = |k: &str| usage.get(k).and_then(Value::as_u64);
            self.metadata.input_tokens = get("promptTokenCount");
            self.metadata.cached_input_tokens = get("cachedContentTokenCount");
            self.metadata.output_tokens = get("candidatesTokenCount");
            self.metadata.thinking_tokens = get("thoughtsTokenCount");
        }
        let Some(candidate) = response.pointer("/candidates/0") else {
            return Vec::new();
        };
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.metadata.stop_reason = Some(reason.to_owned());
            self.finished = true;
        }
        candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| self.part(part))
            .collect()
    }
}

impl SseDecoder for Decoder {
    fn event(&mut self, _name: &str, data: &str, out: &mut Vec<StreamEventKind>) {
        out.extend(self.decode(data));
    }

    fn end_of_stream(&mut self) -> Vec<StreamEventKind> {
        if !self.finished {
            return vec![interrupted()];
        }
        vec![
            StreamEventKind::Metadata(std::mem::take(&mut self.metadata)),
            StreamEventKind::End,
        ]
    }
}

#[async_trait::async_trait]
impl ProviderAdapter for GeminiAdapter {
    fn provider_name(&self) -> &str {
        "gemini"
    }

    async fn call(
        &self,
        prompt: &Prompt,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let model = options.model_id.trim_start_matches("models/");
        if model.is_empty()
            || !model
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                FailureCode::InvalidModel,
                format!(
                    "{:?} is not a Gemini model id (e.g. gemini-2.5-flash)",
                    options.model_id
                ),
            ));
        }
        let path = format!("models/{model}:streamGenerateContent?alt=sse");
        let url = http::join(&self.config.base_url, &path);
        let body = request_body(prompt, options, &self.config);
        let response = http::send_with_retries(&self.config.http, || {
            self.client
                .post(&url)
                .header("x-goog-api-key", self.config.api_key.expose())
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
