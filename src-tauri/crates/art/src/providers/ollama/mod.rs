//! Ollama's native API (`/api/chat`, NDJSON) — not `/v1`, so thinking, `keep_alive` and
//! options such as `num_ctx` work. Text, thinking and complete tool calls stream as
//! events; `{"error"}` lines after HTTP 200 end the stream with an error; `unload`
//! frees the model with `keep_alive: 0` (how the local singleton switches models).
//! Beside the adapter: what a server holds and how Ollama names models (`library`),
//! the context window it gives a model (`window`) and the doctor (`doctor`).

use art_types::{
    ErrorClass, FailureCode, LlmMetadata, ParsedToolCall, Prompt, PromptRole, StreamEventKind,
    TokenType,
};
use serde_json::{Map, Value, json};

use super::http::{self, HttpOptions};
use super::ndjson::LineFramer;
use super::request;
use super::stream::{decoded, error_event, parse_chunk};
use crate::reasoning::provider::{CallOptions, EventStream, ProviderAdapter, ProviderError};

pub mod doctor;
pub mod library;
pub mod models;
pub mod pulls;
mod window;

/// Default address of a local Ollama.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// The variable Ollama itself reads for its address; where it is set, it is the default
/// base URL here too (a server moved to another port is found without settings).
pub const HOST_VAR: &str = "OLLAMA_HOST";

/// The base URL a thread without one uses: [`HOST_VAR`] when set, else
/// [`DEFAULT_BASE_URL`].
pub fn default_base_url() -> String {
    base_url_from_host(std::env::var(HOST_VAR).ok().as_deref())
}

/// The address the Ollama entry among `entries` is configured with, else
/// [`default_base_url`]: the server the Models page and `art models` manage.
pub fn configured_base_url(entries: &[crate::providers::ProviderEntry]) -> String {
    entries
        .iter()
        .find(|e| e.kind == art_types::AdapterKind::Ollama)
        .and_then(|e| {
            e.base_options
                .get(crate::providers::options::BASE_URL)?
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(default_base_url)
}

/// `OLLAMA_HOST` read as Ollama's own client reads it (`host`, `host:port`, `:port`,
/// `scheme://host:port/path`; port 11434 unless a scheme says 80 or 443), except that a
/// server told to listen everywhere (`0.0.0.0`, `::`) is reached on the loopback.
pub fn base_url_from_host(host: Option<&str>) -> String {
    let host = host.map(str::trim).unwrap_or_default();
    if host.is_empty() {
        return DEFAULT_BASE_URL.to_owned();
    }
    let (scheme, rest, default_port) = match host.split_once("://") {
        Some(("https", rest)) => ("https", rest, "443"),
        Some(("http", rest)) => ("http", rest, "80"),
        Some(_) => return DEFAULT_BASE_URL.to_owned(),
        None => ("http", host, "11434"),
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    // `[v6]:port`, `v4:port`, `name:port`, `:port`, or a host alone.
    let (name, port) = match authority.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']')) =>
        {
            (name, port)
        }
        _ => (authority, default_port),
    };
    if port.parse::<u16>().is_err() {
        return DEFAULT_BASE_URL.to_owned();
    }
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let name = match bare {
        "" | "0.0.0.0" | "::" => "127.0.0.1".to_owned(),
        v6 if v6.contains(':') => format!("[{v6}]"),
        other => other.to_owned(),
    };
    let path = path.trim_end_matches('/');
    match path.is_empty() {
        true => format!("{scheme}://{name}:{port}"),
        false => format!("{scheme}://{name}:{port}/{path}"),
    }
}

/// Provider options that are fields of the request rather than model `options`.
pub const TOP_LEVEL_OPTIONS: [&str; 2] = ["think", "keep_alive"];

/// Provider options of ours, never sent to the server.
const OUR_OPTIONS: [&str; 1] = [art_types::provider::VISION_OPTION];

