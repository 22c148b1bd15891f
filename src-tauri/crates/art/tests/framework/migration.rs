//! A database written by an earlier release opens and upgrades in place, nothing lost:
//! the fixture (`tests/fixtures/db/`) was written by the build before branches existed.
//! Its threads become one branch each, and the upgraded file takes new runs, branches
//! and forks like a new one.

use std::path::Path;
use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::export::{self, Format, Options, Redactor, Scope};
use art::observation::ObservationQuery;
use art::storage::sqlite::{SqliteStorage, integrity_check};
use art_testkit::fixtures::db;
use art_testkit::framework::adapters::ask;
use art_testkit::framework::scripted::{Script, ScriptedSource, plan_json};
use art_types::ConversationMessage;
use art_types::usage::UsageBy;

fn open(dir: &Path, scripts: Vec<Script>) -> ArtInstance {
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    let source = Arc::new(ScriptedSource::new(scripts));
    ArtInstance::builder(storage, source).build().unwrap()
}

fn contents(messages: &[ConversationMessage]) -> Vec<&str> {
    messages.iter().map(|m| m.content.as_str()).collect()
}

#[tokio::test]
async fn the_release_before_branches_upgrades_in_place_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("art.sqlite3");
    std::fs::copy(db::release_2026_11_24(), &file).unwrap();
    let answer = [
        Script::text(&plan_json("More", &[])),
        Script::text("Still here."),
    ];
    let art = open(dir.path(), answer.into_iter().collect());

    // Every thread, message, observation, setting and prompt is there.
    let threads = art.conversation.list_threads().await.unwrap();
    let titles: Vec<&str> = threads.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["Greeting", "Arithmetic and greetings"]);
    let main = &threads[1];
    assert_eq!(main.message_count, 5);
    let path = art
        .conversation
        .path(&main.thread_id, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(
        contents(&path),
        [
            "What is 6*7?",
            r#"{"expression":"6*7","result":42.0}"#,
            "6*7 = 42.",
            "Say hello",
            "Hello! How can I help?"
        ]
    );
    // One branch: each message follows the one before it, the head is the newest.
    assert_eq!(path[0].parent_id, None);
    for pair in path.windows(2) {
        assert_eq!(pair[1].parent_id.as_ref(), Some(&pair[0].message_id));
    }
    assert_eq!(main.head.as_ref(), Some(&path[4].message_id));
    assert!(
        art.conversation
            .branches(&main.thread_id)
            .await
            .unwrap()
            .is_empty()
    );
    let observations = art
        .observations
        .query(&ObservationQuery::default())
        .await
        .unwrap();
    assert_eq!(observations.len(), 46);
    let context = art
        .state
        .load_thread_context(&main.thread_id)
        .await
        .unwrap();
    assert_eq!(context.config.system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(context.config.enabled_tools, ["calculator"]);
    let library = art.library.list().await.unwrap();
    assert_eq!(library[0].name, "Terse");
    let hits = art.conversation.search("calculator", 10).await.unwrap();
    assert_eq!(hits.len(), 1, "the tool call is still found");

    // The runs it recorded are in the usage ledger, from their final observations.
    let usage = art.usage.report(UsageBy::Model, None).await.unwrap();
    assert_eq!(usage.rows.len(), 1);
    assert_eq!(usage.rows[0].key, "openai/fake-model");
    assert_eq!(usage.total.runs, 3);
    let mine = art.usage.thread(&main.thread_id).await.unwrap();
    assert_eq!(mine.runs, 2);
    assert!(
        mine.input_tokens >= 28 && mine.output_tokens >= 17,
        "{mine:?}"
    );
    assert_eq!(
        mine.cost_nanos, None,
        "no cost was reported, none is made up"
    );

    // It exports as before.
    let mut jsonl = Vec::new();
    let summary = export::export(
        &art,
        &Scope::All,
        Format::Jsonl,
        Options::default(),
        &Redactor::new(Vec::new()),
        &mut jsonl,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!((summary.threads, summary.messages), (2, 7));

    // And it goes on: a new question follows the old head, an edit makes a branch.
    let mut config = context.config;
    config.provider_config.provider_name = "scripted".into();
    art.state
        .set_thread_config(&main.thread_id, &config)
        .await
        .unwrap();
    art.process(
        ask(&main.thread_id, "Still there?"),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    let path = art
        .conversation
        .path(&main.thread_id, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(
        contents(&path[4..]),
        ["Hello! How can I help?", "Still there?", "Still here."]
    );
    let said_hello = path[3].message_id.clone();
    art.conversation
        .branch_beside(&main.thread_id, &said_hello)
        .await
        .unwrap();
    art.conversation
        .switch_to(&main.thread_id, &said_hello)
        .await
        .unwrap();
    let again = art
        .conversation
        .path(&main.thread_id, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(again.len(), 7, "switching back shows the whole branch");
    let mine = art.usage.thread(&main.thread_id).await.unwrap();
    assert_eq!(mine.runs, 3, "the new run is entered too");
    drop(art);
    integrity_check(&file).unwrap();
}
