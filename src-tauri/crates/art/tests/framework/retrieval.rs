//! Knowledge in runs: a search in the OTLP export (the `execute_tool search_knowledge`
//! span holds a `retrieval` span as the GenAI conventions describe it — data source,
//! top-k, the passages' ids and scores — with the query text only when content is
//! exported), and a thread that always searches first (one search before planning,
//! recorded like any call, what it found given to every phase).

use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::export::{Format, Options, Redactor, Scope};
use art::knowledge::{self, DATABASE_FILE, KnowledgeStore};
use art::observation::ObservationQuery;
use art::storage::sqlite::SqliteStorage;
use art::tools::search_knowledge::SearchKnowledgeTool;
use art_testkit::framework::scripted::{self, Script, ScriptedSource, plan_json};
use art_types::AgentProps;
use art_types::knowledge::SearchOutput;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::{Span, TracesData, span::SpanKind};
use serde_json::{Value, json};

use crate::export::{attr, attr_str, export_to_string};

/// The spans of an OTLP export of one run.
fn spans(text: &str) -> Vec<Span> {
    let data: TracesData = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    data.resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect()
}

/// A knowledge database in `dir` with one collection, "Farm", of one indexed document.
fn farm(dir: &std::path::Path) -> Arc<KnowledgeStore> {
    let docs = dir.join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("harvest.md"),
        "# Pears\n\nThe pear trees gave 40 crates in October.\n\n# Apples\n\nThe apple trees gave 12 crates.\n",
    )
    .unwrap();
    let store = Arc::new(KnowledgeStore::open(&dir.join(DATABASE_FILE)).unwrap());
    let farm = store.create("Farm").unwrap();
    knowledge::add(&store, &farm.id, &[docs], false).unwrap();
    while knowledge::index_next(&store).unwrap().is_some() {}
    store
}

/// An instance with the search tool over `store`, answering with `scripts`.
fn instance(
    dir: &std::path::Path,
    store: &Arc<KnowledgeStore>,
    source: Arc<ScriptedSource>,
) -> ArtInstance {
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, source)
        .tool(Arc::new(SearchKnowledgeTool::new(Arc::clone(store))))
        .build()
        .unwrap()
}

