//! The fault matrix through the whole stack: for every provider and every fault of
//! `wire-protocols.md`, a PES run (planning, a calculator call, then a synthesis call that
//! meets the fault) over real HTTP to the fake server and a real SQLite file ends in
//! bounded time with the right error code, an ERROR observation, a message a person can
//! read, and a consistent thread: no answer left "streaming", and the next question in
//! the same thread is answered.

use art_testkit::framework::adapters as wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::observation::ObservationQuery;
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::http::HttpOptions;
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::secrets::{MemoryStore, Secret, SecretStore};
use art::storage::sqlite::SqliteStorage;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::fake::{Ending, FakeServer, Reply};
use art_types::{FailureCode, MessageRole, MessageStatus, ObservationType, RunStatus};
use serde_json::json;

/// The providers, each with the wire protocol it speaks and its base URL's path.
const PROVIDERS: &[(&str, Protocol, &str)] = &[
    ("openai", Protocol::OpenAi, "/v1"),
    ("deepseek", Protocol::OpenAi, "/v1"),
    ("openrouter", Protocol::OpenAi, "/api/v1"),
    ("anthropic", Protocol::Anthropic, "/v1"),
    ("gemini", Protocol::Gemini, "/v1beta"),
    ("ollama", Protocol::Ollama, ""),
];

/// The API key every provider gets (and some faults repeat back).
const KEY: &str = "sk-fault-matrix-key-000000";

/// Longest a faulty run may take (retries and the idle timeout included).
const BOUND: Duration = Duration::from_secs(10);

/// The synthesis answer the faults cut into.
const ANSWER: &str = "The sum of nineteen and twenty-three is forty-two, as the calculator said.";

/// Timeouts short enough for a quick matrix; real retry counts.
fn http() -> HttpOptions {
    HttpOptions {
        idle_timeout: Duration::from_millis(400),
        backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(50),
        ..HttpOptions::default()
    }
}

/// One fault: its name, the replies the synthesis call gets, and the error code a run
/// must end with (`None`: the run must succeed with the whole answer).
struct Fault {
    name: &'static str,
    replies: fn(Protocol) -> Vec<Reply>,
    code: fn(Protocol) -> Option<FailureCode>,
}

/// The events (SSE) or lines (NDJSON) of a streamed answer, as the body text.
fn body(reply: &Reply) -> String {
    String::from_utf8(reply.chunks.concat()).expect("scripted bodies are UTF-8")
}

/// `body` split into its events (SSE: blank-line separated) or lines (NDJSON).
fn units(protocol: Protocol, body: &str) -> Vec<String> {
    let sep = if protocol == Protocol::Ollama {
        "\n"
    } else {
        "\n\n"
    };
    body.split_inclusive(sep).map(str::to_owned).collect()
}

/// A streamed reply in `protocol`'s framing with `text` as its body, in pieces of
/// `piece` bytes.
fn rebuilt(protocol: Protocol, text: &str, piece: usize) -> Reply {
    match protocol {
        Protocol::Ollama => Reply::ndjson(text, piece),
        _ => Reply::sse(text, piece),
    }
}

/// The answer's first half: a few events, no terminator.
fn first_half(protocol: Protocol) -> String {
    let all = units(protocol, &body(&text_reply(protocol, ANSWER, 4096)));
    all[..all.len() / 2].concat()
}

/// An error the provider reports inside a stream that started well.
fn error_in_stream(protocol: Protocol) -> String {
    let error = match protocol {
        Protocol::OpenAi => "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n".to_owned(),
        Protocol::Anthropic => "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
        Protocol::Gemini => "data: {\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}\n\n".to_owned(),
        Protocol::Ollama => "{\"error\":\"an error was encountered while running the model\"}\n".to_owned(),
    };
    first_half(protocol) + &error
}

