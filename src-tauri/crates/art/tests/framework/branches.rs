//! Nothing recorded is lost: edit & resend and regenerate make branches through real
//! runs on real SQLite; the model reads the active branch only; switching, search into
//! another branch, forks; and every export keeps the tree (JSONL round trip, Markdown
//! lists the other branches, OTLP says where each run sits).

use art_testkit::framework::scripted;

use std::path::Path;
use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::export::{self, Format, Options, Redactor, Scope};
use art::storage::sqlite::SqliteStorage;
use art_testkit::framework::adapters::ask;
use art_types::{ConversationMessage, PromptMessage, ThreadConfig};
use scripted::{Script, ScriptedSource};
use serde_json::Value;

fn open(dir: &Path, source: Arc<ScriptedSource>) -> ArtInstance {
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, source).build().unwrap()
}

/// The scripts of runs answering `answers` in turn (no tools: each run is one call).
fn runs(answers: &[&str]) -> Vec<Script> {
    answers.iter().map(|a| Script::text(a)).collect()
}

struct Branchy {
    art: ArtInstance,
    source: Arc<ScriptedSource>,
    thread: String,
    dir: tempfile::TempDir,
}

impl Branchy {
    async fn new(answers: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let source = Arc::new(ScriptedSource::new(runs(answers)));
        let art = open(dir.path(), Arc::clone(&source));
        let thread = art
            .conversation
            .create_thread(Some("Branches"))
            .await
            .unwrap()
            .thread_id;
        let mut config = ThreadConfig::default();
        config.provider_config.provider_name = "scripted".into();
        config.provider_config.model_id = "m".into();
        config.system_prompt = Some("Be kind.".into());
        art.state.set_thread_config(&thread, &config).await.unwrap();
        Self {
            art,
            source,
            thread,
            dir,
        }
    }

    async fn ask_in(&self, thread: &str, question: &str) {
        self.art
            .process(ask(thread, question), CancellationToken::new())
            .await
            .unwrap();
    }

    /// Edit & resend / regenerate as the app does them: a branch beside `message`.
    async fn beside(&self, message: &str, question: &str) {
        self.art
            .conversation
            .branch_beside(&self.thread, message)
            .await
            .unwrap();
        self.ask_in(&self.thread, question).await;
    }

    async fn path_of(&self, thread: &str) -> Vec<ConversationMessage> {
        self.art
            .conversation
            .path(thread, MessageOptions::default())
            .await
            .unwrap()
    }

    async fn shown(&self) -> Vec<String> {
        text(&self.path_of(&self.thread).await)
    }

    async fn export(&self, scope: &Scope, format: Format, options: Options) -> String {
        let mut out = Vec::new();
        export::export(
            &self.art,
            scope,
            format,
            options,
            &Redactor::new(Vec::new()),
            &mut out,
            &mut |_| {},
        )
        .await
        .unwrap();
        String::from_utf8(out).unwrap()
    }
}

fn text(messages: &[ConversationMessage]) -> Vec<String> {
    messages.iter().map(|m| m.content.clone()).collect()
}

