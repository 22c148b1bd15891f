//! Embeddings from each provider kind that has them, against fake servers over real TCP
//! speaking each API's exact request and answer shapes.

use art::providers::embeddings::{TEXTS_PER_REQUEST, embed};
use art::secrets::Secret;
use art_testkit::fake::{FakeServer, Reply};
use art_testkit::framework::adapters::fast;
use art_types::FailureCode;
use serde_json::{Value, json};

use crate::models::{at, entry};

fn length(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[tokio::test]
async fn each_provider_is_asked_in_its_own_shape_and_gives_unit_vectors_in_order() {
    let key = Secret::new("SENTINEL-embeddings-key");
    let texts = ["pears keep for weeks", "the barn roof leaks"];
    for (name, path, answer) in [
        (
            "ollama",
            "",
            json!({ "model": "nomic-embed-text", "embeddings": [[3.0, 4.0], [0.0, 2.0]] }),
        ),
        (
            "openai",
            "/v1",
            // Out of order on purpose: each item says which text it is.
            json!({ "object": "list", "data": [
                { "object": "embedding", "index": 1, "embedding": [0.0, 2.0] },
                { "object": "embedding", "index": 0, "embedding": [3.0, 4.0] }
            ], "model": "text-embedding-3-small" }),
        ),
        (
            "gemini",
            "/v1beta",
            json!({ "embeddings": [{ "values": [3.0, 4.0] }, { "values": [0.0, 2.0] }] }),
        ),
    ] {
        let server = FakeServer::start(vec![Reply::json(&answer.to_string())]).await;
        let model = match name {
            "ollama" => "nomic-embed-text",
            "openai" => "text-embedding-3-small",
            _ => "gemini-embedding-001",
        };
        let vectors = embed(
            &entry(name),
            &at(format!("{}{path}", server.url())),
            Some(&key),
            &fast(),
            model,
            &texts,
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(vectors, [vec![0.6, 0.8], vec![0.0, 1.0]], "{name}");
        assert!(vectors.iter().all(|v| (length(v) - 1.0).abs() < 1e-6));

        let request = &server.requests()[0];
        let body = request.json();
        match name {
            "ollama" => {
                assert_eq!(request.request_line, "POST /api/embed HTTP/1.1");
                assert_eq!(body, json!({ "model": model, "input": texts }));
            }
            "openai" => {
                assert_eq!(request.request_line, "POST /v1/embeddings HTTP/1.1");
                assert_eq!(
                    request.header("authorization"),
                    Some("Bearer SENTINEL-embeddings-key")
                );
                assert_eq!(
                    body,
                    json!({ "model": model, "input": texts, "encoding_format": "float" })
                );
            }
            _ => {
                assert_eq!(
                    request.request_line,
                    "POST /v1beta/models/gemini-embedding-001:batchEmbedContents HTTP/1.1"
                );
                assert_eq!(
                    request.header("x-goog-api-key"),
                    Some("SENTINEL-embeddings-key")
                );
                let one = |t: &str| json!({ "model": "models/gemini-embedding-001", "content": { "parts": [{ "text": t }] } });
                assert_eq!(body, json!({ "requests": [one(texts[0]), one(texts[1])] }));
            }
        }
    }
}

#[tokio::test]
async fn many_texts_go_in_several_requests_and_come_back_in_order() {
    let texts: Vec<String> = (0..TEXTS_PER_REQUEST + 3)
        .map(|i| format!("text {i}"))
        .collect();
    let answer = |from: usize, to: usize| {
        let vectors: Vec<Value> = (from..to).map(|i| json!([i as f32 + 1.0, 0.0])).collect();
        Reply::json(&json!({ "embeddings": vectors }).to_string())
    };
    let server = FakeServer::start(vec![
        answer(0, TEXTS_PER_REQUEST),
        answer(TEXTS_PER_REQUEST, TEXTS_PER_REQUEST + 3),
    ])
    .await;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embed(
        &entry("ollama"),
        &at(server.url()),
        None,
        &fast(),
        "m",
        &refs,
    )
    .await
    .unwrap();
    assert_eq!(vectors.len(), texts.len());
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        server.requests()[1].json()["input"],
        json!(["text 64", "text 65", "text 66"])
    );
}

#[tokio::test]
async fn a_wrong_answer_is_refused_with_what_was_wrong() {
    for (answer, says) in [
        (
            json!({ "embeddings": [[1.0, 0.0]] }),
            "1 vectors for 2 texts",
        ),
        (
            json!({ "embeddings": [[1.0, 0.0], [1.0]] }),
            "vectors of 2 and 1",
        ),
        (
            json!({ "embeddings": [[0.0, 0.0], [1.0, 0.0]] }),
            "no length",
        ),
        (
            json!({ "embeddings": [["x", 0.0], [1.0, 0.0]] }),
            "without embeddings",
        ),
        (json!({ "vectors": [] }), "without embeddings"),
    ] {
        let server = FakeServer::start(vec![Reply::json(&answer.to_string())]).await;
        let error = embed(
            &entry("ollama"),
            &at(server.url()),
            None,
            &fast(),
            "m",
            &["a", "b"],
        )
        .await
        .unwrap_err();
        assert_eq!(error.code, FailureCode::UnexpectedResponse, "{answer}");
        assert!(error.message.contains(says), "{answer}: {}", error.message);
    }
    // A model the server does not have: its own words, not a parse error.
    let server = FakeServer::start(vec![Reply::error(
        404,
        r#"{"error":"model \"nomic-embed-text\" not found, try pulling it first"}"#,
    )])
    .await;
    let error = embed(
        &entry("ollama"),
        &at(server.url()),
        None,
        &fast(),
        "nomic-embed-text",
        &["a"],
    )
    .await
    .unwrap_err();
    assert!(
        error.message.contains("try pulling it first"),
        "{}",
        error.message
    );
    // No key, no request; a provider without embeddings says so.
    let error = embed(
        &entry("openai"),
        &at(server.url()),
        None,
        &fast(),
        "m",
        &["a"],
    )
    .await
    .unwrap_err();
    assert_eq!(error.code, FailureCode::ApiKeyMissing);
    let error = embed(
        &entry("anthropic"),
        &at(server.url()),
        Some(&Secret::new("k")),
        &fast(),
        "m",
        &["a"],
    )
    .await
    .unwrap_err();
    assert!(
        error.message.contains("offers no embeddings"),
        "{}",
        error.message
    );
    assert_eq!(server.requests().len(), 1);
}