/// Ask `question` on a new thread of `art` set up as `config`; the run's trace id.
async fn ask(art: &ArtInstance, config: &art_types::ThreadConfig, question: &str) -> String {
    let thread = art
        .conversation
        .create_thread(Some("Harvest"))
        .await
        .unwrap()
        .thread_id;
    art.state.set_thread_config(&thread, config).await.unwrap();
    let props = AgentProps {
        query: question.into(),
        thread_id: thread,
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert!(out.metadata.error.is_none(), "{:?}", out.metadata.error);
    out.metadata.trace_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_knowledge_search_is_a_retrieval_span_under_its_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm(dir.path());

    let plan = plan_json(
        "Pears",
        &[(
            "s1",
            "search_knowledge",
            json!({ "query": "pear crates", "collection": "Farm", "k": 3 }),
        )],
    );
    let source = Arc::new(ScriptedSource::new(vec![
        Script::text(&plan),
        Script::text("The pear trees gave 40 crates [1]."),
    ]));
    let art = instance(dir.path(), &store, source);
    let config = scripted::thread_config("test-model", &["search_knowledge"]);
    let trace = ask(&art, &config, "How many crates of pears?").await;
    let scope = Scope::Trace(trace);
    let redactor = Redactor::new(Vec::new());

    // Content exported: the query and where each passage is.
    let with = Options {
        include_content: true,
        ..Options::default()
    };
    let all = spans(&export_to_string(&art, &scope, Format::Otlp, with, &redactor).await);
    let tool = all
        .iter()
        .find(|s| s.name == "execute_tool search_knowledge")
        .expect("the tool's span");
    let retrieval = all
        .iter()
        .find(|s| s.name == "retrieval Farm")
        .unwrap_or_else(|| {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            panic!("no retrieval span among {names:?}")
        });
    assert_eq!(
        retrieval.parent_span_id, tool.span_id,
        "under its tool call"
    );
    assert_eq!(retrieval.kind, SpanKind::Client as i32);
    assert_eq!(
        (retrieval.start_time_unix_nano, retrieval.end_time_unix_nano),
        (tool.start_time_unix_nano, tool.end_time_unix_nano)
    );
    assert_eq!(
        attr_str(retrieval, "gen_ai.operation.name"),
        Some("retrieval")
    );
    assert_eq!(attr_str(retrieval, "gen_ai.data_source.id"), Some("Farm"));
    assert_eq!(
        attr(retrieval, "gen_ai.retrieval.top_k"),
        Some(&Any::IntValue(3))
    );
    assert_eq!(
        attr_str(retrieval, "gen_ai.retrieval.query.text"),
        Some("pear crates")
    );
    // The documents are the passages the tool returned, by id and score.
    let output: SearchOutput =
        serde_json::from_str(attr_str(tool, "gen_ai.tool.call.result").unwrap()).unwrap();
    assert!(!output.results.is_empty());
    let documents: Value =
        serde_json::from_str(attr_str(retrieval, "gen_ai.retrieval.documents").unwrap()).unwrap();
    let documents = documents.as_array().unwrap();
    assert_eq!(documents.len(), output.results.len());
    for (document, cited) in documents.iter().zip(&output.results) {
        assert_eq!(document["id"], cited.chunk.to_string());
        assert_eq!(document["score"].as_f64(), Some(cited.score));
        assert_eq!(document["art.document"], "harvest.md");
    }

    // Without content: the ids and scores, not the query nor the documents' names.
    let bare =
        spans(&export_to_string(&art, &scope, Format::Otlp, Options::default(), &redactor).await);
    let retrieval = bare
        .iter()
        .find(|s| s.name == "retrieval Farm")
        .expect("the retrieval span");
    assert_eq!(attr_str(retrieval, "gen_ai.retrieval.query.text"), None);
    let documents = attr_str(retrieval, "gen_ai.retrieval.documents").unwrap();
    assert!(
        documents.contains("\"id\"") && !documents.contains("harvest.md"),
        "{documents}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_that_searches_first_gives_every_phase_what_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = farm(dir.path());
    // The model plans nothing and answers from what it was given.
    let source = Arc::new(ScriptedSource::new(vec![
        Script::text(&plan_json("Pears", &[])),
        Script::text("The pear trees gave 40 crates [1]."),
    ]));
    let art = instance(dir.path(), &store, Arc::clone(&source));
    // The tool is not offered to the model: searching first runs it anyway.
    let mut config = scripted::thread_config("test-model", &[]);
    config.search_first = true;
    let trace = ask(&art, &config, "How many crates did the pear trees give?").await;

    // Both calls, planning and the answer, were given the passage.
    let prompts = source.prompts();
    assert_eq!(prompts.len(), 2);
    for prompt in &prompts {
        let system = serde_json::to_string(prompt).unwrap();
        assert!(
            system.contains("searched for the question") && system.contains("40 crates in October"),
            "{system}"
        );
    }
    // Recorded as a call of the run, before planning, searching for the question.
    let observations = art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![trace],
            ..ObservationQuery::default()
        })
        .await
        .unwrap();
    let call = observations
        .iter()
        .find(|o| o.kind == art_types::ObservationType::ToolCall)
        .expect("the search's call");
    assert_eq!(call.content["toolName"], "search_knowledge");
    assert_eq!(
        call.content["arguments"]["query"],
        "How many crates did the pear trees give?"
    );
    assert_eq!(
        call.span.as_ref().unwrap().phase,
        art_types::Phase::Planning
    );
    let done = observations
        .iter()
        .find(|o| o.kind == art_types::ObservationType::ToolExecution)
        .expect("the search's result");
    assert_eq!(done.content["status"], "success");
    assert!(done.content["output"].to_string().contains("harvest.md"));
    let plan = observations
        .iter()
        .find(|o| o.kind == art_types::ObservationType::Plan)
        .expect("the plan");
    assert!(call.timestamp <= plan.timestamp, "searched before planning");

    // Off: no search, nothing added.
    // (Without tools or a first search, the question is answered in one call.)
    let quiet = Arc::new(ScriptedSource::new(vec![Script::text("I do not know.")]));
    let dir2 = tempfile::tempdir().unwrap();
    let art = instance(dir2.path(), &store, Arc::clone(&quiet));
    config.search_first = false;
    ask(&art, &config, "How many crates did the pear trees give?").await;
    let said = serde_json::to_string(&quiet.prompts()).unwrap();
    assert!(!said.contains("40 crates in October"), "{said}");
}
