//! The OpenAI-compatible adapter against the testkit's fake server over real TCP:
//! fixtures split at every byte (inside UTF-8 too), CRLF, comments, tool-call deltas,
//! reasoning, usage, and the fault list (auth, rate limit with Retry-After, 5xx,
//! quota, mid-stream error, disconnect, silence).

use art_testkit::fixtures;
use art_testkit::framework::adapters as wire;

use std::time::Duration;

use art::providers::http::HttpOptions;
use art::providers::openai::{OpenAiAdapter, OpenAiConfig};
use art::reasoning::provider::ProviderAdapter;
use art::secrets::Secret;
use art_testkit::fake::{Ending, FakeServer, Reply};
use art_types::{ErrorClass, FailureCode, StreamEventKind, TokenType};
use wire::{collect, fast, options, prompt, text_of, tool_calls};

const TEXT: &str = fixtures::openai::TEXT;
const TOOLS: &str = fixtures::openai::TOOL_CALLS;
const REASONING: &str = fixtures::openai::REASONING;
const KEY: &str = "sk-SENTINEL-openai-test-key";

fn adapter(server: &FakeServer, http: HttpOptions) -> OpenAiAdapter {
    OpenAiAdapter::new(OpenAiConfig {
        name: "openai".into(),
        base_url: format!("{}/v1/", server.url()),
        api_key: Some(Secret::new(KEY)),
        extra_headers: vec![("X-Title".into(), "ART Workbench".into())],
        http,
    })
    .unwrap()
}

#[tokio::test]
async fn text_stream_is_identical_whatever_the_byte_splits_and_line_endings() {
    let crlf = TEXT.replace('\n', "\r\n");
    for (body, piece) in [
        (TEXT, 1),
        (TEXT, 2),
        (TEXT, 3),
        (TEXT, 7),
        (TEXT, 64),
        (TEXT, 100_000),
        (crlf.as_str(), 1),
        (crlf.as_str(), 5),
    ] {
        let server = FakeServer::start(vec![Reply::sse(body, piece)]).await;
        let events = collect(&adapter(&server, fast()), "gpt-test").await;
        assert_eq!(
            text_of(&events, TokenType::LlmResponse),
            "Héllo, wörld 🌍",
            "piece {piece}"
        );
        let Some(StreamEventKind::Metadata(meta)) = events.iter().rev().nth(1) else {
            panic!("metadata before END: {events:?}")
        };
        assert_eq!((meta.input_tokens, meta.output_tokens), (Some(12), Some(4)));
        assert_eq!(meta.stop_reason.as_deref(), Some("stop"));
        // The model as the server named it (gen_ai.response.model), read once.
        assert_eq!(meta.response_model.as_deref(), Some("gpt-test"));
        assert_eq!(events.last(), Some(&StreamEventKind::End));
    }
}

#[tokio::test]
async fn request_has_the_wire_shape_and_headers() {
    let server = FakeServer::start(vec![Reply::sse(TEXT, 4096)]).await;
    collect(&adapter(&server, fast()), "gpt-test").await;
    let request = &server.requests()[0];
    assert_eq!(request.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.header("accept-encoding"), Some("identity"));
    assert_eq!(request.header("x-title"), Some("ART Workbench"));
    let body = request.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "Hi");
}

#[tokio::test]
async fn tool_call_deltas_are_aggregated_by_index() {
    let server = FakeServer::start(vec![Reply::sse(TOOLS, 9)]).await;
    let events = collect(&adapter(&server, fast()), "gpt-test").await;
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEventKind::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].call_id.as_str(), calls[0].tool_name.as_str()),
        ("call_a", "calculator")
    );
    assert_eq!(calls[0].arguments, serde_json::json!({"expression": "2+2"}));
    assert_eq!(calls[1].tool_name, "current_time");
}

#[tokio::test]
async fn reasoning_content_streams_as_thinking() {
    let server = FakeServer::start(vec![Reply::sse(REASONING, 11)]).await;
    let events = collect(&adapter(&server, fast()), "gpt-test").await;
    assert_eq!(
        text_of(&events, TokenType::LlmThinking),
        "Let me think about it."
    );
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Answer.");
}

