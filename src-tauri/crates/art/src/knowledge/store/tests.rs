use std::path::{Path, PathBuf};

use art_types::knowledge::{DocumentState, KnowledgeProblem};

use super::KnowledgeStore;
use crate::knowledge::{DATABASE_FILE, index_next};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/documents")
        .join(name)
}

fn open(dir: &Path) -> KnowledgeStore {
    KnowledgeStore::open(&dir.join(DATABASE_FILE)).unwrap()
}

/// Index everything queued; the outcomes by file name.
fn drain(store: &KnowledgeStore) -> Vec<(String, DocumentState, String)> {
    let mut out = Vec::new();
    while let Some(done) = index_next(store).unwrap() {
        out.push((done.name, done.state, done.detail));
    }
    out
}

#[test]
fn many_processes_opening_a_new_database_at_once_all_get_it() {
    // As when eight `art run`s start together on a fresh data directory: each opens the
    // file, turns on WAL and migrates it while the others do the same.
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DATABASE_FILE);
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let (path, start) = (path.clone(), std::sync::Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    KnowledgeStore::open(&path).map(|_| ())
                })
            })
            .collect();
        for opener in openers {
            assert_eq!(opener.join().unwrap(), Ok(()));
        }
    }
}

#[test]
fn collections_are_named_once_whatever_the_case() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let manuals = store.create("Manuals").unwrap();
    assert_eq!(
        store.create(" manuals "),
        Err(KnowledgeProblem::NameTaken {
            name: "manuals".into()
        })
    );
    assert_eq!(store.create("  "), Err(KnowledgeProblem::BadName));
    assert_eq!(
        store.create(&"x".repeat(81)),
        Err(KnowledgeProblem::BadName)
    );
    let notes = store.create("Notes").unwrap();
    assert!(matches!(
        store.rename(&notes.id, "MANUALS"),
        Err(KnowledgeProblem::NameTaken { .. })
    ));
    store.rename(&notes.id, "Papers").unwrap();
    let names: Vec<String> = store
        .collections()
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["Manuals", "Papers"]);
    assert_eq!(store.find("papers").unwrap().id, notes.id);
    assert_eq!(store.find(&manuals.id).unwrap().name, "Manuals");
    store.delete(&manuals.id).unwrap();
    assert!(matches!(
        store.find("Manuals"),
        Err(KnowledgeProblem::NoCollection { .. })
    ));
    assert!(matches!(
        store.delete(&manuals.id),
        Err(KnowledgeProblem::NoCollection { .. })
    ));
}

#[test]
fn documents_are_read_cut_and_found_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let kb = store.create("Reports").unwrap();
    let notes = dir.path().join("notes.md");
    std::fs::write(
        &notes,
        "# Orchard\n\n## Irrigation\n\nThe drip lines run at night from May to September.\n",
    )
    .unwrap();
    let image = dir.path().join("dot.png");
    std::fs::write(&image, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let binary = dir.path().join("data.txt");
    std::fs::write(&binary, [0u8, 159, 146, 150]).unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let pdf = fixture("ghostscript-three-pages.pdf");
    let scanned = fixture("scanned-two-pages.pdf");
    let gone = dir.path().join("gone.md");
    for path in [&notes, &pdf, &scanned, &image, &binary, &empty, &gone] {
        let name = path.file_name().unwrap().to_string_lossy();
        store.queue(&kb.id, &path.to_string_lossy(), &name).unwrap();
    }
    let outcomes = drain(&store);
    let state_of = |name: &str| {
        outcomes
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, s, d)| (*s, d.clone()))
            .unwrap()
    };
    assert_eq!(state_of("notes.md").0, DocumentState::Ready);
    assert_eq!(
        state_of("ghostscript-three-pages.pdf").0,
        DocumentState::Ready
    );
    let (state, why) = state_of("scanned-two-pages.pdf");
    assert_eq!(state, DocumentState::Failed);
    assert!(why.contains("OCR is not supported"), "{why}");
    assert_eq!(state_of("dot.png").0, DocumentState::Skipped);
    assert_eq!(state_of("data.txt").0, DocumentState::Failed);
    assert_eq!(state_of("empty.txt").0, DocumentState::Skipped);
    let (state, why) = state_of("gone.md");
    assert_eq!(state, DocumentState::Failed);
    assert!(why.contains("cannot read it"), "{why}");

    let listed = store.collections().unwrap();
    let counts = listed[0].counts;
    assert_eq!((counts.ready, counts.failed, counts.skipped), (2, 3, 2));
    let docs = store.documents(&kb.id).unwrap();
    let report = docs
        .iter()
        .find(|d| d.name.ends_with("three-pages.pdf"))
        .unwrap();
    assert_eq!(report.pages, Some(3));
    assert!(report.chunks >= 1 && report.tokens > 0);

    let hits = store.search_words(&kb.id, "irrigation costs?", 5).unwrap();
    let pdf_hit = hits.iter().find(|h| h.name.ends_with(".pdf")).unwrap();
    assert!(pdf_hit.place.starts_with("p"), "{}", pdf_hit.place);
    let md_hit = hits.iter().find(|h| h.name == "notes.md").unwrap();
    assert_eq!(md_hit.place, "lines 1–5, §Irrigation");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // FTS5 syntax in a question is read as words.
    let odd = store
        .search_words(&kb.id, "drip AND (lines NEAR \"night* -", 5)
        .unwrap();
    assert_eq!(odd[0].name, "notes.md");
    assert_eq!(
        store.search_words(&kb.id, " ?! ", 5),
        Err(KnowledgeProblem::EmptyQuery)
    );
}

