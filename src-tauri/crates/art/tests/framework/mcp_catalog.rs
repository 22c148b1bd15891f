//! A server's prompts, resources and progress reports, against the reference server
//! `@modelcontextprotocol/server-everything` (npm): its prompts listed with their
//! arguments and filled in (a required argument left out refused before the server is
//! asked, the server's own refusal in its words, an embedded resource attached); its
//! resources listed, read and attached through the attachment store; a long call's
//! progress recorded on the run and shown on its card. A 50 MB resource (the in-tree
//! fault server) is read whole and attached with its size in tokens.

use std::collections::BTreeMap;
use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::attachments::{Attachments, BlobStore};
use art::observation::ObservationQuery;
use art::storage::sqlite::SqliteStorage;
use art::tools::mcp::McpError;
use art::tools::mcp::catalog::{self, Piece};
use art_testkit::framework::scripted::{self, Script, ScriptedSource, plan_json};
use art_testkit::mcp::{self as servers, marker, settle};
use art_types::mcp::catalog::ToolProgress;
use art_types::record::view::RunView;
use art_types::{AgentProps, AttachmentKind, AttachmentProblem, ObservationType, RunStatus};
use serde_json::json;

/// An instance with `config`'s server started, a thread, and an attachment store.
async fn started(
    config: art_types::mcp::McpServerConfig,
    scripts: Vec<Script>,
) -> (tempfile::TempDir, Arc<ArtInstance>, Attachments, String) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let source = Arc::new(ScriptedSource::new(scripts));
    let art = Arc::new(ArtInstance::builder(storage, source).build().unwrap());
    let name = config.name.clone();
    art.mcp
        .store()
        .save(&config, &BTreeMap::new())
        .await
        .unwrap();
    art.mcp.start(&name).await.unwrap();
    let store =
        Attachments::open(dir.path().join("attachments"), BlobStore::DEFAULT_LIMIT).unwrap();
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    (dir, art, store, thread)
}

fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_are_listed_filled_in_and_refused_with_reasons() {
    let mark = marker();
    let (_dir, art, store, _) = started(servers::everything("everything", &mark), Vec::new()).await;

    let prompts = art.mcp.prompts("everything").await.unwrap();
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    let arguments: Vec<(&str, bool)> = args
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(arguments, [("city", true), ("state", false)]);
    assert!(prompts.iter().any(|p| p.name == "simple-prompt"));
    assert_eq!(
        art.mcp.all_prompts().await,
        prompts,
        "one server: all its prompts"
    );

    // Filled in: the server's message.
    let pieces = art
        .mcp
        .prompt(
            "everything",
            "args-prompt",
            &values(&[("city", "Lyon"), ("state", "Rhône")]),
        )
        .await
        .unwrap();
    assert_eq!(
        pieces,
        [Piece::Text {
            assistant: false,
            text: "What's weather in Lyon, Rhône?".into()
        }]
    );

    // A required argument left out, an argument it does not take, a prompt it lacks:
    // refused here, naming what is wrong.
    let missing = art
        .mcp
        .prompt("everything", "args-prompt", &values(&[]))
        .await;
    assert!(
        matches!(&missing, Err(McpError::InvalidConfig { field: "arguments", message }) if message.contains("needs city")),
        "{missing:?}"
    );
    let unknown = art
        .mcp
        .prompt(
            "everything",
            "args-prompt",
            &values(&[("city", "Lyon"), ("country", "FR")]),
        )
        .await;
    assert!(
        matches!(&unknown, Err(McpError::InvalidConfig { message, .. }) if message.contains("takes no country")),
        "{unknown:?}"
    );
    let absent = art.mcp.prompt("everything", "no-such", &values(&[])).await;
    assert!(
        matches!(&absent, Err(McpError::InvalidConfig { field: "prompt", message }) if message.contains("args-prompt")),
        "{absent:?}"
    );

    // The server refuses arguments it cannot use: its words come back.
    let refused = art
        .mcp
        .prompt(
            "everything",
            "resource-prompt",
            &values(&[("resourceType", "Video"), ("resourceId", "1")]),
        )
        .await;
    let Err(error @ McpError::Refused { .. }) = &refused else {
        panic!("{refused:?}");
    };
    assert!(
        error.to_string().contains("Invalid resourceType"),
        "{error}"
    );

    // An embedded resource: attached through the store, the text in the box.
    let pieces = art
        .mcp
        .prompt(
            "everything",
            "resource-prompt",
            &values(&[("resourceType", "Text"), ("resourceId", "3")]),
        )
        .await
        .unwrap();
    let filled = catalog::fill(pieces, &store);
    assert!(
        filled
            .text
            .contains("includes the Text resource with id: 3"),
        "{}",
        filled.text
    );
    assert_eq!(filled.attached.len(), 1, "{filled:?}");
    let attached = &filled.attached[0];
    assert_eq!(attached.name, "3.txt");
    assert!(matches!(attached.kind, AttachmentKind::Document { tokens, .. } if tokens > 0));
    assert!(
        store
            .text(attached)
            .unwrap()
            .unwrap()
            .contains("Resource 3"),
        "the document's text is the resource's"
    );
    drop(art);
    assert_eq!(settle(&mark, 10).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_listed_read_and_attached() {
    let mark = marker();
    let (_dir, art, store, _) = started(servers::everything("everything", &mark), Vec::new()).await;

    let resources = art.mcp.resources("everything").await.unwrap();
    let doc = resources
        .iter()
        .find(|r| r.uri.starts_with("demo://resource/static/document/") && r.uri.ends_with(".md"))
        .unwrap_or_else(|| panic!("a static document among {resources:?}"));
    assert_eq!(doc.server, "everything");
    assert_eq!(doc.mime_type.as_deref(), Some("text/markdown"));

    let pieces = art.mcp.read_resource("everything", &doc.uri).await.unwrap();
    let (attached, refused) = catalog::attach(pieces, &store);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(attached.len(), 1);
    assert!(attached[0].name.ends_with(".md"), "{}", attached[0].name);
    assert!(!attached[0].is_image());
    assert!(store.text(&attached[0]).unwrap().unwrap().contains('#'));

    // A blob whose bytes are text: attached as the text they are.
    let pieces = art
        .mcp
        .read_resource("everything", "demo://resource/dynamic/blob/2")
        .await
        .unwrap();
    let (attached, _) = catalog::attach(pieces, &store);
    assert!(
        store
            .text(&attached[0])
            .unwrap()
            .unwrap()
            .starts_with("Resource 2")
    );

    // A template: its variable filled in, read like a listed resource.
    let templates = art.mcp.resource_templates("everything").await.unwrap();
    let text = templates
        .iter()
        .find(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}")
        .unwrap_or_else(|| panic!("{templates:?}"));
    assert_eq!(text.variables(), ["resourceId"]);
    let uri = text.fill(&values(&[("resourceId", "4")])).unwrap();
    let pieces = art.mcp.read_resource("everything", &uri).await.unwrap();
    let (attached, _) = catalog::attach(pieces, &store);
    assert_eq!(attached[0].name, "4.txt");
    assert!(
        store
            .text(&attached[0])
            .unwrap()
            .unwrap()
            .starts_with("Resource 4")
    );

    // An address it does not know: the server's words.
    let unknown = art
        .mcp
        .read_resource("everything", "demo://nowhere/1")
        .await;
    assert!(
        matches!(&unknown, Err(McpError::Refused { .. })),
        "{unknown:?}"
    );
    // A server that does not run: said so.
    let stopped = art.mcp.resources("nobody").await;
    assert!(
        matches!(&stopped, Err(McpError::UnknownServer(_))),
        "{stopped:?}"
    );
    drop(art);
    assert_eq!(settle(&mark, 10).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_calls_progress_is_recorded_on_its_card() {
    const TOOL: &str = "everything__trigger-long-running-operation";
    let mark = marker();
    let plan = plan_json(
        "Wait",
        &[("c1", TOOL, json!({"duration": 1.5, "steps": 3}))],
    );
    let scripts = vec![Script::text(&plan), Script::text("Done.")];
    let (_dir, art, _store, thread) =
        started(servers::everything("everything", &mark), scripts).await;
    let mut config = scripted::thread_config("m", &[TOOL]);
    config
        .tool_policies
        .insert(TOOL.into(), art_types::approval::ToolPolicy::Auto);
    art.state.set_thread_config(&thread, &config).await.unwrap();
    let trace = format!("run-{}", marker());
    let props = AgentProps {
        query: "Take your time".into(),
        thread_id: thread.clone(),
        trace_id: Some(trace.clone()),
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);

    let observations = art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![trace],
            ..Default::default()
        })
        .await
        .unwrap();
    let reports: Vec<ToolProgress> = observations
        .iter()
        .filter(|o| o.kind == ObservationType::ToolProgress)
        .map(|o| serde_json::from_value(o.content.clone()).unwrap())
        .collect();
    assert!(!reports.is_empty(), "progress was recorded");
    assert!(
        reports
            .iter()
            .all(|r| r.call_id == "c1" && r.total == Some(3.0))
    );
    let done: Vec<f64> = reports.iter().map(|r| r.progress).collect();
    assert!(done.windows(2).all(|w| w[0] < w[1]), "{done:?}");
    assert_eq!(
        done.last(),
        Some(&3.0),
        "the last report (done) is always kept"
    );

    // The card shows the last report.
    let view = RunView::of(&thread, &observations[0].trace_id, &observations);
    let card = view.tools.iter().find(|t| t.call_id == "c1").unwrap();
    assert_eq!(
        card.progress.as_ref().map(ToString::to_string).as_deref(),
        Some("3 of 3")
    );
    drop(art);
    assert_eq!(settle(&mark, 10).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_resource_is_read_whole_and_attached_with_its_size() {
    let mark = marker();
    let (_dir, art, store, _) =
        started(servers::fault("big", "big-resource", &mark), Vec::new()).await;
    let listed = art.mcp.resources("big").await.unwrap();
    assert_eq!(listed[0].size, Some(50 * 1024 * 1024));
    let pieces = art
        .mcp
        .read_resource("big", "file:///big.txt")
        .await
        .unwrap();
    let (attached, refused) = catalog::attach(pieces, &store);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(attached[0].name, "big.txt");
    assert_eq!(attached[0].size, 50 * 1024 * 1024);
    let AttachmentKind::Document { tokens, .. } = attached[0].kind else {
        panic!("{:?}", attached[0].kind);
    };
    assert!(tokens > 5_000_000, "its size in tokens is told: {tokens}");

    // A store that takes less refuses it with the numbers, keeping nothing.
    let small = Attachments::open(_dir.path().join("small"), 1 << 20).unwrap();
    let pieces = art
        .mcp
        .read_resource("big", "file:///big.txt")
        .await
        .unwrap();
    let (attached, refused) = catalog::attach(pieces, &small);
    assert!(attached.is_empty());
    assert!(
        matches!(&refused[..], [AttachmentProblem::TooLarge { size, .. }] if *size == 50 * 1024 * 1024),
        "{refused:?}"
    );
    drop(art);
    assert_eq!(settle(&mark, 10).await, 0);
}