#[tokio::test]
async fn auth_failure_is_not_retried_and_keeps_the_provider_message() {
    let server = FakeServer::start(vec![Reply::error(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
    )])
    .await;
    let err = adapter(&server, fast())
        .call(&prompt(), &options("gpt-test"))
        .await
        .err()
        .expect("auth error");
    assert_eq!(err.class, ErrorClass::Auth);
    assert!(err.message.contains("Incorrect API key provided"));
    assert!(
        !err.message.contains(KEY),
        "the key never appears in errors"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_before_the_first_byte() {
    let server = FakeServer::start(vec![
        Reply::error(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after-ms", "20"),
        Reply::error(503, "overloaded"),
        Reply::sse(TEXT, 4096),
    ])
    .await;
    let events = collect(&adapter(&server, fast()), "gpt-test").await;
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Héllo, wörld 🌍");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn quota_exhaustion_is_never_retried() {
    let server = FakeServer::start(vec![Reply::error(
        429,
        r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
    )])
    .await;
    let err = adapter(&server, fast())
        .call(&prompt(), &options("gpt-test"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code, FailureCode::QuotaExhausted);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn mid_stream_error_object_and_disconnect_end_with_an_error_event() {
    let error_body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\n\ndata: {\"error\":{\"message\":\"server overloaded\"}}\n\n";
    let server = FakeServer::start(vec![
        Reply::sse(error_body, 4096),
        Reply::sse(TEXT, 40).ending(Ending::Disconnect),
    ])
    .await;
    let adapter = adapter(&server, fast());
    let events = collect(&adapter, "gpt-test").await;
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Hal");
    assert!(
        matches!(events.last(), Some(StreamEventKind::Error(e)) if e.message.contains("server overloaded"))
    );
    let events = collect(&adapter, "gpt-test").await;
    assert!(
        matches!(events.last(), Some(StreamEventKind::Error(e)) if e.class == ErrorClass::Transient),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_silent_server_hits_the_idle_timeout() {
    let server = FakeServer::start(vec![Reply::sse(TEXT, 40).ending(Ending::Hang)]).await;
    let started = std::time::Instant::now();
    let http = HttpOptions {
        idle_timeout: Duration::from_millis(300),
        ..fast()
    };
    let events = collect(&adapter(&server, http), "gpt-test").await;
    assert!(
        matches!(events.last(), Some(StreamEventKind::Error(e)) if e.code == FailureCode::IdleTimeout),
        "{events:?}"
    );
    // Not before the server was silent for the whole timeout.
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// The idle timeout is a limit on each silence, not on the whole answer: a stream whose
/// pieces come 100 ms apart runs well past a 300 ms timeout and completes.
#[tokio::test]
async fn a_slow_steady_stream_outlives_the_idle_timeout() {
    let pieces = TEXT.len().div_ceil(40);
    assert!(pieces >= 6, "the answer must take longer than the timeout");
    let server = FakeServer::start(vec![
        Reply::sse(TEXT, 40).delayed(Duration::from_millis(100)),
    ])
    .await;
    let started = std::time::Instant::now();
    let http = HttpOptions {
        idle_timeout: Duration::from_millis(300),
        ..fast()
    };
    let events = collect(&adapter(&server, http), "gpt-test").await;
    assert!(started.elapsed() > Duration::from_millis(300));
    assert!(
        matches!(events.last(), Some(StreamEventKind::End)),
        "{events:?}"
    );
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Héllo, wörld 🌍");
}

#[tokio::test]
async fn nothing_listening_is_a_connection_error() {
    let server = FakeServer::start(vec![]).await;
    let url = server.url();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let adapter = OpenAiAdapter::new(OpenAiConfig {
        name: "openai".into(),
        base_url: url,
        api_key: None,
        extra_headers: vec![],
        http: HttpOptions {
            max_retries: 0,
            ..fast()
        },
    })
    .unwrap();
    let err = adapter
        .call(&prompt(), &options("gpt-test"))
        .await
        .err()
        .expect("no server");
    assert_eq!(err.code, FailureCode::ConnectionFailed);
}

#[tokio::test]
async fn a_server_that_answers_with_one_json_body_is_understood() {
    // A proxy that ignores `stream: true`: one chat completion, as application/json.
    let completion = r#"{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello in one piece.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"calculator","arguments":"{\"expression\":\"1+1\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12,"completion_tokens":5}}"#;
    let server = FakeServer::start(vec![Reply::json(completion)]).await;
    let events = collect(&adapter(&server, fast()), "gpt-test").await;
    assert_eq!(
        text_of(&events, TokenType::LlmResponse),
        "Hello in one piece."
    );
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0].arguments, serde_json::json!({"expression": "1+1"}));
    assert!(events.iter().any(
        |e| matches!(e, StreamEventKind::Metadata(m) if m.input_tokens == Some(12) && m.output_tokens == Some(5))
    ));
    assert_eq!(events.last(), Some(&StreamEventKind::End), "{events:?}");
}
