//! The real adapters against a fake server, as their tests and benchmarks use them: fast
//! HTTP options, one call and its events, the text per token type, the tool calls, the
//! error a stream ended with, and threads of an instance pointed at a fake server.

use std::time::Duration;

use crate::fake::scripts::Protocol;
use art::ArtInstance;
use art::providers::anthropic::{AnthropicAdapter, AnthropicConfig};
use art::providers::gemini::{GeminiAdapter, GeminiConfig};
use art::providers::http::HttpOptions;
use art::providers::ollama::OllamaAdapter;
use art::providers::openai::{OpenAiAdapter, OpenAiConfig};
use art::providers::options::BASE_URL;
use art::reasoning::provider::{CallOptions, CallStage, ProviderAdapter};
use art::secrets::Secret;
use art_types::{
    AgentProps, ParsedToolCall, PromptMessage, PromptRole, ProviderConfig, StreamEventKind,
    ThreadConfig, TokenType,
};
use futures::StreamExt;

/// Short backoff and idle timeout, so fault tests stay quick.
pub fn fast() -> HttpOptions {
    HttpOptions {
        backoff: Duration::from_millis(10),
        idle_timeout: Duration::from_millis(500),
        ..HttpOptions::default()
    }
}

/// Call options for `model`.
pub fn options(model: &str) -> CallOptions {
    CallOptions {
        thread_id: "t".into(),
        trace_id: "r".into(),
        stage: CallStage::Synthesis,
        model_id: model.into(),
        generation: Default::default(),
        tools: Vec::new(),
        response_schema: None,
    }
}

/// A system and a user message.
pub fn prompt() -> Vec<PromptMessage> {
    vec![
        PromptMessage::text(PromptRole::System, "Be brief."),
        PromptMessage::text(PromptRole::User, "Hi"),
    ]
}

/// Every event of one call of `adapter` with [`prompt`].
pub async fn collect(adapter: &dyn ProviderAdapter, model: &str) -> Vec<StreamEventKind> {
    let stream = adapter
        .call(&prompt(), &options(model))
        .await
        .expect("call starts");
    stream.collect().await
}

/// The concatenated text of one token type.
pub fn text_of(events: &[StreamEventKind], want: TokenType) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEventKind::Token { text, token_type } if *token_type == want => {
                Some(text.as_str())
            }
            _ => None,
        })
        .collect()
}

/// The tool calls among the events.
pub fn tool_calls(events: &[StreamEventKind]) -> Vec<ParsedToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEventKind::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

/// The error code the stream ended with, if it ended with an error.
pub fn final_error(events: &[StreamEventKind]) -> Option<&art_types::StreamError> {
    match events.last() {
        Some(StreamEventKind::Error(e)) => Some(e),
        _ => None,
    }
}

/// An adapter speaking `protocol` to `url` (key `k`, model `m` for Ollama, no thinking).
pub fn adapter(protocol: Protocol, url: String, http: HttpOptions) -> Box<dyn ProviderAdapter> {
    let key = Secret::new("k");
    match protocol {
        Protocol::OpenAi => Box::new(
            OpenAiAdapter::new(OpenAiConfig {
                name: "openai".into(),
                base_url: url,
                api_key: Some(key),
                extra_headers: Vec::new(),
                http,
            })
            .unwrap(),
        ),
        Protocol::Anthropic => Box::new(
            AnthropicAdapter::new(AnthropicConfig {
                base_url: url,
                api_key: key,
                thinking_budget: None,
                http,
            })
            .unwrap(),
        ),
        Protocol::Gemini => Box::new(
            GeminiAdapter::new(GeminiConfig {
                base_url: url,
                api_key: key,
                include_thoughts: false,
                thinking_budget: None,
                http,
            })
            .unwrap(),
        ),
        Protocol::Ollama => {
            Box::new(OllamaAdapter::new(&url, "m", Default::default(), http).unwrap())
        }
    }
}

/// A new thread of `art` on `provider` / `model` at `base_url`, with `tools` enabled.
pub async fn thread_at(
    art: &ArtInstance,
    provider: &str,
    model: &str,
    base_url: &str,
    tools: &[&str],
) -> String {
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let mut provider_config = ProviderConfig {
        provider_name: provider.into(),
        model_id: model.into(),
        ..Default::default()
    };
    provider_config
        .adapter_options
        .insert(BASE_URL.into(), serde_json::json!(base_url));
    let config = ThreadConfig {
        provider_config,
        enabled_tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        ..Default::default()
    };
    art.state.set_thread_config(&thread, &config).await.unwrap();
    thread
}

/// Props for `query` in `thread`.
pub fn ask(thread: &str, query: &str) -> AgentProps {
    AgentProps {
        query: query.into(),
        thread_id: thread.into(),
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    }
}
