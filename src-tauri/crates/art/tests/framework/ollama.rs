//! The Ollama native adapter against the testkit's fake server over real TCP.

use art_testkit::fixtures;
use art_testkit::framework::adapters as wire;

use std::sync::Arc;
use std::time::Duration;

use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::http::HttpOptions;
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::providers::ollama::OllamaAdapter;
use art::reasoning::provider::{CallOptions, CallStage, ProviderAdapter, ProviderSource};
use art::secrets::MemoryStore;
use art_testkit::fake::{Ending, FakeServer, Reply};
use art_types::{
    ErrorClass, FailureCode, PromptMessage, PromptRole, ProviderConfig, StreamEventKind, TokenType,
};
use futures::StreamExt;
use serde_json::{Map, json};
use wire::{fast, text_of};

const CHAT: &str = fixtures::ollama::CHAT;
const TOOL_CALL: &str = fixtures::ollama::TOOL_CALL;

fn options() -> CallOptions {
    CallOptions {
        thread_id: "t".into(),
        trace_id: "r".into(),
        stage: CallStage::Other,
        model_id: "llama3.2".into(),
        generation: Default::default(),
        tools: Vec::new(),
        response_schema: None,
    }
}

fn prompt() -> Vec<PromptMessage> {
    vec![
        PromptMessage::text(PromptRole::System, "Be kind."),
        PromptMessage::text(PromptRole::User, "Salut"),
    ]
}

fn adapter(server: &FakeServer) -> OllamaAdapter {
    let mut options = Map::new();
    options.insert("num_ctx".into(), json!(8192));
    options.insert("think".into(), json!(true));
    options.insert("keep_alive".into(), json!("10m"));
    // A `/v1` suffix (a common mix-up) still reaches the native API.
    OllamaAdapter::new(
        &format!("{}/v1/", server.url()),
        "llama3.2",
        options,
        fast(),
    )
    .unwrap()
}

#[tokio::test]
async fn chat_stream_is_identical_whatever_the_byte_splits() {
    for piece in [1, 2, 5, 64, 100_000] {
        let server = FakeServer::start(vec![Reply::ndjson(CHAT, piece)]).await;
        let events: Vec<_> = adapter(&server)
            .call(&prompt(), &options())
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(
            text_of(&events, TokenType::LlmResponse),
            "Bonjour, ça va ? 🦙",
            "piece {piece}"
        );
        assert_eq!(
            text_of(&events, TokenType::LlmThinking),
            "Greeting the user."
        );
        let Some(StreamEventKind::Metadata(meta)) = events.iter().rev().nth(1) else {
            panic!("{events:?}")
        };
        assert_eq!(
            (
                meta.input_tokens,
                meta.output_tokens,
                meta.total_generation_time_ms
            ),
            (Some(26), Some(9), Some(1500))
        );
        assert_eq!(meta.response_model.as_deref(), Some("llama3.2"));
        assert_eq!(events.last(), Some(&StreamEventKind::End));
    }
}

#[tokio::test]
async fn request_uses_the_native_api_with_options() {
    let server = FakeServer::start(vec![Reply::ndjson(CHAT, 4096)]).await;
    let _: Vec<_> = adapter(&server)
        .call(&prompt(), &options())
        .await
        .unwrap()
        .collect()
        .await;
    let request = &server.requests()[0];
    assert_eq!(request.request_line, "POST /api/chat HTTP/1.1");
    let body = request.json();
    assert_eq!(body["model"], "llama3.2");
    assert_eq!(body["stream"], true);
    assert_eq!(body["options"]["num_ctx"], 8192);
    // `think` and `keep_alive` are request fields, not model options.
    assert_eq!(
        (&body["think"], &body["keep_alive"]),
        (&json!(true), &json!("10m"))
    );
    assert!(body["options"].get("think").is_none());
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Salut"})
    );
}

