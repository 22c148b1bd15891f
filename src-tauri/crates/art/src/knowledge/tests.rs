//! Faults across the knowledge parts: two indexers on one database (reading, and
//! embedding), a folder of 20,000 files, files that go away or change between being
//! queued and being read.

use std::path::Path;
use std::sync::Arc;

use art_types::knowledge::DocumentState;

use super::embed::embed_waiting;
use super::embed::letters::{LETTERS, Letters};
use super::sync::{Synced, sync_folder};
use super::{DATABASE_FILE, KnowledgeStore, add, index_next};

fn open(dir: &Path) -> KnowledgeStore {
    KnowledgeStore::open(&dir.join(DATABASE_FILE)).unwrap()
}

/// Passages in the database and whether SQLite finds it sound.
fn passages_and_integrity(dir: &Path) -> (i64, String) {
    let conn = rusqlite::Connection::open(dir.join(DATABASE_FILE)).unwrap();
    let passages = conn
        .query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))
        .unwrap();
    let integrity = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    (passages, integrity)
}

#[test]
fn two_indexers_on_one_collection_read_each_document_once() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    for i in 0..120 {
        std::fs::write(
            notes.join(format!("n{i:03}.md")),
            format!("# Note {i}\n\nField {i} gave {i} crates.\n"),
        )
        .unwrap();
    }
    // The app and `art kb`: two connections to one file, each in its own thread.
    let (app, cli) = (Arc::new(open(dir.path())), Arc::new(open(dir.path())));
    let c = app.create("Farm").unwrap();
    add(&app, &c.id, &[notes], false).unwrap();
    let work = |store: Arc<KnowledgeStore>| {
        std::thread::spawn(move || {
            let mut read = Vec::new();
            while let Some(done) = index_next(&store).unwrap() {
                read.push(done.id);
            }
            read
        })
    };
    let (a, b) = (work(Arc::clone(&app)), work(Arc::clone(&cli)));
    let (mut a, b) = (a.join().unwrap(), b.join().unwrap());
    a.extend(b);
    a.sort_unstable();
    let before = a.len();
    a.dedup();
    assert_eq!((before, a.len()), (120, 120), "each read once, none left");
    let docs = app.documents(&c.id).unwrap();
    assert!(
        docs.iter()
            .all(|d| d.state == DocumentState::Ready && d.chunks == 1)
    );
    assert_eq!(
        passages_and_integrity(dir.path()),
        (120, "ok".to_owned()),
        "no duplicate or orphan passages"
    );
}

#[test]
fn a_folder_of_twenty_thousand_files_is_queued_whole_and_rescanned_without_change() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    for shelf in 0..20 {
        let folder = big.join(format!("shelf-{shelf:02}"));
        std::fs::create_dir_all(&folder).unwrap();
        for i in 0..1_000 {
            std::fs::write(
                folder.join(format!("{i:04}.txt")),
                format!("item {shelf} {i}"),
            )
            .unwrap();
        }
    }
    let store = open(dir.path());
    let c = store.create("Archive").unwrap();
    let added = add(&store, &c.id, std::slice::from_ref(&big), true).unwrap();
    assert_eq!(added.queued, 20_000);
    assert!(added.left_out.is_empty());
    assert_eq!(store.find("archive").unwrap().counts.queued, 20_000);
    // Queued and not yet read: a rescan leaves them be, adds nothing twice.
    assert_eq!(sync_folder(&store, &c.id, &big).unwrap(), Synced::default());
    assert_eq!(store.documents(&c.id).unwrap().len(), 20_000);
}

#[test]
fn a_file_gone_or_changed_before_it_is_read_ends_in_a_clear_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Notes").unwrap();
    let (gone, changed) = (dir.path().join("gone.md"), dir.path().join("changed.md"));
    std::fs::write(&gone, "# Gone\n\nsoon deleted").unwrap();
    std::fs::write(&changed, "# Old\n\nold words").unwrap();
    add(&store, &c.id, &[gone.clone(), changed.clone()], false).unwrap();
    std::fs::remove_file(&gone).unwrap();
    std::fs::write(&changed, "# New\n\nnew words only").unwrap();
    while index_next(&store).unwrap().is_some() {}

    let docs = store.documents(&c.id).unwrap();
    let gone_doc = docs.iter().find(|d| d.name == "gone.md").unwrap();
    assert_eq!(gone_doc.state, DocumentState::Failed);
    assert!(
        gone_doc
            .detail
            .as_deref()
            .unwrap()
            .starts_with("cannot read it:"),
        "{gone_doc:?}"
    );
    // What is read is what is there when it is read.
    assert!(store.search("old", None, 3).unwrap().is_empty());
    assert_eq!(store.search("new", None, 3).unwrap()[0].name, "changed.md");
}

#[test]
fn two_processes_embedding_one_collection_leave_one_vector_a_passage() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    for i in 0..300 {
        std::fs::write(
            notes.join(format!("n{i:03}.md")),
            format!(
                "# Note {i}\n\nRow {i} of the orchard gave {} crates.\n",
                i * 7
            ),
        )
        .unwrap();
    }
    let (app, cli) = (Arc::new(open(dir.path())), Arc::new(open(dir.path())));
    let c = app.create("Farm").unwrap();
    app.change_embedder(&c.id, LETTERS).unwrap();
    add(&app, &c.id, &[notes], false).unwrap();
    while index_next(&app).unwrap().is_some() {}
    assert_eq!(app.waiting_for_vectors(LETTERS).unwrap(), 300);

    // The app's indexer and `art kb` embed at once, each on its own connection: both
    // finish without an error, together having embedded every passage at least once.
    let work = |store: Arc<KnowledgeStore>| {
        std::thread::spawn(move || embed_waiting(&store, &Letters, |_, _| {}, || true))
    };
    let (a, b) = (work(Arc::clone(&app)), work(Arc::clone(&cli)));
    let (a, b) = (a.join().unwrap().unwrap(), b.join().unwrap().unwrap());
    assert!(a + b >= 300, "{a} + {b}");
    assert_eq!(app.waiting_for_vectors(LETTERS).unwrap(), 0);
    assert_eq!(cli.waiting_for_vectors(LETTERS).unwrap(), 0);

    // One vector a passage, of the collection's one model, and a sound database.
    let conn = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    let (vectors, passages, models): (i64, i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT chunk), count(DISTINCT model) FROM vectors",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((vectors, passages, models), (300, 300, 1));
    assert_eq!(passages_and_integrity(dir.path()), (300, "ok".to_owned()));
    // And a search goes through them: every passage searched by meaning.
    cli.set_embedder(Arc::new(Letters));
    let found = cli.search_scoped("orchard crates", &[], None, 3).unwrap();
    assert_eq!(found.words_only, 0);
    assert_eq!(found.hits.len(), 3);
}
