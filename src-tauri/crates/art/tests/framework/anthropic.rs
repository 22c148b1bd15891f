//! The Anthropic adapter against the testkit's fake server over real TCP: every byte
//! split and CRLF, pings / comments / unknown events ignored, thinking with its
//! signature, `tool_use` input assembled from JSON fragments, and the faults (401, 529
//! retried, mid-stream `error` event, no `message_stop`, disconnect, silence).

use art_testkit::fixtures;
use art_testkit::framework::adapters as wire;

use art::providers::anthropic::{AnthropicAdapter, AnthropicConfig};
use art::providers::http::HttpOptions;
use art::reasoning::provider::ProviderAdapter;
use art::secrets::Secret;
use art_testkit::fake::{Ending, FakeServer, Reply};
use art_types::{ErrorClass, FailureCode, StreamEventKind, TokenType};
use serde_json::json;
use wire::{collect, fast, final_error, options, prompt, text_of, tool_calls};

const TEXT: &str = fixtures::anthropic::TEXT;
const TOOLS: &str = fixtures::anthropic::THINKING_TOOL_USE;
const KEY: &str = "sk-ant-SENTINEL-anthropic-test-key";
const MODEL: &str = "claude-test";

fn adapter(server: &FakeServer, http: HttpOptions) -> AnthropicAdapter {
    AnthropicAdapter::new(AnthropicConfig {
        base_url: format!("{}/v1/", server.url()),
        api_key: Secret::new(KEY),
        thinking_budget: None,
        http,
    })
    .unwrap()
}

#[tokio::test]
async fn text_is_identical_whatever_the_byte_splits_and_line_endings() {
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
        let events = collect(&adapter(&server, fast()), MODEL).await;
        assert_eq!(
            text_of(&events, TokenType::LlmResponse),
            "Héllo, wörld 🌍",
            "piece {piece}"
        );
        let Some(StreamEventKind::Metadata(meta)) = events.iter().rev().nth(1) else {
            panic!("metadata before END: {events:?}")
        };
        assert_eq!(
            (meta.input_tokens, meta.output_tokens),
            (Some(25), Some(15))
        );
        assert_eq!(meta.stop_reason.as_deref(), Some("end_turn"));
        assert_eq!(meta.response_model.as_deref(), Some("claude-test"));
        assert_eq!(events.last(), Some(&StreamEventKind::End));
    }
}

#[tokio::test]
async fn request_has_the_messages_wire_shape_and_headers() {
    let server = FakeServer::start(vec![Reply::sse(TEXT, 4096)]).await;
    collect(&adapter(&server, fast()), MODEL).await;
    let request = &server.requests()[0];
    assert_eq!(request.request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("accept-encoding"), Some("identity"));
    assert_eq!(request.header("authorization"), None);
    let body = request.json();
    assert_eq!(
        (
            &body["model"],
            &body["stream"],
            &body["system"],
            &body["max_tokens"]
        ),
        (
            &json!(MODEL),
            &json!(true),
            &json!("Be brief."),
            &json!(4096)
        )
    );
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": [{ "type": "text", "text": "Hi" }] }])
    );
}

#[tokio::test]
async fn thinking_signature_and_tool_use_fragments_are_assembled() {
    for piece in [1, 5, 4096] {
        let server = FakeServer::start(vec![Reply::sse(TOOLS, piece)]).await;
        let events = collect(&adapter(&server, fast()), MODEL).await;
        assert_eq!(
            text_of(&events, TokenType::LlmThinking),
            "I need the calculator."
        );
        assert_eq!(text_of(&events, TokenType::LlmResponse), "Let me compute.");
        let calls = tool_calls(&events);
        assert_eq!(calls.len(), 2, "piece {piece}");
        assert_eq!(
            (calls[0].call_id.as_str(), calls[0].tool_name.as_str()),
            ("toolu_01", "calculator")
        );
        assert_eq!(calls[0].arguments, json!({ "expression": "2+2" }));
        assert_eq!(
            (calls[1].tool_name.as_str(), &calls[1].arguments),
            ("current_time", &json!({}))
        );
        let meta = events.iter().find_map(|e| match e {
            StreamEventKind::Metadata(m) => Some(m.clone()),
            _ => None,
        });
        let meta = meta.expect("metadata");
        assert_eq!(
            meta.reasoning_signature.as_deref(),
            Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3h")
        );
        assert_eq!(meta.stop_reason.as_deref(), Some("tool_use"));
    }
}

