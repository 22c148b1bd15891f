//! A whole PES run through the real provider stack: ProviderManager → OpenAI adapter →
//! HTTP over TCP → the testkit's fake server; real SQLite, real tools, key from a store.

use art_testkit::framework::adapters as wire;

use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::secrets::{MemoryStore, Secret, SecretStore};
use art::storage::sqlite::SqliteStorage;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::fake::{FakeServer, Recorded, Reply, Router};
use art_types::{AgentProps, FailureCode, MessageRole, ProviderConfig, RunStatus, ThreadConfig};
use serde_json::json;

fn sse_text(text: &str) -> String {
    let chunk =
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}});
    format!("data: {chunk}\n\ndata: {usage}\n\ndata: [DONE]\n\n")
}

/// An instance over a SQLite file in `dir` with the built-in providers, `key` stored for
/// `provider`, and a thread set to `provider`/`model` at `base_url` with the calculator.
async fn calculator_thread(
    dir: &tempfile::TempDir,
    provider: &str,
    model: &str,
    key: &str,
    base_url: &str,
) -> (ArtInstance, String) {
    let art = instance(dir, provider, key);
    let thread = wire::thread_at(&art, provider, model, base_url, &["calculator"]).await;
    (art, thread)
}

/// An instance over a SQLite file in `dir` with the built-in providers and `key` stored
/// for `provider`.
fn instance(dir: &tempfile::TempDir, provider: &str, key: &str) -> ArtInstance {
    let secrets = Arc::new(MemoryStore::new());
    secrets.set(provider, &Secret::new(key)).unwrap();
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory::default()),
        secrets,
        ManagerOptions::default(),
    ));
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, providers).build().unwrap()
}

#[tokio::test]
async fn plan_tool_and_answer_over_real_http() {
    let plan = json!({"title": "Sum", "intent": "add", "plan": ["calculate"], "toolCalls": [{"callId": "c1", "toolName": "calculator", "arguments": {"expression": "19 + 23"}}]});
    let server = FakeServer::start(vec![
        Reply::sse(&sse_text(&plan.to_string()), 17),
        Reply::sse(&sse_text("The sum is 42."), 5),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.url());
    let (art, thread) =
        calculator_thread(&dir, "openai", "gpt-test", "sk-SENTINEL-http", &base_url).await;
    let props = wire::ask(&thread, "What is 19 + 23?");
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert_eq!(out.response.content, "The sum is 42.");
    assert_eq!(out.metadata.usage.input_tokens, 14);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The synthesis request carries the tool call and its result, linked by id.
    let messages = requests[1].json()["messages"].clone();
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["tool_call_id"], "c1");
    assert!(tool["content"].as_str().unwrap().contains("42"));
    let history = art
        .conversation
        .messages(&thread, MessageOptions::default())
        .await
        .unwrap();
    let roles: Vec<_> = history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [MessageRole::User, MessageRole::Tool, MessageRole::Ai]
    );

    // The key went to the provider, and nowhere else: not the database, not its WAL.
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-SENTINEL-http")
    );
    drop(art);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            !bytes.windows(8).any(|w| w == b"SENTINEL"),
            "secret found in {}",
            path.display()
        );
    }
}