/// The adapter.
pub struct OllamaAdapter {
    base_url: String,
    model: String,
    options: Map<String, Value>,
    http: HttpOptions,
    client: reqwest::Client,
    /// The server's answer about the model's window, once it gave one.
    window: tokio::sync::OnceCell<Option<u64>>,
    /// The server's answer about the model's capabilities, once it gave one.
    capabilities: tokio::sync::OnceCell<Option<Vec<art_types::models::Capability>>>,
}

impl OllamaAdapter {
    /// An adapter for `model` at `base_url`; `options` go to Ollama's `options` (e.g. `num_ctx`).
    pub fn new(
        base_url: &str,
        model: &str,
        options: Map<String, Value>,
        http: HttpOptions,
    ) -> Result<Self, ProviderError> {
        // A `/v1` suffix is the OpenAI-compatible endpoint; the native API lives at the root.
        let base_url = base_url
            .trim_end_matches('/')
            .trim_end_matches("/v1")
            .to_owned();
        Ok(Self {
            client: http::client(&http)?,
            base_url,
            model: model.to_owned(),
            options,
            http,
            window: tokio::sync::OnceCell::new(),
            capabilities: tokio::sync::OnceCell::new(),
        })
    }
}

/// The standard prompt as Ollama chat messages.
pub fn translate(prompt: &Prompt) -> Vec<Value> {
    prompt
        .iter()
        .map(|m| match m.role {
            PromptRole::System => json!({ "role": "system", "content": m.content }),
            PromptRole::User => {
                let mut msg = json!({ "role": "user", "content": request::user_text(m) });
                let images: Vec<String> = request::images_base64(m).map(|(_, b64)| b64).collect();
                if !images.is_empty() {
                    msg["images"] = json!(images);
                }
                msg
            }
            PromptRole::Assistant | PromptRole::ToolRequest => {
                let mut msg = json!({ "role": "assistant", "content": m.content });
                if !m.tool_calls.is_empty() {
                    msg["tool_calls"] = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            let args: Value = serde_json::from_str(&c.function.arguments)
                                .unwrap_or_else(|_| json!({}));
                            json!({ "function": { "name": c.function.name, "arguments": args } })
                        })
                        .collect();
                }
                msg
            }
            PromptRole::ToolResult => {
                json!({ "role": "tool", "tool_name": m.name, "content": m.content })
            }
        })
        .collect()
}

fn connection_hint(error: ProviderError, base: &str) -> ProviderError {
    if error.code == FailureCode::ConnectionFailed {
        ProviderError::new(
            ErrorClass::Transient,
            FailureCode::OllamaNotRunning,
            format!(
                "Ollama is not reachable at {base}: start it with `ollama serve` (or check the base URL and port)"
            ),
        )
    } else {
        error
    }
}

/// A line that is only a piece of answer text, decoded without a JSON tree.
mod plain {
    use serde::Deserialize;
    use serde_json::value::RawValue;

    use crate::providers::stream::{Text, borrowed_text as text};

    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
        #[serde(default)]
        done: bool,
        #[serde(borrow, default)]
        message: Option<Message<'a>>,
    }

    #[derive(Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default, deserialize_with = "text")]
        content: Text<'a>,
        #[serde(borrow, default)]
        thinking: Option<&'a RawValue>,
        #[serde(borrow, default)]
        tool_calls: Option<&'a RawValue>,
    }

    /// The text of a line that carries nothing else (not done, no error, thinking or
    /// tool calls); `None` when the full decoder must look at it.
    pub(super) fn text_of(line: &str) -> Option<Text<'_>> {
        let line: Line = serde_json::from_str(line).ok()?;
        if line.error.is_some() || line.done {
            return None;
        }
        match line.message {
            None => Some(None),
            Some(m) if m.thinking.is_some() || m.tool_calls.is_some() => None,
            Some(m) => Some(m.content),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn only_text_lines_are_plain() {
            let line = r#"{"model":"m","created_at":"t","message":{"role":"assistant","content":"Hi \"x\""},"done":false}"#;
            assert_eq!(text_of(line).unwrap().as_deref(), Some("Hi \"x\""));
            for full in [
                r#"{"message":{"content":""},"done":true,"eval_count":3}"#,
                r#"{"error":"model not found"}"#,
                r#"{"message":{"content":"","thinking":"hm"},"done":false}"#,
                r#"{"message":{"content":"","tool_calls":[]},"done":false}"#,
                r#"{"message":{"content":1},"done":false}"#,
                "{",
            ] {
                assert!(text_of(full).is_none(), "{full}");
            }
        }
    }
}

