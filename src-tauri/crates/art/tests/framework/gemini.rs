//! The Gemini adapter against the testkit's fake server over real TCP: every byte
//! split and CRLF, thought parts, whole function calls with their `thoughtSignature`,
//! cumulative usage, the key in a header (never the URL), and the faults (429 with a
//! RetryInfo delay retried, 400 not, mid-stream error, no finish reason, disconnect,
//! silence).

use art_testkit::fixtures;
use art_testkit::framework::adapters as wire;

use art::providers::gemini::{GeminiAdapter, GeminiConfig};
use art::providers::http::HttpOptions;
use art::reasoning::provider::ProviderAdapter;
use art::secrets::Secret;
use art_testkit::fake::{Ending, FakeServer, Reply};
use art_types::{ErrorClass, FailureCode, StreamEventKind, TokenType};
use serde_json::json;
use wire::{collect, fast, final_error, options, prompt, text_of, tool_calls};

const TEXT: &str = fixtures::gemini::TEXT;
const CALLS: &str = fixtures::gemini::FUNCTION_CALL;
const KEY: &str = "AIza-SENTINEL-gemini-test-key";
const MODEL: &str = "gemini-test";

fn adapter(server: &FakeServer, http: HttpOptions) -> GeminiAdapter {
    GeminiAdapter::new(GeminiConfig {
        base_url: format!("{}/v1beta", server.url()),
        api_key: Secret::new(KEY),
        include_thoughts: true,
        thinking_budget: None,
        http,
    })
    .unwrap()
}

#[tokio::test]
async fn text_and_thoughts_are_identical_whatever_the_byte_splits() {
    let crlf = TEXT.replace('\n', "\r\n");
    for (body, piece) in [
        (TEXT, 1),
        (TEXT, 2),
        (TEXT, 3),
        (TEXT, 7),
        (TEXT, 100_000),
        (crlf.as_str(), 1),
        (crlf.as_str(), 9),
    ] {
        let server = FakeServer::start(vec![Reply::sse(body, piece)]).await;
        let events = collect(&adapter(&server, fast()), MODEL).await;
        assert_eq!(
            text_of(&events, TokenType::LlmThinking),
            "Let me think.",
            "piece {piece}"
        );
        assert_eq!(
            text_of(&events, TokenType::LlmResponse),
            "Héllo, wörld 🌍",
            "piece {piece}"
        );
        let Some(StreamEventKind::Metadata(meta)) = events.iter().rev().nth(1) else {
            panic!("metadata before END: {events:?}")
        };
        // Usage is cumulative: the last chunk's figures, not a sum.
        assert_eq!(
            (meta.input_tokens, meta.output_tokens, meta.thinking_tokens),
            (Some(9), Some(4), Some(5))
        );
        assert_eq!(meta.stop_reason.as_deref(), Some("STOP"));
        assert_eq!(meta.response_model.as_deref(), Some("gemini-test"));
        assert_eq!(events.last(), Some(&StreamEventKind::End));
    }
}

#[tokio::test]
async fn request_has_the_gemini_wire_shape_and_the_key_only_in_a_header() {
    let server = FakeServer::start(vec![Reply::sse(TEXT, 4096)]).await;
    collect(&adapter(&server, fast()), MODEL).await;
    let request = &server.requests()[0];
    assert_eq!(
        request.request_line,
        "POST /v1beta/models/gemini-test:streamGenerateContent?alt=sse HTTP/1.1"
    );
    assert!(!request.request_line.contains("SENTINEL"));
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
    assert_eq!(request.header("accept-encoding"), Some("identity"));
    let body = request.json();
    assert_eq!(
        body["systemInstruction"],
        json!({ "parts": [{ "text": "Be brief." }] })
    );
    assert_eq!(
        body["contents"],
        json!([{ "role": "user", "parts": [{ "text": "Hi" }] }])
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"]["includeThoughts"],
        true
    );
}