/// Ollama's structured output: the schema as the request's `format` (Ollama 0.5+).
#[tokio::test]
async fn a_response_schema_goes_as_the_format() {
    let server = FakeServer::start(vec![Reply::ndjson(CHAT, 4096)]).await;
    let schema = art::reasoning::plan_schema::plan_schema(&[]);
    let mut asked = options();
    asked.response_schema = Some(schema.clone());
    let _: Vec<_> = adapter(&server)
        .call(&prompt(), &asked)
        .await
        .unwrap()
        .collect()
        .await;
    let body = server.requests()[0].json();
    assert_eq!(body["format"], schema);
    // No tools: a plan names none, and calls none.
    assert_eq!(body["format"]["properties"]["toolCalls"]["maxItems"], 0);
}

#[tokio::test]
async fn tool_calls_arrive_whole() {
    let server = FakeServer::start(vec![Reply::ndjson(TOOL_CALL, 7)]).await;
    let events: Vec<_> = adapter(&server)
        .call(&prompt(), &options())
        .await
        .unwrap()
        .collect()
        .await;
    let call = events
        .iter()
        .find_map(|e| {
            if let StreamEventKind::ToolCall(c) = e {
                Some(c.clone())
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(call.tool_name, "calculator");
    assert_eq!(call.arguments, json!({"expression": "3*7"}));
}

#[tokio::test]
async fn an_error_line_after_http_200_ends_the_stream() {
    let body = "{\"message\":{\"role\":\"assistant\",\"content\":\"Hal\"},\"done\":false}\n{\"error\":\"model runner has unexpectedly stopped\"}\n";
    let server = FakeServer::start(vec![
        Reply::ndjson(body, 3),
        Reply::ndjson(CHAT, 50).ending(Ending::Disconnect),
    ])
    .await;
    let a = adapter(&server);
    let events: Vec<_> = a.call(&prompt(), &options()).await.unwrap().collect().await;
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Hal");
    assert!(
        matches!(events.last(), Some(StreamEventKind::Error(e)) if e.message.contains("unexpectedly stopped"))
    );
    let events: Vec<_> = a.call(&prompt(), &options()).await.unwrap().collect().await;
    assert!(
        matches!(events.last(), Some(StreamEventKind::Error(e)) if e.code == FailureCode::StreamInterrupted),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_missing_model_keeps_ollamas_words() {
    let server = FakeServer::start(vec![Reply::error(
        404,
        r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
    )])
    .await;
    let err = adapter(&server)
        .call(&prompt(), &options())
        .await
        .err()
        .unwrap();
    assert_eq!(err.class, ErrorClass::Permanent);
    assert!(
        err.message.contains("try pulling it first"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn ollama_not_running_says_how_to_start_it() {
    let server = FakeServer::start(vec![]).await;
    let url = server.url();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let a = OllamaAdapter::new(
        &url,
        "llama3.2",
        Map::new(),
        HttpOptions {
            max_retries: 0,
            ..fast()
        },
    )
    .unwrap();
    let err = a.call(&prompt(), &options()).await.err().unwrap();
    assert_eq!(err.code, FailureCode::OllamaNotRunning);
    assert!(err.message.contains("ollama serve"));
}

#[tokio::test]
async fn switching_models_unloads_the_previous_one_with_keep_alive_zero() {
    let server = FakeServer::start(vec![
        Reply::ndjson(CHAT, 4096),
        Reply::ndjson("{}\n", 10),
        Reply::ndjson(CHAT, 4096),
    ])
    .await;
    let manager = ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory { http: fast() }),
        Arc::new(MemoryStore::new()),
        ManagerOptions::default(),
    );
    let config = |model: &str| {
        let mut c = ProviderConfig {
            provider_name: "ollama".into(),
            model_id: model.into(),
            ..Default::default()
        };
        c.adapter_options
            .insert("base_url".into(), json!(server.url()));
        c
    };
    let lease = manager.acquire(&config("llama3.2")).await.unwrap();
    let _: Vec<_> = lease
        .adapter
        .call(&prompt(), &options())
        .await
        .unwrap()
        .collect()
        .await;
    drop(lease);
    let lease = manager.acquire(&config("qwen3")).await.unwrap();
    let unload = &server.requests()[1];
    assert_eq!(
        unload.json(),
        json!({"model": "llama3.2", "messages": [], "keep_alive": 0})
    );
    drop(lease);
}