fn faults() -> Vec<Fault> {
    vec![
        Fault {
            name: "429 with Retry-After, every attempt",
            replies: |_| {
                let limited = Reply::error(429, r#"{"error":{"message":"Rate limit reached"}}"#)
                    .header("retry-after", "0");
                vec![limited; 3]
            },
            code: |_| Some(FailureCode::RateLimited),
        },
        Fault {
            name: "401 whose message repeats the key",
            replies: |_| {
                let body = format!(
                    r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. Check it and try again.","type":"invalid_request_error"}}}}"#
                );
                vec![Reply::error(401, &body)]
            },
            code: |_| Some(FailureCode::AuthenticationFailed),
        },
        Fault {
            name: "500, 502, 503",
            replies: |_| {
                [500, 502, 503]
                    .map(|s| Reply::error(s, r#"{"error":{"message":"upstream failed"}}"#))
                    .to_vec()
            },
            code: |_| Some(FailureCode::ProviderUnavailable),
        },
        Fault {
            name: "529 overloaded",
            replies: |_| {
                let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
                vec![Reply::error(529, overloaded); 3]
            },
            code: |_| Some(FailureCode::ProviderUnavailable),
        },
        Fault {
            name: "an error in the stream",
            replies: |p| vec![rebuilt(p, &error_in_stream(p), 9)],
            code: |p| match p {
                Protocol::Anthropic => Some(FailureCode::ProviderOverloaded),
                Protocol::Ollama => Some(FailureCode::OllamaError),
                _ => Some(FailureCode::ProviderStreamError),
            },
        },
        Fault {
            name: "connection reset mid-stream",
            replies: |p| vec![rebuilt(p, &first_half(p), 9).ending(Ending::Disconnect)],
            code: |_| Some(FailureCode::StreamInterrupted),
        },
        Fault {
            name: "stream ends without its terminator",
            replies: |p| {
                let all = units(p, &body(&text_reply(p, ANSWER, 4096)));
                vec![rebuilt(p, &all[..all.len() - 1].concat(), 9)]
            },
            code: |_| Some(FailureCode::StreamInterrupted),
        },
        Fault {
            name: "a malformed JSON chunk",
            replies: |p| {
                let garbage = match p {
                    Protocol::Ollama => "{\"message\": {\"content\": tru\n",
                    _ => "data: {\"choices\": [{\"delta\": tru\n\n",
                };
                vec![rebuilt(p, &(first_half(p) + garbage), 9)]
            },
            code: |_| Some(FailureCode::MalformedStream),
        },
        Fault {
            name: "a stall longer than the idle timeout",
            replies: |p| vec![rebuilt(p, &first_half(p), 9).ending(Ending::Hang)],
            code: |_| Some(FailureCode::IdleTimeout),
        },
        Fault {
            name: "one byte at a time (inside UTF-8 too), CRLF line endings",
            replies: |p| {
                let text = body(&text_reply(p, "Füñf — 5 ✓ 🌍 done.", 4096));
                let crlf = if p == Protocol::Ollama {
                    text
                } else {
                    text.replace('\n', "\r\n")
                };
                vec![rebuilt(p, &crlf, 1)]
            },
            code: |_| None,
        },
    ]
}

/// An instance over a SQLite file in `dir`, the built-in providers with [`http`]
/// options, a key for `provider`, and a thread set to it at `base_url` with the
/// calculator.
async fn thread_for(
    dir: &tempfile::TempDir,
    provider: &str,
    base_url: &str,
) -> (ArtInstance, String) {
    let secrets = Arc::new(MemoryStore::new());
    secrets.set(provider, &Secret::new(KEY)).unwrap();
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory { http: http() }),
        secrets,
        ManagerOptions::default(),
    ));
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let art = ArtInstance::builder(storage, providers).build().unwrap();
    let thread = wire::thread_at(&art, provider, "fake-model", base_url, &["calculator"]).await;
    (art, thread)
}