/// Decode one NDJSON line into `out`.
pub fn decode_line(line: &str, calls_seen: &mut usize, out: &mut impl Extend<StreamEventKind>) {
    // Most lines carry a piece of text and nothing else: no JSON tree for those.
    if let Some(text) = plain::text_of(line) {
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            out.extend([StreamEventKind::Token {
                text: text.into_owned(),
                token_type: TokenType::LlmResponse,
            }]);
        }
        return;
    }
    out.extend(decode_full(line, calls_seen));
}

/// Decode a line that may carry anything: an error, thinking, tool calls, the end.
fn decode_full(line: &str, calls_seen: &mut usize) -> Vec<StreamEventKind> {
    let value = match parse_chunk("Ollama", line) {
        Ok(v) => v,
        Err(events) => return events,
    };
    if let Some(error) = value.get("error") {
        let message = error
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string());
        return vec![error_event(
            ErrorClass::Transient,
            FailureCode::OllamaError,
            message,
        )];
    }
    let mut out = Vec::new();
    let message = value.get("message");
    let text = |key: &str| {
        message
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    };
    if let Some(thinking) = text("thinking") {
        out.push(StreamEventKind::Token {
            text: thinking.to_owned(),
            token_type: TokenType::LlmThinking,
        });
    }
    if let Some(content) = text("content") {
        out.push(StreamEventKind::Token {
            text: content.to_owned(),
            token_type: TokenType::LlmResponse,
        });
    }
    for call in message
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        *calls_seen += 1;
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let arguments = call
            .pointer("/function/arguments")
            .cloned()
            .unwrap_or_else(|| json!({}));
        out.push(StreamEventKind::ToolCall(ParsedToolCall {
            call_id: format!("call_{calls_seen}"),
            tool_name: name,
            arguments,
            signature: None,
        }));
    }
    if value.get("done").and_then(Value::as_bool) == Some(true) {
        let ns_to_ms = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_u64)
                .map(|ns| ns / 1_000_000)
        };
        out.push(StreamEventKind::Metadata(LlmMetadata {
            input_tokens: value.get("prompt_eval_count").and_then(Value::as_u64),
            output_tokens: value.get("eval_count").and_then(Value::as_u64),
            total_generation_time_ms: ns_to_ms("total_duration"),
            stop_reason: value
                .get("done_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            response_model: value
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..LlmMetadata::default()
        }));
        out.push(StreamEventKind::End);
    }
    out
}

#[async_trait::async_trait]
impl ProviderAdapter for OllamaAdapter {
    fn provider_name(&self) -> &str {
        "ollama"
    }

