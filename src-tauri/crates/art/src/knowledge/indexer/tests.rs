use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use art_types::knowledge::{DocumentState, EmbedderState, IndexProgress};

use super::Indexer;
use crate::knowledge::{DATABASE_FILE, KnowledgeStore, add};

fn open(dir: &Path) -> Arc<KnowledgeStore> {
    Arc::new(KnowledgeStore::open(&dir.join(DATABASE_FILE)).unwrap())
}

/// A folder of `n` small notes, each naming its number.
fn notes(dir: &Path, n: usize) -> std::path::PathBuf {
    let folder = dir.join("notes");
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..n {
        std::fs::write(
            folder.join(format!("note-{i:03}.md")),
            format!("# Note {i}\n\nThe harvest of field {i} was weighed on Tuesday.\n"),
        )
        .unwrap();
    }
    folder
}

/// Wait until the indexer is idle with nothing waiting.
fn idle(indexer: &Indexer, store: &KnowledgeStore) -> IndexProgress {
    until(indexer, |p| !p.running && store.waiting().unwrap() == 0)
}

#[test]
fn queued_documents_are_read_in_the_background_with_progress() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    let folder = notes(dir.path(), 12);
    std::fs::write(folder.join("empty.txt"), "").unwrap();
    let indexer = Indexer::start(Arc::clone(&store), None).unwrap();
    let seen = indexer.progress();

    let added = add(&store, &c.id, &[folder], false).unwrap();
    assert_eq!(added.queued, 13);
    indexer.wake();
    let end = idle(&indexer, &store);

    assert_eq!((end.done, end.total), (13, 13), "{end:?}");
    assert_eq!(end.fraction(), 1.0);
    assert!(seen.has_changed().unwrap(), "progress was published");
    let docs = store.documents(&c.id).unwrap();
    let ready = docs
        .iter()
        .filter(|d| d.state == DocumentState::Ready)
        .count();
    assert_eq!(ready, 12);
    let empty = docs.iter().find(|d| d.name == "empty.txt").unwrap();
    assert_eq!(empty.state, DocumentState::Skipped);
    let hits = store.search("harvest field 7", Some("farm"), 3).unwrap();
    assert_eq!(hits[0].name, "note-007.md", "{hits:?}");
}

#[test]
fn a_queue_left_by_an_earlier_run_is_read_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    add(&store, &c.id, &[notes(dir.path(), 3)], false).unwrap();
    // No wake: starting is enough.
    let indexer = Indexer::start(Arc::clone(&store), None).unwrap();
    idle(&indexer, &store);
    assert_eq!(store.find("farm").unwrap().counts.ready, 3);
}

#[test]
fn cancel_leaves_nothing_queued_and_each_document_says_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    let folder = notes(dir.path(), 200);
    // Read once, so that queued again they have passages of a last reading to keep.
    add(&store, &c.id, std::slice::from_ref(&folder), false).unwrap();
    let indexer = Indexer::start(Arc::clone(&store), None).unwrap();
    idle(&indexer, &store);

    add(&store, &c.id, &[folder], false).unwrap();
    std::fs::write(dir.path().join("notes/new.md"), "# New\n\nnever read").unwrap();
    add(&store, &c.id, &[dir.path().join("notes/new.md")], false).unwrap();
    indexer.wake();
    indexer.cancel();
    // Until the cancel is taken: on a busy machine the round the wake began may read
    // everything before the cancel comes (then it finds nothing queued), and the
    // indexer looks idle again before it takes the cancel.
    let end = until(&indexer, |p| !p.running && p.stopped.is_some());
    assert_eq!(store.waiting().unwrap(), 0);

    let stopped = end.stopped.unwrap_or_default();
    assert!(stopped.starts_with("cancelled:"), "{stopped}");
    let docs = store.documents(&c.id).unwrap();
    assert_eq!(docs.len(), 201);
    for d in &docs {
        match d.state {
            // Read again before the cancel came, or kept from the last reading.
            DocumentState::Ready => assert!(d.chunks > 0, "{d:?}"),
            // Never read: says so.
            DocumentState::Skipped => {
                assert_eq!(d.name, "new.md");
                assert!(d.detail.as_deref().unwrap().contains("cancelled"), "{d:?}");
            }
            other => panic!("{} is {other} after a cancel", d.name),
        }
    }
    // The kept passages still answer.
    assert!(!store.search("field 150", None, 1).unwrap().is_empty());
}