/// Run one provider × fault case; `Err` says what was wrong.
async fn case(provider: &str, protocol: Protocol, path: &str, fault: &Fault) -> Result<(), String> {
    let plan = json!({"title": "Sum", "intent": "add", "plan": ["calculate"], "toolCalls": [{"callId": "c1", "toolName": "calculator", "arguments": {"expression": "19 + 23"}}]});
    let mut replies = vec![text_reply(protocol, &plan.to_string(), 11)];
    replies.extend((fault.replies)(protocol));
    // The next question, after the fault: a plan without tools, then an answer.
    let again = json!({"title": "Again", "intent": "retry", "plan": ["answer"], "toolCalls": []});
    replies.push(text_reply(protocol, &again.to_string(), 11));
    replies.push(text_reply(protocol, "Still 42.", 5));
    let server = FakeServer::start(replies).await;
    let dir = tempfile::tempdir().unwrap();
    let (art, thread) = thread_for(&dir, provider, &format!("{}{path}", server.url())).await;

    let started = Instant::now();
    let run = art.process(
        wire::ask(&thread, "What is 19 + 23?"),
        CancellationToken::new(),
    );
    let out = tokio::time::timeout(BOUND, run)
        .await
        .map_err(|_| format!("no end within {BOUND:?} (a hang)"))?
        .map_err(|e| format!("process failed outright: {e}"))?;
    let took = started.elapsed();
    let trace = out.metadata.trace_id.clone();
    let observations = art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![trace.clone()],
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let has = |kind| observations.iter().any(|o| o.kind == kind);
    match (fault.code)(protocol) {
        Some(code) => {
            if out.metadata.status != RunStatus::Error {
                return Err(format!("status {:?}, not an error", out.metadata.status));
            }
            let error = out.metadata.error.clone().ok_or("no error in the result")?;
            if error.code != code {
                return Err(format!(
                    "code {} ({}), expected {code}",
                    error.code, error.message
                ));
            }
            if error.message.trim().is_empty() || error.message.contains(KEY) {
                return Err(format!("unclear or leaking message: {:?}", error.message));
            }
            if !has(ObservationType::Error) || !has(ObservationType::LlmStreamError) {
                return Err("no ERROR / LLM_STREAM_ERROR observation".into());
            }
        }
        None => {
            if out.metadata.status != RunStatus::Success {
                return Err(format!("failed: {:?}", out.metadata.error));
            }
            if out.response.content != "Füñf — 5 ✓ 🌍 done." {
                return Err(format!("answer {:?}", out.response.content));
            }
        }
    }
    // The thread is consistent: the question and the tool result are kept, nothing is
    // left streaming, and a partial answer is marked interrupted.
    let history = art
        .conversation
        .messages(&thread, MessageOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    if history.first().map(|m| (m.role, m.content.as_str()))
        != Some((MessageRole::User, "What is 19 + 23?"))
    {
        return Err(format!("question lost: {history:?}"));
    }
    if !history
        .iter()
        .any(|m| m.role == MessageRole::Tool && m.content.contains("42"))
    {
        return Err("tool result lost".into());
    }
    if let Some(m) = history
        .iter()
        .find(|m| m.status == MessageStatus::Streaming)
    {
        return Err(format!("a message is left streaming: {m:?}"));
    }
    if let Some(ai) = history.iter().find(|m| m.role == MessageRole::Ai)
        && (fault.code)(protocol).is_some()
        && ai.status != MessageStatus::Interrupted
    {
        return Err(format!("a failed answer is not marked interrupted: {ai:?}"));
    }
    // And it takes the next question.
    let next = tokio::time::timeout(
        BOUND,
        art.process(wire::ask(&thread, "And now?"), CancellationToken::new()),
    )
    .await
    .map_err(|_| "the next question hung".to_owned())?
    .map_err(|e| e.to_string())?;
    if next.metadata.status != RunStatus::Success || next.response.content != "Still 42." {
        return Err(format!(
            "the next question failed: {:?}",
            next.metadata.error
        ));
    }
    if took > BOUND {
        return Err(format!("took {took:?}"));
    }
    // The key is in no file: not the database, not its WAL.
    drop(art);
    for entry in std::fs::read_dir(dir.path()).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
        if bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()) {
            return Err(format!("the key is in {}", path.display()));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_of_every_provider_ends_cleanly() {
    let faults = faults();
    let mut failures = Vec::new();
    let mut passed = 0;
    for (provider, protocol, path) in PROVIDERS {
        for fault in &faults {
            match case(provider, *protocol, path, fault).await {
                Ok(()) => passed += 1,
                Err(why) => failures.push(format!("{provider} × {}: {why}", fault.name)),
            }
        }
    }
    println!(
        "fault matrix: {passed} of {} cases passed",
        PROVIDERS.len() * faults.len()
    );
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