/// What the model read in the last call of a run (the synthesis): the conversation
/// part of the prompt, system text aside.
fn read(prompt: &[PromptMessage]) -> String {
    prompt
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn edits_and_regenerations_keep_every_branch_and_the_model_reads_the_active_one() {
    let b = Branchy::new(&["One.", "Two.", "Two, edited.", "Two, again.", "Three."]).await;
    b.ask_in(&b.thread, "First?").await;
    b.ask_in(&b.thread, "Second?").await;
    let before = b.path_of(&b.thread).await;
    let (q1, a1, q2, a2) = (
        before[0].message_id.clone(),
        before[1].message_id.clone(),
        before[2].message_id.clone(),
        before[3].message_id.clone(),
    );

    // Edit & resend the second question.
    b.beside(&q2, "Second, edited?").await;
    assert_eq!(
        b.shown().await,
        ["First?", "One.", "Second, edited?", "Two, edited."]
    );
    let prompt = read(b.source.prompts().last().unwrap());
    assert!(prompt.contains("Second, edited?"), "{prompt}");
    assert!(
        !prompt.contains("Second?") && !prompt.contains("Two."),
        "the other branch is not sent: {prompt}"
    );
    // Regenerate the answer: its question again, a third branch.
    let last = b.art.conversation.last_question(&b.thread).await.unwrap();
    let last = last.unwrap();
    b.beside(&last.message_id, &last.content).await;
    assert_eq!(
        b.shown().await,
        ["First?", "One.", "Second, edited?", "Two, again."]
    );
    let points = b.art.conversation.branches(&b.thread).await.unwrap();
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].parent_id.as_ref(), Some(&a1));
    assert_eq!(points[0].alternatives.len(), 3);
    assert_eq!(points[0].alternatives[0], q2);
    let all = b
        .art
        .conversation
        .messages(&b.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 8, "nothing recorded was removed");

    // Search finds the first answer on its branch, and opening it switches there.
    let hits = b.art.conversation.search("Two", 10).await.unwrap();
    assert!(hits.iter().any(|h| h.record_id == a2), "{hits:?}");
    b.art.conversation.switch_to(&b.thread, &a2).await.unwrap();
    assert_eq!(b.shown().await, ["First?", "One.", "Second?", "Two."]);
    // A new question goes on the branch shown.
    b.ask_in(&b.thread, "Third?").await;
    assert_eq!(
        b.shown().await,
        ["First?", "One.", "Second?", "Two.", "Third?", "Three."]
    );
    let tree = b.art.conversation.tree(&b.thread).await.unwrap();
    assert_eq!(tree.children(&q1), [a1.as_str()]);
    assert_eq!(tree.children(&a2).len(), 1);
}