#[test]
fn a_document_read_again_replaces_its_passages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let kb = store.create("Notes").unwrap();
    let file = dir.path().join("plan.txt");
    std::fs::write(&file, "Plant apple trees in March.\n").unwrap();
    let path = file.to_string_lossy().to_string();
    let id = store.queue(&kb.id, &path, "plan.txt").unwrap();
    drain(&store);
    std::fs::write(&file, "Plant pear trees in April.\n").unwrap();
    assert_eq!(store.queue(&kb.id, &path, "plan.txt").unwrap(), id);
    drain(&store);
    assert!(store.search_words(&kb.id, "apple", 5).unwrap().is_empty());
    assert_eq!(store.search_words(&kb.id, "pear", 5).unwrap().len(), 1);
    assert_eq!(store.documents(&kb.id).unwrap().len(), 1);
    store.remove(id).unwrap();
    assert!(store.search_words(&kb.id, "pear", 5).unwrap().is_empty());
    let left = store
        .with(|c| c.query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0)))
        .unwrap();
    assert_eq!(left, 0, "no orphan passages");
}

#[test]
fn a_dead_process_claim_goes_back_to_the_queue_and_two_stores_never_share_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let kb = store.create("Notes").unwrap();
    for n in 0..20 {
        let file = dir.path().join(format!("n{n}.txt"));
        std::fs::write(&file, format!("note {n}")).unwrap();
        store
            .queue(&kb.id, &file.to_string_lossy(), &format!("n{n}.txt"))
            .unwrap();
    }
    // A claim left by a process that has exited.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let claimed = store.claim().unwrap().unwrap();
    store
        .with(|c| {
            c.execute(
                "UPDATE documents SET claimed_by = ?1 WHERE id = ?2",
                rusqlite::params![dead, claimed.id],
            )
        })
        .unwrap();
    drop(store);
    let first = open(dir.path());
    let second = open(dir.path());
    let mut seen = std::collections::HashSet::new();
    std::thread::scope(|s| {
        let a = s.spawn(|| drain(&first));
        let b = s.spawn(|| drain(&second));
        for (name, state, _) in a.join().unwrap().into_iter().chain(b.join().unwrap()) {
            assert_eq!(state, DocumentState::Ready);
            assert!(seen.insert(name.clone()), "{name} indexed twice");
        }
    });
    assert_eq!(seen.len(), 20, "the dead claim was given back");
}

#[test]
fn a_search_within_a_thread_s_collections_sees_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let (farm, recipes) = (
        store.create("Farm").unwrap(),
        store.create("Recipes").unwrap(),
    );
    for (c, name, text) in [
        (&farm, "farm.md", "# Apples\n\nThe apple harvest was late."),
        (&recipes, "pie.md", "# Pie\n\nApple pie needs six apples."),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        store.queue(&c.id, &path.to_string_lossy(), name).unwrap();
    }
    drain(&store);
    let names = |hits: Vec<art_types::knowledge::Hit>| -> Vec<String> {
        hits.into_iter().map(|h| h.name).collect()
    };

    let everywhere = names(store.search_in("apple", &[], None, 5).unwrap());
    assert_eq!(everywhere.len(), 2);
    let scope = [farm.id.clone()];
    assert_eq!(
        names(store.search_in("apple", &scope, None, 5).unwrap()),
        ["farm.md"]
    );
    // A collection outside the thread's is as good as absent.
    assert_eq!(
        store.search_in("apple", &scope, Some("Recipes"), 5),
        Err(KnowledgeProblem::NoCollection {
            name: "Recipes".into()
        })
    );
    // The thread's collections deleted since: said, not an empty answer.
    store.delete(&farm.id).unwrap();
    assert!(matches!(
        store.search_in("apple", &scope, None, 5),
        Err(KnowledgeProblem::NoCollection { .. })
    ));
}