#[tokio::test]
async fn function_calls_arrive_whole_with_ids_and_signatures() {
    let server = FakeServer::start(vec![Reply::sse(CALLS, 3)]).await;
    let events = collect(&adapter(&server, fast()), MODEL).await;
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].call_id.as_str(), calls[0].tool_name.as_str()),
        ("call_1", "calculator")
    );
    assert_eq!(calls[0].arguments, json!({ "expression": "2+2" }));
    assert_eq!(calls[0].signature.as_deref(), Some("CiQB0e2Kb7sig-one"));
    assert_eq!(
        (calls[1].call_id.as_str(), calls[1].signature.as_deref()),
        ("fc-2", None)
    );
    assert_eq!(events.last(), Some(&StreamEventKind::End));
}

#[tokio::test]
async fn a_retry_delay_in_the_body_is_honoured_and_bad_requests_are_not_retried() {
    let exhausted = r#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.05s"}]}}"#;
    let server =
        FakeServer::start(vec![Reply::error(429, exhausted), Reply::sse(TEXT, 4096)]).await;
    let events = collect(&adapter(&server, fast()), MODEL).await;
    assert_eq!(text_of(&events, TokenType::LlmResponse), "Héllo, wörld 🌍");
    assert_eq!(server.requests().len(), 2);

    let invalid = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#;
    let server = FakeServer::start(vec![Reply::error(400, invalid)]).await;
    let err = adapter(&server, fast())
        .call(&prompt(), &options(MODEL))
        .await
        .err()
        .expect("rejected");
    assert_eq!(err.class, ErrorClass::Permanent);
    assert!(err.message.contains("API key not valid") && !err.message.contains("SENTINEL"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_model_id_that_would_change_the_url_is_refused() {
    let server = FakeServer::start(vec![]).await;
    let err = adapter(&server, fast())
        .call(&prompt(), &options("gemini?key=x/../other"))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.code, FailureCode::InvalidModel);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn errors_missing_finish_reason_disconnects_and_silence_end_cleanly() {
    let first_chunk_end = TEXT.find("\n\n").unwrap() + 2;
    let mid_error = format!(
        "{}data: {{\"error\":{{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}}}\n\n",
        &TEXT[..first_chunk_end]
    );
    let no_finish = TEXT.rsplit_once("data:").unwrap().0.to_owned();
    let server = FakeServer::start(vec![
        Reply::sse(&mid_error, 11),
        Reply::sse(&no_finish, 11),
        Reply::sse(TEXT, 40).ending(Ending::Disconnect),
        Reply::sse(TEXT, 40).ending(Ending::Hang),
    ])
    .await;
    let adapter = adapter(&server, fast());
    let started = std::time::Instant::now();
    for expected in [
        FailureCode::ProviderStreamError,
        FailureCode::StreamInterrupted,
        FailureCode::StreamInterrupted,
        FailureCode::IdleTimeout,
    ] {
        let events = collect(&adapter, MODEL).await;
        let error = final_error(&events).unwrap_or_else(|| panic!("{expected}: {events:?}"));
        assert_eq!(
            (error.class, error.code.clone()),
            (ErrorClass::Transient, expected)
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn a_server_that_answers_with_one_json_body_is_understood() {
    // `streamGenerateContent` without `alt=sse` answers with a JSON array of responses.
    let responses = r#"[{"candidates":[{"content":{"parts":[{"text":"Hello in "}]}}]},{"candidates":[{"content":{"parts":[{"text":"one piece."}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":3}}]"#;
    let server = FakeServer::start(vec![Reply::json(responses)]).await;
    let events = collect(&adapter(&server, fast()), MODEL).await;
    assert_eq!(
        text_of(&events, TokenType::LlmResponse),
        "Hello in one piece."
    );
    assert_eq!(events.last(), Some(&StreamEventKind::End), "{events:?}");
}