#[tokio::test]
async fn a_missing_key_is_a_clear_error_response() {
    let dir = tempfile::tempdir().unwrap();
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory::default()),
        Arc::new(MemoryStore::new()),
        ManagerOptions::default(),
    ));
    let art = ArtInstance::builder(
        Arc::new(SqliteStorage::open(dir.path().join("a.sqlite3")).unwrap()),
        providers,
    )
    .build()
    .unwrap();
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let config = ThreadConfig {
        provider_config: ProviderConfig {
            provider_name: "deepseek".into(),
            model_id: "deepseek-chat".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    art.state.set_thread_config(&thread, &config).await.unwrap();
    let props = AgentProps {
        query: "hi".into(),
        thread_id: thread,
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    let error = out.metadata.error.unwrap();
    assert_eq!(error.code, FailureCode::ApiKeyMissing);
    assert!(error.message.contains("deepseek"));
}

#[tokio::test]
async fn plan_tool_and_answer_over_every_wire_protocol() {
    let plan = json!({"title": "Sum", "intent": "add", "plan": ["calculate"], "toolCalls": [{"callId": "c1", "toolName": "calculator", "arguments": {"expression": "19 + 23"}}]});
    for (name, protocol, path) in [
        ("anthropic", Protocol::Anthropic, "/v1"),
        ("gemini", Protocol::Gemini, "/v1beta"),
        ("ollama", Protocol::Ollama, ""),
        ("deepseek", Protocol::OpenAi, "/v1"),
    ] {
        let server = FakeServer::start(vec![
            text_reply(protocol, &plan.to_string(), 7),
            text_reply(protocol, "The sum is 42.", 5),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let base_url = format!("{}{path}", server.url());
        let (art, thread) =
            calculator_thread(&dir, name, "fake-model", "SENTINEL-every-wire", &base_url).await;
        let props = wire::ask(&thread, "What is 19 + 23?");
        let out = art.process(props, CancellationToken::new()).await.unwrap();
        assert_eq!(
            out.metadata.status,
            RunStatus::Success,
            "{name}: {:?}",
            out.metadata.error
        );
        assert_eq!(out.response.content, "The sum is 42.", "{name}");
        assert_eq!(out.metadata.usage.input_tokens, 14, "{name}");
        assert_eq!(out.metadata.tool_calls, 1, "{name}");
        // Ollama is asked about the model's window first (loaded models, then its
        // details); the other providers only get the two calls.
        let (asked, requests): (Vec<_>, Vec<_>) = server.requests().into_iter().partition(|r| {
            r.request_line.contains("/api/ps") || r.request_line.contains("/api/show")
        });
        assert_eq!(asked.len(), if name == "ollama" { 2 } else { 0 }, "{name}");
        assert_eq!(requests.len(), 2, "{name}");
        // The synthesis request carries the calculator's result.
        assert!(
            requests[1].body.contains("42"),
            "{name}: {}",
            requests[1].body
        );
    }
}

/// A local Ollama that says how large its model's window is: `details` answers
/// `/api/show`, `loaded` (if any) is the window `/api/ps` reports.
fn ollama_reporting(details: serde_json::Value, loaded: Option<u64>) -> Router {
    Box::new(move |request| {
        let path = request.request_line.split(' ').nth(1).unwrap_or_default();
        match (path, loaded) {
            ("/api/ps", Some(window)) => Some(Reply::json(
                &json!({ "models": [{ "name": "fake-model:latest", "context_length": window }] })
                    .to_string(),
            )),
            ("/api/show", _) => Some(Reply::json(&details.to_string())),
            _ => None,
        }
    })
}

#[tokio::test]
async fn history_is_fitted_to_the_window_the_ollama_server_reports() {
    let plan = json!({"title": "Answer", "intent": "answer", "plan": []}).to_string();
    let long = "word ".repeat(600);
    for (details, loaded) in [
        // The Modelfile's num_ctx (over the trained length).
        (
            json!({ "parameters": "num_ctx 1024", "model_info": { "llama.context_length": 131072 } }),
            None,
        ),
        // The window of the loaded model (over everything /api/show says).
        (
            json!({ "model_info": { "llama.context_length": 131072 } }),
            Some(1024),
        ),
        // Only the trained length.
        (
            json!({ "model_info": { "general.architecture": "llama", "llama.context_length": 1024 } }),
            None,
        ),
    ] {
        let server = FakeServer::start_at(
            0,
            Some(ollama_reporting(details.clone(), loaded)),
            vec![
                text_reply(Protocol::Ollama, &plan, 7),
                text_reply(Protocol::Ollama, &long, 64),
                text_reply(Protocol::Ollama, &plan, 7),
                text_reply(Protocol::Ollama, "Short.", 5),
            ],
        )
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (art, thread) =
            calculator_thread(&dir, "ollama", "fake-model", "", &server.url()).await;
        let first = art
            .process(
                wire::ask(&thread, &format!("First: {long}")),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(first.metadata.history_left_out, 0, "{details}");
        let out = art
            .process(wire::ask(&thread, "And now?"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            out.metadata.status,
            RunStatus::Success,
            "{:?}",
            out.metadata.error
        );
        assert_eq!(
            out.metadata.history_left_out, 2,
            "{details}: the first turn went"
        );
        let requests = server.requests();
        let chats: Vec<_> = requests
            .iter()
            .filter(|r| r.request_line.contains("/api/chat"))
            .collect();
        assert_eq!(chats.len(), 4);
        for chat in &chats[2..] {
            assert!(!chat.body.contains("First:"), "{details}: {}", chat.body);
            assert!(chat.body.contains("And now?"));
        }
        // Asked once, not before every run: the adapter keeps the answer.
        let shows = requests
            .iter()
            .filter(|r| r.request_line.contains("/api/show"))
            .count();
        assert_eq!(shows, usize::from(loaded.is_none()), "{details}");
    }
}

#[tokio::test]
async fn an_ollama_that_does_not_say_leaves_history_whole() {
    let plan = json!({"title": "Answer", "intent": "answer", "plan": []}).to_string();
    // An older server: no window in /api/ps, /api/show unknown (404).
    let server = FakeServer::start_at(
        0,
        Some(Box::new(|request: &Recorded| {
            request
                .request_line
                .contains("/api/show")
                .then(|| Reply::error(404, r#"{"error":"not found"}"#))
        })),
        vec![
            text_reply(Protocol::Ollama, &plan, 7),
            text_reply(Protocol::Ollama, "Hello.", 5),
        ],
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (art, thread) = calculator_thread(&dir, "ollama", "fake-model", "", &server.url()).await;
    let out = art
        .process(wire::ask(&thread, "Hi"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.metadata.status,
        RunStatus::Success,
        "{:?}",
        out.metadata.error
    );
    assert_eq!(out.response.content, "Hello.");
    assert_eq!(out.metadata.history_left_out, 0);
}

/// Plans a small model can write: the planning call asks for the plan's JSON Schema as
/// structured output (here the OpenAI-compatible `response_format`, naming the tools a
/// call may use); a server that refuses it (DeepSeek's words) is asked again without,
/// and the thread remembers: its next run asks in plain text from the start.
#[tokio::test]
async fn the_plan_is_asked_for_by_schema_and_a_refusal_is_remembered() {
    let plan = json!({"title": "Hi", "intent": "greet", "steps": [], "toolCalls": []});
    let refused = r#"{"error": {"message": "This response_format type is unavailable now", "type": "invalid_request_error"}}"#;
    let server = FakeServer::start(vec![
        Reply::sse(&sse_text(&plan.to_string()), 64),
        Reply::sse(&sse_text("Hello."), 64),
        Reply::error(400, refused),
        Reply::sse(&sse_text(&plan.to_string()), 64),
        Reply::sse(&sse_text("Hello again."), 64),
        Reply::sse(&sse_text(&plan.to_string()), 64),
        Reply::sse(&sse_text("Hello once more."), 64),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.url());
    let (art, thread) =
        calculator_thread(&dir, "openai", "gpt-test", "sk-SENTINEL-schema", &base_url).await;

    let out = art
        .process(wire::ask(&thread, "Hi?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.response.content, "Hello.");
    let planning = server.requests()[0].json();
    let format = &planning["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "response");
    let schema = &format["json_schema"]["schema"];
    assert_eq!(
        schema["required"],
        json!(["title", "intent", "steps", "toolCalls"])
    );
    assert_eq!(
        schema["properties"]["toolCalls"]["items"]["properties"]["toolName"]["enum"],
        json!(["calculator"])
    );
    assert!(
        server.requests()[1].json().get("response_format").is_none(),
        "the answer is free text"
    );

    // Refused: asked again without a schema, in the same run.
    let out = art
        .process(wire::ask(&thread, "Hi again?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert_eq!(out.response.content, "Hello again.");
    assert!(server.requests()[3].json().get("response_format").is_none());
    let config = art.state.load_thread_context(&thread).await.unwrap().config;
    assert!(config.plain_plans, "remembered");

    // Remembered: the next run does not ask for one.
    art.process(wire::ask(&thread, "Once more?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 7);
    assert!(server.requests()[5].json().get("response_format").is_none());
}

/// Over HTTP, a thread with no tools sends one request: the answer's, streamed, with no
/// response schema (nothing asks for a plan), in every wire protocol.
#[tokio::test]
async fn a_thread_without_tools_sends_one_request_in_every_protocol() {
    for (provider, protocol, base) in [
        ("openai", Protocol::OpenAi, "/v1"),
        ("anthropic", Protocol::Anthropic, "/v1"),
        ("gemini", Protocol::Gemini, "/v1beta"),
        ("ollama", Protocol::Ollama, ""),
    ] {
        let server =
            FakeServer::start(vec![text_reply(protocol, "Paris is the capital.", 7)]).await;
        let dir = tempfile::tempdir().unwrap();
        let art = instance(&dir, provider, "sk-SENTINEL-direct");
        let url = format!("{}{base}", server.url());
        let thread = wire::thread_at(&art, provider, "m", &url, &[]).await;
        let out = art
            .process(
                wire::ask(&thread, "Capital of France?"),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(out.response.content, "Paris is the capital.", "{provider}");
        assert!(out.metadata.direct, "{provider}");
        // (Ollama is asked about the model's window too: not a model call.)
        let chats: Vec<Recorded> = server
            .requests()
            .into_iter()
            .filter(|r| {
                !r.request_line.contains("/api/ps") && !r.request_line.contains("/api/show")
            })
            .collect();
        assert_eq!(chats.len(), 1, "{provider}: {chats:?}");
        for schema in ["response_format", "responseJsonSchema", "\"format\""] {
            assert!(
                !chats[0].body.contains(schema),
                "{provider} asked for a plan's schema: {}",
                chats[0].body
            );
        }
    }
}