#[test]
fn a_cited_passage_opens_its_document_in_order_and_a_stale_one_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let c = store.create("Farm").unwrap();
    let report = fixture("ghostscript-three-pages.pdf");
    store
        .queue(&c.id, &report.to_string_lossy(), "report.pdf")
        .unwrap();
    drain(&store);
    let hit = store.search("irrigation", None, 1).unwrap().remove(0);
    let opened = store.passages(hit.chunk).unwrap();
    assert_eq!(opened.document.name, "report.pdf");
    let places: Vec<&str> = opened.passages.iter().map(|p| p.place.as_str()).collect();
    assert_eq!(places, ["p. 1", "p. 2", "p. 3"]);
    let cited = opened
        .passages
        .iter()
        .find(|p| p.chunk == hit.chunk)
        .unwrap();
    assert_eq!(
        (cited.place.as_str(), cited.text.as_str()),
        (hit.place.as_str(), hit.text.as_str())
    );

    // Read again, the document's passages are new: the old citation says so.
    store.requeue(&c.id).unwrap();
    drain(&store);
    assert_eq!(
        store.passages(hit.chunk),
        Err(KnowledgeProblem::NoPassage { chunk: hit.chunk })
    );
}

#[test]
fn a_question_finds_its_subject_not_every_passage_that_says_the() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let farm = store.create("Farm").unwrap();
    let mut text = String::from("# Pears\n\nThe pear trees gave 40 crates in October.\n\n");
    for i in 0..30 {
        text.push_str(&format!(
            "# Day {i}\n\nThe orchard's ledger, line after line, and the weather.\n\n"
        ));
    }
    let path = dir.path().join("ledger.md");
    std::fs::write(&path, text).unwrap();
    store
        .queue(&farm.id, &path.to_string_lossy(), "ledger.md")
        .unwrap();
    drain(&store);
    let hits = store
        .search("How many crates did the pear trees give?", None, 5)
        .unwrap();
    assert_eq!(hits.len(), 1, "only the passage about pears: {hits:?}");
    assert!(hits[0].text.contains("40 crates"));
    // A query of common words only is still searched, as it is.
    assert!(!store.search("what is the", None, 5).unwrap().is_empty());
}

#[test]
fn a_word_in_too_many_passages_is_left_out_when_the_question_has_a_rarer_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let manuals = store.create("Manuals").unwrap();
    for i in 0..40 {
        let path = dir.path().join(format!("sources-{i}.md"));
        std::fs::write(
            &path,
            format!("# Mirror {i}\n\nThe apt sources list names mirror {i}."),
        )
        .unwrap();
        store
            .queue(
                &manuals.id,
                &path.to_string_lossy(),
                &format!("sources-{i}.md"),
            )
            .unwrap();
    }
    let path = dir.path().join("proxy.md");
    std::fs::write(&path, "# Proxy\n\nSet the apt proxy in apt.conf.d.").unwrap();
    store
        .queue(&manuals.id, &path.to_string_lossy(), "proxy.md")
        .unwrap();
    drain(&store);

    let question = "How do I configure the APT proxy?";
    let mut within = store.words_within(question, 10).unwrap();
    within.sort();
    // "apt" is in 41 passages: over the budget of 10, and "proxy" tells them apart.
    assert_eq!(within, ["configure", "proxy"]);
    let mut all = store.words_within(question, 1_000).unwrap();
    all.sort();
    assert_eq!(all, ["apt", "configure", "proxy"]);
    // A question of one common word keeps it: something is searched.
    assert_eq!(store.words_within("apt", 10).unwrap(), ["apt"]);
    assert_eq!(store.search(question, None, 3).unwrap()[0].name, "proxy.md");
}