    async fn call(
        &self,
        prompt: &Prompt,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let mut model_options = self.options.clone();
        model_options.retain(|key, _| !OUR_OPTIONS.contains(&key.as_str()));
        let generation = &options.generation;
        if let Some(t) = generation.temperature {
            model_options.insert("temperature".into(), json!(t));
        }
        if let Some(p) = generation.top_p {
            model_options.insert("top_p".into(), json!(p));
        }
        if let Some(n) = generation.max_tokens {
            model_options.insert("num_predict".into(), json!(n));
        }
        // `think` and `keep_alive` are request fields; the rest are model options.
        let top_level: Vec<(&str, Value)> = TOP_LEVEL_OPTIONS
            .iter()
            .filter_map(|k| model_options.remove(*k).map(|v| (*k, v)))
            .collect();
        let mut body = json!({ "model": self.model, "messages": translate(prompt), "stream": true, "options": model_options });
        for (key, value) in top_level {
            body[key] = value;
        }
        if !options.tools.is_empty() {
            body["tools"] = request::function_tools(&options.tools);
        }
        // Structured output: the answer constrained to the schema (Ollama 0.5+).
        if let Some(schema) = &options.response_schema {
            body["format"] = schema.clone();
        }
        let url = http::join(&self.base_url, "api/chat");
        let response = http::send_with_retries(&self.http, || {
            self.client
                .post(&url)
                .header("Accept-Encoding", "identity")
                .json(&body)
        })
        .await
        .map_err(|e| connection_hint(e, &self.base_url))?;
        let mut framer = LineFramer::default();
        let mut calls_seen = 0;
        let body = http::idle_guarded(response, self.http.idle_timeout);
        Ok(decoded(body, move |piece, out| {
            let mut decode = |line: &str| decode_line(line, &mut calls_seen, out);
            match piece {
                Some(Ok(bytes)) => framer.push_with(&bytes, &mut decode),
                Some(Err(e)) => out.push(StreamEventKind::Error(e.into_stream_error())),
                None => {
                    framer.finish_with(&mut decode);
                    out.push(error_event(
                        ErrorClass::Transient,
                        FailureCode::StreamInterrupted,
                        "Ollama closed the connection before the answer was complete",
                    ));
                }
            }
        }))
    }

    /// The `num_ctx` this adapter passes, else what the server says (asked once per
    /// adapter; asked again after a failure to reach it).
    async fn context_window(&self) -> Option<u64> {
        if let Some(n) = self.options.get("num_ctx").and_then(Value::as_u64) {
            return Some(n);
        }
        self.window
            .get_or_try_init(|| window::ask(&self.client, &self.base_url, &self.model))
            .await
            .ok()
            .copied()
            .flatten()
    }

    /// `vision` among the capabilities `/api/show` lists (asked once per adapter; an
    /// older server that lists none: unknown).
    async fn sees_images(&self) -> Option<bool> {
        let capabilities = self
            .capabilities
            .get_or_try_init(|| window::capabilities(&self.client, &self.base_url, &self.model))
            .await
            .ok()?
            .as_ref()?;
        Some(capabilities.contains(&art_types::models::Capability::Vision))
    }

    async fn unload(&self) {
        let url = http::join(&self.base_url, "api/chat");
        let body = json!({ "model": self.model, "messages": [], "keep_alive": 0 });
        if let Err(e) = self.client.post(&url).json(&body).send().await {
            tracing::warn!(model = %self.model, "could not unload the Ollama model: {e}");
        }
    }
}

#[cfg(test)]
mod host_tests {
    use super::{DEFAULT_BASE_URL, base_url_from_host};

    #[test]
    fn ollama_host_is_read_as_ollama_reads_it() {
        let read = |host: &str| base_url_from_host(Some(host));
        assert_eq!(base_url_from_host(None), DEFAULT_BASE_URL);
        assert_eq!(read("  "), DEFAULT_BASE_URL);
        assert_eq!(read("127.0.0.1:4000"), "http://127.0.0.1:4000");
        assert_eq!(read(":4000"), "http://127.0.0.1:4000");
        assert_eq!(read("0.0.0.0"), DEFAULT_BASE_URL);
        assert_eq!(read("0.0.0.0:8080"), "http://127.0.0.1:8080");
        assert_eq!(read("gpu-box"), "http://gpu-box:11434");
        assert_eq!(read("https://ollama.example"), "https://ollama.example:443");
        assert_eq!(read("http://h:9/ollama/"), "http://h:9/ollama");
        assert_eq!(read("[::1]:5000"), "http://[::1]:5000");
        assert_eq!(read("::"), DEFAULT_BASE_URL);
        assert_eq!(read("h:99999"), DEFAULT_BASE_URL, "not a port");
        assert_eq!(read("ftp://h"), DEFAULT_BASE_URL, "not http");
    }
}
