//! MCP servers as tool sources, against real servers from the registries:
//! `@modelcontextprotocol/server-everything` (npm; stdio and streamable HTTP) and
//! `mcp-server-time` (PyPI), as `cargo xtask test` installs them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use art::secrets::{MemoryStore, Secret, SecretStore};
use art::storage::sqlite::SqliteStorage;
use art::tools::ToolRegistry;
use art::tools::mcp::{McpManager, McpStore};
use art_testkit::mcp::{self as servers, marker, settle};
use art_types::mcp::{McpServerConfig, McpServerState, McpTransport};
use serde_json::json;

/// A manager over a SQLite file in a temporary directory and an in-memory keychain.
pub(crate) struct Harness {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) mcp: McpManager,
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) secrets: Arc<MemoryStore>,
}

pub(crate) fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let secrets = Arc::new(MemoryStore::new());
    let registry = Arc::new(ToolRegistry::new());
    let mcp = McpManager::new(
        McpStore::new(storage, secrets.clone()),
        Arc::clone(&registry),
    )
    .with_handshake_timeout(Duration::from_secs(10));
    Harness {
        dir,
        mcp,
        registry,
        secrets,
    }
}

impl Harness {
    /// Save `config` and start it.
    pub(crate) async fn add(&self, config: &McpServerConfig) -> McpServerState {
        self.mcp
            .store()
            .save(config, &BTreeMap::new())
            .await
            .unwrap();
        self.mcp.start(&config.name).await.unwrap().state
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_validates_and_calls_its_tools() {
    let h = harness();
    let mark = marker();
    let state = h.add(&servers::everything("everything", &mark)).await;
    let McpServerState::Ready {
        tools,
        protocol_version,
        server_info,
    } = state
    else {
        panic!("not ready: {state:?}");
    };
    assert!(tools >= 10, "{tools} tools");
    assert!(protocol_version.starts_with("20"), "{protocol_version}");
    assert!(server_info.is_some());
    let listed = h.mcp.tools("everything");
    assert!(
        listed
            .iter()
            .all(|t| t.tool_name.starts_with("everything__"))
    );
    only_the_task_tool_is_unusable(&h, "everything").await;
    assert!(h.registry.contains("everything__echo"));

    // Text.
    let echoed = h
        .mcp
        .call("everything", "echo", &json!({ "message": "hi there" }))
        .await
        .unwrap();
    assert_eq!(echoed["content"][0]["text"], "Echo: hi there", "{echoed}");
    // Arguments are checked against the tool's own schema before the call.
    let wrong = h
        .mcp
        .call("everything", "echo", &json!({ "message": 42 }))
        .await
        .unwrap_err();
    assert_eq!(wrong.code, "INVALID_TOOL_ARGUMENTS", "{wrong:?}");
    // An image comes whole, and the model is told of it, not given base64.
    let image = listed
        .iter()
        .find(|t| t.name.contains("image"))
        .expect("an image tool");
    let result = h
        .mcp
        .call("everything", &image.name, &json!({}))
        .await
        .unwrap();
    let png = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "image")
        .unwrap();
    assert_eq!(png["mimeType"], "image/png");
    assert!(png["data"].as_str().unwrap().len() > 100);
    let entry_view = art::tools::mcp::McpTool::model_view(&result, 20_000);
    assert!(entry_view.contains("[image: image/png"), "{entry_view}");
    assert!(!entry_view.contains(png["data"].as_str().unwrap()));

    // Stopping ends the process and takes its tools away.
    h.mcp.stop("everything").await;
    assert!(!h.registry.contains("everything__echo"));
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}

/// server-everything's one tool that runs only as a task (`taskSupport: required`, which
/// this client does not speak) is listed unusable with the reason and not offered to a
/// run (calling it says why); all its other tools are usable.
async fn only_the_task_tool_is_unusable(h: &Harness, server: &str) {
    let listed = h.mcp.tools(server);
    let unusable: Vec<_> = listed.iter().filter(|t| t.unusable.is_some()).collect();
    assert_eq!(unusable.len(), 1, "{listed:?}");
    assert_eq!(unusable[0].name, "simulate-research-query");
    let reason = unusable[0].unusable.as_deref().unwrap();
    assert!(reason.contains("only as a task"), "{reason}");
    assert!(!h.registry.contains(&unusable[0].tool_name));
    assert!(listed.len() >= 10);
    let called = h
        .mcp
        .call(server, &unusable[0].name, &json!({ "topic": "tides" }))
        .await
        .unwrap_err();
    assert_eq!(called.code, "TOOL_UNAVAILABLE", "{called:?}");
    assert!(called.message.contains("only as a task"), "{called:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_time_server_answers_with_structured_content() {
    let h = harness();
    let mark = marker();
    let state = h.add(&servers::time("time", &mark)).await;
    assert!(matches!(state, McpServerState::Ready { .. }), "{state:?}");
    assert!(h.registry.contains("time__get_current_time"));
    let now = h
        .mcp
        .call(
            "time",
            "get_current_time",
            &json!({ "timezone": "Europe/Paris" }),
        )
        .await
        .unwrap();
    assert_eq!(
        now["structuredContent"]["timezone"], "Europe/Paris",
        "{now}"
    );
    // A tool's own refusal (`isError`) is a tool error with the server's words.
    let refused = h
        .mcp
        .call(
            "time",
            "get_current_time",
            &json!({ "timezone": "Mars/Olympus" }),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, "TOOL_REPORTED_ERROR", "{refused:?}");
    assert!(
        refused.message.contains("Mars/Olympus"),
        "{}",
        refused.message
    );
    h.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_with_a_header_kept_in_the_keychain() {
    let (mut server, port) = art_testkit::mcp::everything_over_http().await;
    let h = harness();
    let config = McpServerConfig::new(
        "remote",
        McpTransport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: vec!["X-Api-Key".into()],
        },
    );
    let values = BTreeMap::from([("X-Api-Key".to_owned(), Secret::new("SENTINEL-mcp-header"))]);
    h.mcp.store().save(&config, &values).await.unwrap();
    let state = h.mcp.start("remote").await.unwrap().state;
    assert!(matches!(state, McpServerState::Ready { .. }), "{state:?}");
    only_the_task_tool_is_unusable(&h, "remote").await;
    let echoed = h
        .mcp
        .call("remote", "echo", &json!({ "message": "over HTTP" }))
        .await
        .unwrap();
    assert_eq!(echoed["content"][0]["text"], "Echo: over HTTP");
    // The header's value is in the keychain, not in the database.
    assert_eq!(
        h.secrets
            .get("mcp:remote:x-api-key")
            .unwrap()
            .unwrap()
            .expose(),
        "SENTINEL-mcp-header"
    );
    h.mcp.shutdown().await;
    for entry in std::fs::read_dir(h.dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(8).any(|w| w == b"SENTINEL"));
    }
    // Removing the server removes the header's value too.
    assert!(h.mcp.store().remove("remote").await.unwrap());
    assert!(h.secrets.get("mcp:remote:x-api-key").unwrap().is_none());
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_calls_an_mcp_tool_and_every_export_names_its_server() {
    use art::ArtInstance;
    use art::agent::CancellationToken;
    use art::export::{self, Format, Options, Redactor, Scope};
    use art_testkit::framework::scripted::{self, Script, ScriptedSource, plan_json};
    use art_types::mcp::{McpOrigin, McpTransportKind};
    use art_types::{AgentProps, ObservationType, RunStatus};

    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let plan = plan_json(
        "Time",
        &[("c1", "time__get_current_time", json!({ "timezone": "UTC" }))],
    );
    let source = Arc::new(ScriptedSource::new(vec![
        Script::text(&plan),
        Script::text("It is noon."),
    ]));
    let art = ArtInstance::builder(storage.clone(), source)
        .build()
        .unwrap();
    let mcp = &art.mcp;
    let mark = marker();
    mcp.store()
        .save(&servers::time("time", &mark), &BTreeMap::new())
        .await
        .unwrap();
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    // The user trusts this tool in this thread (MCP tools ask first otherwise).
    let mut config = scripted::thread_config("m", &["time__get_current_time"]);
    config.tool_policies.insert(
        "time__get_current_time".into(),
        art_types::approval::ToolPolicy::Auto,
    );
    art.state.set_thread_config(&thread, &config).await.unwrap();
    assert!(!art.tools.contains("time__get_current_time"));

    // The run starts the servers of the tools its thread enables.
    let props = AgentProps {
        query: "What time is it?".into(),
        thread_id: thread.clone(),
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.metadata.status,
        RunStatus::Success,
        "{:?}",
        out.metadata.error
    );
    assert_eq!(out.metadata.tool_calls, 1);
    let trace = out.metadata.trace_id.clone();
    // Without the thread's word, an MCP tool asks first (its server's default).
    assert_eq!(
        art.tools.default_policy("time__get_current_time"),
        Some(art_types::approval::ToolPolicy::Ask)
    );
    assert_eq!(
        art.tools.default_policy("calculator"),
        Some(art_types::approval::ToolPolicy::Auto)
    );
    let observations = art
        .observations
        .query(&art::observation::ObservationQuery {
            trace_ids: vec![trace.clone()],
            types: vec![ObservationType::ToolExecution],
            ..Default::default()
        })
        .await
        .unwrap();
    let call = &observations[0];
    assert_eq!(call.content["status"], "success", "{}", call.content);
    // The model read the server's answer as text; the trace keeps the whole result.
    assert!(
        call.content["output"]
            .as_str()
            .unwrap()
            .contains("\"timezone\"")
    );
    assert_eq!(
        call.content["result"]["structuredContent"]["timezone"],
        "UTC"
    );
    let origin = McpOrigin::of(&call.metadata).unwrap();
    assert_eq!(
        (
            origin.server.as_str(),
            origin.transport,
            origin.tool.as_str()
        ),
        ("time", McpTransportKind::Stdio, "get_current_time")
    );
    assert!(origin.protocol_version.is_some());

    let redactor = Redactor::new(Vec::new());
    let mut exported = HashMap::new();
    for format in [Format::Otlp, Format::Markdown, Format::Jsonl] {
        let mut bytes = Vec::new();
        export::export(
            &art,
            &Scope::Trace(trace.clone()),
            format,
            Options::default(),
            &redactor,
            &mut bytes,
            &mut |_| {},
        )
        .await
        .unwrap();
        exported.insert(format!("{format:?}"), String::from_utf8(bytes).unwrap());
    }
    let otlp = &exported["Otlp"];
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("network.transport", "pipe"),
        ("art.mcp.server", "time"),
        ("gen_ai.tool.name", "time__get_current_time"),
    ] {
        assert!(
            otlp.contains(&format!(
                r#""key":"{key}","value":{{"stringValue":"{value}"}}"#
            )),
            "{key} in {otlp}"
        );
    }
    assert!(
        exported["Markdown"].contains("MCP server `time` over stdio"),
        "{}",
        exported["Markdown"]
    );
    let recorded = exported["Jsonl"]
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["observation"]["type"] == "TOOL_EXECUTION")
        .unwrap();
    assert_eq!(
        McpOrigin::of(&recorded["observation"]["metadata"]),
        Some(origin)
    );
    mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_environment_variable_reaches_the_server_from_the_keychain_only() {
    let h = harness();
    let mark = marker();
    let mut config = servers::everything("everything", &mark);
    if let McpTransport::Stdio { env, .. } = &mut config.transport {
        env.insert("SERVICE_API_KEY".into(), "SENTINEL-env-secret".into());
        env.insert("TZ".into(), "UTC".into());
    }
    let state = h.add(&config).await;
    assert!(matches!(state, McpServerState::Ready { .. }), "{state:?}");
    // The name is in the configuration, the value in the keychain.
    let stored = h.mcp.store().get("everything").await.unwrap();
    let McpTransport::Stdio {
        env, secret_env, ..
    } = &stored.transport
    else {
        panic!("{stored:?}")
    };
    assert_eq!(secret_env, &["SERVICE_API_KEY".to_owned()]);
    assert!(!env.contains_key("SERVICE_API_KEY") && env["TZ"] == "UTC");
    let key = "mcp:everything:env:SERVICE_API_KEY";
    assert_eq!(
        h.secrets.get(key).unwrap().unwrap().expose(),
        "SENTINEL-env-secret"
    );
    // The server got it.
    let seen = h
        .mcp
        .call("everything", "get-env", &json!({}))
        .await
        .unwrap();
    assert!(seen.to_string().contains("SENTINEL-env-secret"), "{seen}");
    // A server that echoes its secret into a result: exports redact it.
    let accounts = h.mcp.store().secret_accounts().await.unwrap();
    assert_eq!(accounts, [key]);
    let redactor =
        art::export::Redactor::for_keys(h.secrets.as_ref(), accounts.iter().map(String::as_str));
    assert!(!redactor.apply(&seen.to_string()).contains("SENTINEL"));
    // Saved again unchanged (the name alone), it keeps its value.
    h.mcp.store().save(&stored, &BTreeMap::new()).await.unwrap();
    assert!(h.secrets.get(key).unwrap().is_some());
    h.mcp.shutdown().await;
    for entry in std::fs::read_dir(h.dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(8).any(|w| w == b"SENTINEL"));
    }
    assert!(h.mcp.store().remove("everything").await.unwrap());
    assert!(h.secrets.get(key).unwrap().is_none());
    assert_eq!(settle(&mark, 5).await, 0);
}
