use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use art_types::knowledge::DocumentState;

use super::{Synced, sync_all, sync_folder};
use crate::knowledge::{DATABASE_FILE, Indexer, KnowledgeStore, add, index_next};

fn open(dir: &Path) -> KnowledgeStore {
    KnowledgeStore::open(&dir.join(DATABASE_FILE)).unwrap()
}

fn drain(store: &KnowledgeStore) {
    while index_next(store).unwrap().is_some() {}
}

/// Rewrite a file so that its size or time differs from what was read.
fn rewrite(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(later)
        .unwrap();
}

#[test]
fn a_rescan_queues_new_and_changed_files_and_takes_out_deleted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Notes").unwrap();
    let folder = dir.path().join("notes");
    std::fs::create_dir(&folder).unwrap();
    for name in ["keep.md", "change.md", "delete.md"] {
        std::fs::write(folder.join(name), format!("# {name}\n\nfirst words\n")).unwrap();
    }
    std::fs::write(folder.join("empty.txt"), "").unwrap();
    let added = add(&store, &c.id, std::slice::from_ref(&folder), true).unwrap();
    assert_eq!(added.queued, 4);
    assert_eq!(store.find("notes").unwrap().folders.len(), 1);
    drain(&store);

    // Nothing changed: nothing to do (a skipped file is not read again and again).
    assert_eq!(
        sync_folder(&store, &c.id, &folder).unwrap(),
        Synced::default()
    );

    rewrite(
        &folder.join("change.md"),
        "# change\n\nsecond words, rewritten\n",
    );
    std::fs::remove_file(folder.join("delete.md")).unwrap();
    std::fs::create_dir(folder.join("sub")).unwrap();
    std::fs::write(folder.join("sub/new.md"), "# new\n\nbrand new words\n").unwrap();
    let synced = sync_folder(&store, &c.id, &folder).unwrap();
    assert_eq!(
        synced,
        Synced {
            queued: 2,
            removed: 1
        }
    );
    drain(&store);

    let names: Vec<String> = store
        .documents(&c.id)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["change.md", "empty.txt", "keep.md", "new.md"]);
    let found = store.search("rewritten", None, 3).unwrap();
    assert_eq!(found[0].name, "change.md");
    // Only the untouched file still has its first words.
    let firsts: Vec<String> = store
        .search("first", None, 5)
        .unwrap()
        .into_iter()
        .map(|h| h.name)
        .collect();
    assert_eq!(firsts, ["keep.md"]);
    assert!(!store.search("brand", None, 1).unwrap().is_empty());
}

#[test]
fn a_folder_that_is_gone_keeps_its_documents_and_other_folders_still_sync() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Notes").unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for folder in [&a, &b] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join("one.md"), "# one\n\nwords\n").unwrap();
    }
    add(&store, &c.id, &[a.clone(), b.clone()], true).unwrap();
    drain(&store);
    // `a` is unmounted (here: moved away); `b` gets a new file.
    std::fs::rename(&a, dir.path().join("elsewhere")).unwrap();
    std::fs::write(b.join("two.md"), "# two\n\nmore words\n").unwrap();
    let synced = sync_all(&store).unwrap();
    assert_eq!(
        synced,
        Synced {
            queued: 1,
            removed: 0
        }
    );
    assert_eq!(store.documents(&c.id).unwrap().len(), 3);
}

#[test]
fn the_indexer_finds_a_change_in_a_synced_folder_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()));
    let c = store.create("Notes").unwrap();
    let folder = dir.path().join("notes");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("plan.md"), "# Plan\n\nplant beans\n").unwrap();
    add(&store, &c.id, std::slice::from_ref(&folder), true).unwrap();
    let indexer = Indexer::start_with(Arc::clone(&store), None, Duration::from_millis(50)).unwrap();

    let found = |word: &str| !store.search(word, None, 1).unwrap().is_empty();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !found("beans") {
        assert!(Instant::now() < deadline, "the folder was never read");
        std::thread::sleep(Duration::from_millis(20));
    }
    rewrite(
        &folder.join("plan.md"),
        "# Plan\n\nplant potatoes instead\n",
    );
    while !found("potatoes") {
        assert!(Instant::now() < deadline, "the change was never found");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!found("beans"), "the old text is gone");
    let doc = &store.documents(&c.id).unwrap()[0];
    assert_eq!((doc.state, doc.chunks), (DocumentState::Ready, 1));
    drop(indexer);
}
