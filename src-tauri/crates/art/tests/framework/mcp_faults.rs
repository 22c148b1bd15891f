//! MCP servers that fail: each case ends in a clear state or tool error, never a panic
//! or a hang, and leaves no process behind. Stdio faults come from the in-tree fault
//! server (`tests/mcp/fault_server.py`); HTTP faults from the testkit's fake server.

use std::time::Duration;

use art_testkit::fake::{Ending, FakeServer, Reply};
use art_testkit::mcp::{self as servers, marker, settle};
use art_types::mcp::{McpServerConfig, McpServerState, McpTransport};
use serde_json::json;

use crate::mcp::harness;

fn failed(state: &McpServerState) -> (&str, Option<&str>) {
    match state {
        McpServerState::Failed { reason, hint } => (reason, hint.as_deref()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_says_what_to_install() {
    let h = harness();
    let config = McpServerConfig::new(
        "files",
        McpTransport::Stdio {
            command: "/no/such/dir/npx".into(),
            args: vec![],
            env: Default::default(),
            cwd: None,
            secret_env: Vec::new(),
        },
    );
    let state = h.add(&config).await;
    let (reason, hint) = failed(&state);
    assert_eq!(reason, "`/no/such/dir/npx` not found");
    assert!(hint.unwrap().starts_with("install Node.js"), "{hint:?}");
    // The list still shows it, and the other servers still work.
    let mark = marker();
    let ok = h.add(&servers::fault("echo", "ok", &mark)).await;
    // The fault server agrees to the version asked for: the newest that still has an
    // `initialize` (2026-07-28 has none).
    assert!(
        matches!(&ok, McpServerState::Ready { tools: 1, protocol_version, .. }
            if protocol_version == "2025-11-25"),
        "{ok:?}"
    );
    assert_eq!(h.mcp.statuses().await.unwrap().len(), 2);
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_during_initialize_shows_its_code_and_last_words() {
    let h = harness();
    let mark = marker();
    let state = h.add(&servers::fault("quits", "exit-on-init", &mark)).await;
    let (reason, _) = failed(&state);
    assert_eq!(
        reason,
        "exited with code 3: fault server: refusing to start"
    );
    let status = h.mcp.status("quits").await.unwrap();
    assert_eq!(status.stderr_tail, ["fault server: refusing to start"]);
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_skipped_and_the_answers_still_arrive() {
    let h = harness();
    let mark = marker();
    let state = h.add(&servers::fault("noisy", "garbage", &mark)).await;
    assert!(
        matches!(state, McpServerState::Ready { tools: 1, .. }),
        "{state:?}"
    );
    let echoed = h
        .mcp
        .call("noisy", "echo", &json!({ "message": "still here" }))
        .await
        .unwrap();
    assert_eq!(echoed["content"][0]["text"], "still here");
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

/// A program that is not an MCP server (it prints a usage text) is reported with that
/// line within moments, not after the 30 s handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_prints_something_else_is_reported_with_the_line_at_once() {
    let h = harness();
    let mark = marker();
    let started = std::time::Instant::now();
    let state = h.add(&servers::fault("usage", "not-mcp", &mark)).await;
    let (reason, hint) = failed(&state);
    assert_eq!(
        reason,
        "the server wrote \"Usage: fault_server.py MODE\" on stdout instead of MCP messages"
    );
    assert!(hint.unwrap().contains("stderr"), "{hint:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_a_tool_error_and_the_server_shows_as_stopped() {
    let h = harness();
    let mark = marker();
    h.add(&servers::fault("fragile", "crash-on-call", &mark))
        .await;
    let error = h
        .mcp
        .call("fragile", "echo", &json!({ "message": "x" }))
        .await
        .unwrap_err();
    assert_eq!(error.code, "MCP_CALL_FAILED", "{error:?}");
    assert!(error.message.contains("fragile"), "{}", error.message);
    // The server's exit and its last stderr line are noticed as they happen (a moment
    // after the call failed, on a loaded machine).
    let mut state = h.mcp.status("fragile").await.unwrap().state;
    for _ in 0..100 {
        if matches!(&state, McpServerState::Failed { reason, .. } if reason.contains("crashing")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        state = h.mcp.status("fragile").await.unwrap().state;
    }
    let (reason, hint) = failed(&state);
    assert_eq!(reason, "stopped working: fault server: crashing mid-call");
    assert!(hint.is_some());
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_hangs_times_out_and_the_server_is_told_to_cancel() {
    let h = harness();
    let mark = marker();
    let mut config = servers::fault("slow", "hang-on-call", &mark);
    config.timeout_secs = 1;
    h.add(&config).await;
    let error = h
        .mcp
        .call("slow", "echo", &json!({ "message": "x" }))
        .await
        .unwrap_err();
    assert_eq!(error.code, "TOOL_TIMEOUT", "{error:?}");
    // The server heard `notifications/cancelled` for the request.
    let mut heard = false;
    for _ in 0..50 {
        let tail = h.mcp.status("slow").await.unwrap().stderr_tail;
        if tail.iter().any(|l| l.starts_with("cancelled ")) {
            heard = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(heard, "no notifications/cancelled reached the server");
    // It still answers what it can.
    assert!(matches!(
        h.mcp.status("slow").await.unwrap().state,
        McpServerState::Ready { .. }
    ));
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_result_is_kept_whole_and_cut_for_the_model() {
    let h = harness();
    let mark = marker();
    h.add(&servers::fault("big", "big-result", &mark)).await;
    let result = h
        .mcp
        .call("big", "echo", &json!({ "message": "x" }))
        .await
        .unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), 50 * 1024 * 1024);
    let view = art::tools::mcp::McpTool::model_view(&result, 20_000);
    assert!(view.len() < 21_000);
    assert!(view.ends_with(&format!(
        "[truncated: the first 20000 of {} characters; the whole result is in the trace]",
        50 * 1024 * 1024
    )));
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_or_removing_a_server_ends_what_it_started_too() {
    let h = harness();
    let mark = marker();
    h.add(&servers::fault("parent", "spawn-child", &mark)).await;
    // The server and its grandchild.
    for _ in 0..50 {
        if servers::left_behind(&mark) == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(servers::left_behind(&mark), 2);
    h.mcp.forget("parent").await;
    assert!(h.mcp.store().remove("parent").await.unwrap());
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
    // Dropping the manager (the app quitting) does the same.
    let mark = marker();
    h.add(&servers::fault("again", "spawn-child", &mark)).await;
    drop(h);
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_whose_schema_does_not_compile_is_listed_unusable_and_the_others_work() {
    let h = harness();
    let mark = marker();
    let state = h.add(&servers::fault("mixed", "bad-schema", &mark)).await;
    assert!(
        matches!(state, McpServerState::Ready { tools: 2, .. }),
        "{state:?}"
    );
    let tools = h.mcp.tools("mixed");
    let broken = tools.iter().find(|t| t.name == "broken").unwrap();
    assert!(
        broken
            .unusable
            .as_deref()
            .unwrap()
            .contains("invalid input schema"),
        "{broken:?}"
    );
    assert!(!h.registry.contains("mixed__broken"));
    let unknown = h.mcp.call("mixed", "nope", &json!({})).await.unwrap_err();
    assert_eq!(unknown.code, "TOOL_NOT_FOUND");
    let echoed = h
        .mcp
        .call("mixed", "echo", &json!({ "message": "fine" }))
        .await
        .unwrap();
    assert_eq!(echoed["content"][0]["text"], "fine");
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

/// The state of an HTTP server at `url` once started.
async fn http_state_at(url: &str, handshake_secs: u64) -> McpServerState {
    let h = harness();
    let config = McpServerConfig::new(
        "remote",
        McpTransport::Http {
            url: url.to_owned(),
            headers: vec![],
        },
    );
    h.mcp
        .store()
        .save(&config, &Default::default())
        .await
        .unwrap();
    let mcp = h
        .mcp
        .with_handshake_timeout(Duration::from_secs(handshake_secs));
    mcp.start("remote").await.unwrap().state
}

async fn http_state(reply: Option<Reply>, handshake_secs: u64) -> McpServerState {
    match reply {
        Some(reply) => {
            let server = FakeServer::start(vec![reply]).await;
            http_state_at(&format!("{}/mcp", server.url()), handshake_secs).await
        }
        None => {
            // Accepts connections and never answers.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            let silent = tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((socket, _)) = listener.accept().await {
                    held.push(socket);
                }
            });
            let state = http_state_at(&url, handshake_secs).await;
            silent.abort();
            state
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_say_the_status_and_what_to_check() {
    // A bare 401 (no challenge: no way to sign in) says the status and the token.
    let denied = http_state(Some(Reply::error(401, r#"{"error":"unauthorized"}"#)), 5).await;
    let (reason, hint) = failed(&denied);
    assert!(reason.starts_with("401 from http://127.0.0.1:"), "{reason}");
    assert!(hint.unwrap().contains("token"));
    let missing = http_state(Some(Reply::error(404, "{}")), 5).await;
    let (reason, hint) = failed(&missing);
    assert!(reason.starts_with("404 from"), "{reason}");
    assert!(hint.unwrap().contains("/mcp"));
    let broken = http_state(Some(Reply::error(500, r#"{"error":"boom"}"#)), 5).await;
    assert!(failed(&broken).0.starts_with("500 from"), "{broken:?}");
    // A 401 as the specification has it, with the challenge: the server asks to sign in.
    let challenged = Reply::error(401, r#"{"error":"invalid_token"}"#).header(
        "WWW-Authenticate",
        r#"Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource""#,
    );
    let challenged = http_state(Some(challenged), 5).await;
    assert!(
        matches!(&challenged, McpServerState::SignInNeeded { reason, scope: None } if reason == "asks to sign in"),
        "{challenged:?}"
    );
    // A 403 naming the scope it wants: more access, that scope kept for the sign-in.
    let more = Reply::error(403, r#"{"error":"insufficient_scope"}"#).header(
        "WWW-Authenticate",
        r#"Bearer error="insufficient_scope", scope="files:write""#,
    );
    let more = http_state(Some(more), 5).await;
    assert!(
        matches!(&more, McpServerState::SignInNeeded { reason, scope: Some(scope) }
            if reason.contains("more access") && scope == "files:write"),
        "{more:?}"
    );
    // Nothing listening: what happened and what to check, no SDK type names.
    let closed = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let refused = http_state_at(&format!("http://127.0.0.1:{closed}/mcp"), 5).await;
    let (reason, hint) = failed(&refused);
    assert_eq!(
        reason,
        format!(
            "cannot reach http://127.0.0.1:{closed}/mcp: nothing answers there (connection \
             refused or no route)"
        )
    );
    assert!(hint.unwrap().contains("is the server running"), "{hint:?}");
}

/// A server that dies in the middle of a call over HTTP: the call fails at once, saying
/// the server went away — not after the 60 s call timeout, not as a timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_dies_mid_call_is_noticed_at_once() {
    let (mut server, port) = art_testkit::mcp::everything_over_http().await;
    let h = harness();
    let config = McpServerConfig::new(
        "remote",
        McpTransport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: vec![],
        },
    );
    let state = h.add(&config).await;
    assert!(matches!(state, McpServerState::Ready { .. }), "{state:?}");
    let calling = async {
        let started = std::time::Instant::now();
        let outcome = h
            .mcp
            .call(
                "remote",
                "trigger-long-running-operation",
                &json!({ "duration": 40, "steps": 1 }),
            )
            .await;
        (outcome, started.elapsed())
    };
    let killing = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        server.kill().await.unwrap();
    };
    let ((outcome, took), ()) = tokio::join!(calling, killing);
    let error = outcome.unwrap_err();
    assert_eq!(error.code, "MCP_CALL_FAILED", "{error:?}");
    assert!(error.message.contains("went away"), "{}", error.message);
    assert!(!error.message.contains("rmcp::"), "{}", error.message);
    assert!(took < Duration::from_secs(15), "noticed after {took:?}");
    h.mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_that_drops_or_never_answers_fails_in_time() {
    let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"res";
    let dropped = http_state(
        Some(
            Reply::sse(sse, 8)
                .header("Content-Type", "text/event-stream")
                .ending(Ending::Disconnect),
        ),
        5,
    )
    .await;
    let (reason, _) = failed(&dropped);
    assert!(!reason.is_empty());
    let started = std::time::Instant::now();
    let silent = http_state(None, 1).await;
    assert_eq!(failed(&silent).0, "the handshake did not finish within 1 s");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_tools_is_listed_and_a_change_is_picked_up() {
    let h = harness();
    let mark = marker();
    let state = h.add(&servers::fault("paged", "paged", &mark)).await;
    assert!(
        matches!(state, McpServerState::Ready { tools: 2, .. }),
        "{state:?}"
    );
    assert!(h.registry.contains("paged__echo") && h.registry.contains("paged__echo2"));

    h.add(&servers::fault("grows", "changing", &mark)).await;
    assert!(!h.registry.contains("grows__echo2"));
    h.mcp
        .call("grows", "echo", &json!({ "message": "x" }))
        .await
        .unwrap();
    // `notifications/tools/list_changed` re-lists its tools.
    for _ in 0..100 {
        if h.registry.contains("grows__echo2") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(h.registry.contains("grows__echo2"));
    assert_eq!(h.mcp.tools("grows").len(), 2);
    assert!(matches!(
        h.mcp.status("grows").await.unwrap().state,
        McpServerState::Ready { tools: 2, .. }
    ));
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_speaking_an_unknown_protocol_version_is_refused_clearly() {
    let h = harness();
    let mark = marker();
    let state = h
        .add(&servers::fault("ancient", "old-version", &mark))
        .await;
    let (reason, _) = failed(&state);
    assert!(
        reason.contains("1999-01-01") || reason.contains("version"),
        "{reason}"
    );
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_run_cancels_its_mcp_call_on_the_server() {
    use std::sync::Arc;

    use art::ArtInstance;
    use art::agent::CancellationToken;
    use art::storage::sqlite::SqliteStorage;
    use art_testkit::framework::scripted::{self, Script, ScriptedSource, plan_json};
    use art_types::{AgentProps, FailureCode};

    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let plan = plan_json("Wait", &[("c1", "slow__echo", json!({ "message": "x" }))]);
    let source = Arc::new(ScriptedSource::new(vec![Script::text(&plan)]));
    let art = ArtInstance::builder(storage.clone(), source)
        .build()
        .unwrap();
    let mcp = &art.mcp;
    let mark = marker();
    let config = servers::fault("slow", "hang-on-call", &mark);
    mcp.store()
        .save(&config, &Default::default())
        .await
        .unwrap();
    mcp.start("slow").await.unwrap();
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let mut settings = scripted::thread_config("m", &["slow__echo"]);
    settings
        .tool_policies
        .insert("slow__echo".into(), art_types::approval::ToolPolicy::Auto);
    art.state
        .set_thread_config(&thread, &settings)
        .await
        .unwrap();

    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.cancel();
    });
    let props = AgentProps {
        query: "Wait for it".into(),
        thread_id: thread,
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art.process(props, cancel).await.unwrap();
    assert_eq!(out.metadata.error.unwrap().code, FailureCode::Cancelled);
    let mut heard = false;
    for _ in 0..50 {
        let tail = mcp.status("slow").await.unwrap().stderr_tail;
        if tail.iter().any(|l| l.starts_with("cancelled ")) {
            heard = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(heard, "the server never heard the call was cancelled");
    mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}