#[tokio::test]
async fn overloaded_529_is_retried_and_auth_failure_is_not() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server =
        FakeServer::start(vec![Reply::error(529, overloaded), Reply::sse(TEXT, 4096)]).await;
    let events = collect(&adapter(&server, fast()), MODEL).await;
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Héllo, wörld 🌍");
    assert_eq!(server.requests().len(), 2);

    let denied =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = FakeServer::start(vec![Reply::error(401, denied)]).await;
    let err = adapter(&server, fast())
        .call(&prompt(), &options(MODEL))
        .await
        .err()
        .expect("auth error");
    assert_eq!(err.class, ErrorClass::Auth);
    assert!(
        err.message.contains("invalid x-api-key") && !err.message.contains(KEY),
        "{}",
        err.message
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_mid_stream_error_event_ends_the_stream_with_that_error() {
    let cut = TEXT.find("event: some_future_event").unwrap();
    let body = format!(
        "{}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n",
        &TEXT[..cut]
    );
    let server = FakeServer::start(vec![Reply::sse(&body, 13)]).await;
    let events = collect(&adapter(&server, fast()), MODEL).await;
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Héllo, wörld 🌍");
    let error = final_error(&events).expect("error event");
    assert_eq!(
        (error.class, error.code.clone()),
        (ErrorClass::Transient, FailureCode::ProviderOverloaded)
    );
}

#[tokio::test]
async fn no_message_stop_disconnects_and_silence_are_errors_not_hangs() {
    let cut = TEXT.find("event: message_stop").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(&TEXT[..cut], 64),
        Reply::sse(TEXT, 40).ending(Ending::Disconnect),
        Reply::sse(TEXT, 40).ending(Ending::Hang),
    ])
    .await;
    let adapter = adapter(&server, fast());
    let started = std::time::Instant::now();
    for expected in [
        FailureCode::StreamInterrupted,
        FailureCode::StreamInterrupted,
        FailureCode::IdleTimeout,
    ] {
        let events = collect(&adapter, MODEL).await;
        let error = final_error(&events).unwrap_or_else(|| panic!("{events:?}"));
        assert_eq!(
            (error.class, error.code.clone()),
            (ErrorClass::Transient, expected)
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn a_server_that_answers_with_one_json_body_is_understood() {
    // A proxy that ignores `stream: true`: one Messages response, as application/json.
    let message = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"thinking","thinking":"Add them.","signature":"sig-1"},{"type":"text","text":"Hello in one piece."},{"type":"tool_use","id":"toolu_1","name":"calculator","input":{"expression":"1+1"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"cache_read_input_tokens":9,"output_tokens":5}}"#;
    let server = FakeServer::start(vec![Reply::json(message)]).await;
    let events = collect(&adapter(&server, fast()), MODEL).await;
    assert_eq!(
        text_of(&events, TokenType::LlmResponse),
        "Hello in one piece."
    );
    assert_eq!(text_of(&events, TokenType::LlmThinking), "Add them.");
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0].arguments, json!({"expression": "1+1"}));
    assert!(events.iter().any(|e| matches!(
        e,
        StreamEventKind::Metadata(m) if m.input_tokens == Some(12) && m.cached_input_tokens == Some(9)
    )));
    assert_eq!(events.last(), Some(&StreamEventKind::End), "{events:?}");
}