/// Wait until `done` says the progress is what the test waits for (a generous bound: a
/// stuck indexer fails the test instead of hanging it).
fn until(indexer: &Indexer, done: impl Fn(&IndexProgress) -> bool) -> IndexProgress {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let now = indexer.progress().borrow().clone();
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "never came: {now:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn read_documents_are_embedded_next_and_searched_by_meaning() {
    use crate::knowledge::embed::{EmbedderHome, minilm::MODEL};
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    let home = EmbedderHome {
        dir: art_testkit::embedder::install_in(dir.path()),
        endpoint: art_testkit::embedder::NO_HUB.into(),
    };
    let indexer = Indexer::start(Arc::clone(&store), Some(home)).unwrap();
    add(&store, &c.id, &[notes(dir.path(), 20)], false).unwrap();
    indexer.wake();
    let end = until(&indexer, |p| {
        !p.running
            && p.embedder == EmbedderState::Ready
            && p.to_embed > 0
            && p.embedded == p.to_embed
    });
    assert_eq!(end.to_embed, 20, "{end:?}");
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 0);
    let found = store
        .search_scoped("crops put on the scales", &[], None, 3)
        .unwrap();
    assert_eq!(found.words_only, 0);
    assert!(!found.hits.is_empty());

    // After a restart, with every passage embedded, the model is loaded all the same:
    // questions are still searched by meaning.
    drop(indexer);
    let home = EmbedderHome {
        dir: dir.path().join("models/all-MiniLM-L6-v2"),
        endpoint: art_testkit::embedder::NO_HUB.into(),
    };
    let store = open(dir.path());
    let indexer = Indexer::start(Arc::clone(&store), Some(home)).unwrap();
    until(&indexer, |p| p.embedder == EmbedderState::Ready);
    let found = store
        .search_scoped("crops put on the scales", &[], None, 3)
        .unwrap();
    assert_eq!(found.words_only, 0);
    assert!(
        found.hits.iter().any(|h| h.matched.meaning.is_some()),
        "{found:?}"
    );
}

#[test]
fn without_the_model_or_a_hub_the_indexer_says_words_only_and_keeps_reading() {
    use crate::knowledge::embed::EmbedderHome;
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    let home = EmbedderHome {
        dir: dir.path().join("models/all-MiniLM-L6-v2"),
        endpoint: art_testkit::embedder::NO_HUB.into(),
    };
    let indexer = Indexer::start(Arc::clone(&store), Some(home)).unwrap();
    add(&store, &c.id, &[notes(dir.path(), 3)], false).unwrap();
    indexer.wake();
    let end = until(&indexer, |p| {
        matches!(p.embedder, EmbedderState::Unavailable { .. })
    });
    let EmbedderState::Unavailable { reason } = &end.embedder else {
        unreachable!()
    };
    assert!(
        reason.contains("cannot download the embedding model"),
        "{reason}"
    );
    idle(&indexer, &store);
    let found = store
        .search_scoped("harvest field 2", &[], None, 1)
        .unwrap();
    assert_eq!(found.hits[0].name, "note-002.md");
    assert_eq!(found.words_only, 3);
    // Not tried again on every rescan: only when documents are added.
    indexer.sync_now();
    std::thread::sleep(Duration::from_millis(300));
    assert!(matches!(
        indexer.progress().borrow().embedder,
        EmbedderState::Unavailable { .. }
    ));
}

#[test]
fn a_provider_failing_mid_collection_keeps_what_it_embedded_and_finishes_on_the_next_try() {
    use art_testkit::fake::{FakeServer, Reply};
    use serde_json::json;

    use crate::knowledge::embed::provider::ProviderModels;
    use crate::providers::factory::builtin_entries;
    use crate::providers::options::BASE_URL;
    use crate::secrets::MemoryStore;

    const MODEL: &str = "ollama:nomic-embed-text";
    let vectors = |n: usize| {
        let rows: Vec<serde_json::Value> = (0..n).map(|i| json!([1.0, i as f32, 0.5])).collect();
        Reply::json(&json!({ "model": "nomic-embed-text", "embeddings": rows }).to_string())
    };
    let broken = || Reply::error(500, r#"{"error":"llama runner process has terminated"}"#);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // The probe, a first batch of 32, then the runner dies (the call and its 2 retries).
    let server = runtime.block_on(FakeServer::start(vec![
        vectors(1),
        vectors(32),
        broken(),
        broken(),
        broken(),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    store.change_embedder(&c.id, MODEL).unwrap();
    let mut entries = builtin_entries();
    for entry in &mut entries {
        entry
            .base_options
            .insert(BASE_URL.into(), server.url().into());
    }
    let http = crate::providers::http::HttpOptions {
        backoff: Duration::from_millis(10),
        ..Default::default()
    };
    let indexer = Indexer::start(Arc::clone(&store), None).unwrap();
    indexer.connect_providers(Arc::new(ProviderModels::new(
        entries,
        Arc::new(MemoryStore::new()),
        http,
    )));
    add(&store, &c.id, &[notes(dir.path(), 40)], false).unwrap();
    indexer.wake();

    let stopped = until(&indexer, |p| {
        p.stopped
            .as_deref()
            .is_some_and(|s| s.contains("llama runner process has terminated"))
    });
    assert!(stopped.stopped.unwrap().contains(MODEL));
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 8);
    let found = store.search_scoped("harvest field", &[], None, 3).unwrap();
    // The 32 embedded are searched by meaning — once the model is connected again.
    assert_eq!(found.words_only, 40);

    // The runner is back: the next try (a wake) connects again and embeds the rest.
    server.push(vectors(1));
    server.push(vectors(8));
    indexer.wake();
    until(&indexer, |_| store.waiting_for_vectors(MODEL).unwrap() == 0);
    let found = store.search_scoped("harvest field", &[], None, 3).unwrap();
    assert_eq!(found.words_only, 0);
    assert_eq!(found.hits.len(), 3);
}