#[tokio::test]
async fn exports_keep_the_tree_and_an_import_brings_it_back() {
    let b = Branchy::new(&["One.", "Two.", "Two, edited."]).await;
    b.ask_in(&b.thread, "First?").await;
    b.ask_in(&b.thread, "Second?").await;
    let first_branch = b.path_of(&b.thread).await;
    let a1 = first_branch[1].message_id.clone();
    b.beside(&first_branch[2].message_id, "Second, edited?")
        .await;

    // JSONL: the whole tree, and back into another database as it was.
    let scope = Scope::Thread(b.thread.clone());
    let jsonl = b.export(&scope, Format::Jsonl, Options::default()).await;
    assert!(jsonl.contains("\"parentId\""), "{jsonl}");
    let file = b.dir.path().join("thread.jsonl");
    std::fs::write(&file, &jsonl).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = open(elsewhere.path(), Arc::new(ScriptedSource::new(Vec::new())));
    export::jsonl::import(&copy, &file).await.unwrap();
    assert_eq!(
        copy.conversation.branches(&b.thread).await.unwrap(),
        b.art.conversation.branches(&b.thread).await.unwrap()
    );
    let copied = copy
        .conversation
        .path(&b.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(copied, b.path_of(&b.thread).await);
    let mut again = Vec::new();
    export::export(
        &copy,
        &scope,
        Format::Jsonl,
        Options::default(),
        &Redactor::new(Vec::new()),
        &mut again,
        &mut |_| {},
    )
    .await
    .unwrap();
    assert_eq!(String::from_utf8(again).unwrap(), jsonl, "lossless");

    // Markdown: the active branch, then the other one where it leaves.
    let markdown = b.export(&scope, Format::Markdown, Options::default()).await;
    let (transcript, others) = markdown.split_once("## Other branches").unwrap();
    assert!(transcript.contains("Second, edited?") && transcript.contains("Two, edited."));
    assert!(!transcript.contains("Second?\n") && !transcript.contains("Two.\n"));
    assert!(
        others.contains("Instead of “Second, edited?”: “Second?” (You ·")
            && others.contains("2 messages"),
        "{others}"
    );

    // OTLP: each run's root span names its question and the message it follows.
    let otlp = b.export(&scope, Format::Otlp, Options::default()).await;
    let parents: Vec<String> = otlp
        .lines()
        .map(|line| {
            let data: Value = serde_json::from_str(line).unwrap();
            let spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap();
            // One order, whatever the clock: a parent before its children (spans that
            // start in one millisecond included), so the root comes first.
            let mut seen = std::collections::HashSet::new();
            for span in spans {
                let parent = span["parentSpanId"].as_str().unwrap_or_default();
                assert!(parent.is_empty() || seen.contains(parent), "{line}");
                seen.insert(span["spanId"].as_str().unwrap().to_owned());
            }
            let root = &spans[0];
            assert!(root["parentSpanId"].as_str().unwrap_or_default().is_empty());
            let parent = root["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == "art.message.parent_id")
                .map(|a| a["value"]["stringValue"].as_str().unwrap().to_owned());
            parent.unwrap_or_default()
        })
        .collect();
    assert_eq!(parents.len(), 3, "one trace per run");
    assert_eq!(parents[0], "", "the first question follows nothing");
    assert_eq!(
        &parents[1..],
        [a1.clone(), a1],
        "both branches follow the first answer"
    );
}

#[tokio::test]
async fn a_fork_copies_the_branch_up_to_a_message_with_the_settings() {
    let b = Branchy::new(&["One.", "Two.", "Forked answer."]).await;
    b.ask_in(&b.thread, "First?").await;
    b.ask_in(&b.thread, "Second?").await;
    let source = b.path_of(&b.thread).await;
    let fork = b
        .art
        .fork_thread(&b.thread, &source[1].message_id)
        .await
        .unwrap();
    assert_eq!(fork.title, "Branches");
    let origin = fork.forked_from.clone().unwrap();
    assert_eq!(
        (origin.thread_id.as_str(), origin.message_id.as_str()),
        (b.thread.as_str(), source[1].message_id.as_str())
    );
    let copied = b.path_of(&fork.thread_id).await;
    assert_eq!(text(&copied), ["First?", "One."]);
    assert!(copied.iter().all(|m| m.thread_id == fork.thread_id));
    assert!(
        copied
            .iter()
            .all(|m| source.iter().all(|s| s.message_id != m.message_id))
    );
    let settings = b.art.state.load_thread_context(&fork.thread_id).await;
    assert_eq!(
        settings.unwrap().config.system_prompt.as_deref(),
        Some("Be kind.")
    );
    // The fork goes its own way; the source is untouched.
    b.ask_in(&fork.thread_id, "Elsewhere?").await;
    assert_eq!(
        text(&b.path_of(&fork.thread_id).await),
        ["First?", "One.", "Elsewhere?", "Forked answer."]
    );
    assert_eq!(b.path_of(&b.thread).await, source);
    let prompt = read(b.source.prompts().last().unwrap());
    assert!(
        prompt.contains("First?") && !prompt.contains("Second?"),
        "{prompt}"
    );
    // A message that is not in the thread is refused, nothing made.
    let before = b.art.conversation.list_threads().await.unwrap().len();
    assert!(b.art.fork_thread(&b.thread, "gone").await.is_err());
    assert_eq!(
        b.art.conversation.list_threads().await.unwrap().len(),
        before
    );
}

#[tokio::test]
async fn a_file_written_before_branches_imports_as_one_branch() {
    let b = Branchy::new(&["One.", "Two."]).await;
    b.ask_in(&b.thread, "First?").await;
    b.ask_in(&b.thread, "Second?").await;
    let scope = Scope::Thread(b.thread.clone());
    let jsonl = b.export(&scope, Format::Jsonl, Options::default()).await;
    // As the build before branches wrote it: no parentId, no head.
    let old: Vec<String> = jsonl
        .lines()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            if let Some(m) = value.get_mut("message").and_then(Value::as_object_mut) {
                m.remove("parentId");
            }
            if let Some(t) = value.get_mut("thread").and_then(Value::as_object_mut) {
                t.remove("head");
            }
            value.to_string()
        })
        .collect();
    assert!(
        !old.iter()
            .any(|l| l.contains("parentId") || l.contains("\"head\""))
    );
    let file = b.dir.path().join("old.jsonl");
    std::fs::write(&file, old.join("\n") + "\n").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = open(elsewhere.path(), Arc::new(ScriptedSource::new(Vec::new())));
    export::jsonl::import(&copy, &file).await.unwrap();
    let path = copy
        .conversation
        .path(&b.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(text(&path), text(&b.path_of(&b.thread).await));
    assert_eq!(
        path.len(),
        4,
        "two questions and their answers, in time order"
    );
    assert!(
        copy.conversation
            .branches(&b.thread)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        copy.conversation.thread(&b.thread).await.unwrap().head,
        path.last().map(|m| m.message_id.clone())
    );
}
