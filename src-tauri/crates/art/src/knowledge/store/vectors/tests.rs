use std::path::Path;

use super::super::KnowledgeStore;
use crate::knowledge::embed::letters::Letters;
use crate::knowledge::embed::minilm::{DIMENSION, MODEL, MiniLm};
use crate::knowledge::embed::{Embedder, embed_waiting};
use crate::knowledge::{DATABASE_FILE, add, index_next};

/// Three notes, one subject each, a passage each.
fn notes(dir: &Path) -> std::path::PathBuf {
    let folder = dir.join("orchard");
    std::fs::create_dir_all(&folder).unwrap();
    for (name, text) in [
        (
            "pruning.md",
            "# Pruning\n\nPrune the apple trees in late winter, before the buds open.\n",
        ),
        (
            "water.md",
            "# Irrigation\n\nThe drip lines run two hours at dawn; irrigation cost 310 euros.\n",
        ),
        (
            "cellar.md",
            "# Storage\n\nPears keep for weeks in a cool, dark cellar.\n",
        ),
    ] {
        std::fs::write(folder.join(name), text).unwrap();
    }
    folder
}

fn indexed(dir: &Path) -> (KnowledgeStore, String) {
    let store = KnowledgeStore::open(&dir.join(DATABASE_FILE)).unwrap();
    let c = store.create("Orchard").unwrap();
    add(&store, &c.id, &[notes(dir)], false).unwrap();
    while index_next(&store).unwrap().is_some() {}
    (store, c.id)
}

fn minilm() -> std::sync::Arc<dyn Embedder> {
    std::sync::Arc::new(MiniLm::load(&art_testkit::embedder::weights_dir()).unwrap())
}

const COLD_PRUNING: &str = "cutting back branches during the cold months";

#[test]
fn a_question_finds_by_meaning_once_passages_are_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = indexed(dir.path());
    // Before any vector: words only, and said.
    let before = store.search_scoped(COLD_PRUNING, &[], None, 3).unwrap();
    assert!(before.hits.is_empty(), "no word in common: {before:?}");
    assert_eq!(before.words_only, 3);
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 3);

    let embedder = minilm();
    let mut seen = Vec::new();
    let done = embed_waiting(
        &store,
        embedder.as_ref(),
        |d, of| seen.push((d, of)),
        || true,
    )
    .unwrap();
    assert_eq!(done, 3);
    assert_eq!(seen.last(), Some(&(3, 3)));
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 0);

    store.set_embedder(embedder);
    let after = store.search_scoped(COLD_PRUNING, &[], None, 3).unwrap();
    assert_eq!(after.words_only, 0);
    assert_eq!(after.hits[0].name, "pruning.md", "{:?}", after.hits);
    // Found by both halves: first in each, so 2 / (60 + 1); the other notes share no
    // word with it and are unrelated to it, so they are left out.
    let both = store.search("irrigation cost", None, 3).unwrap();
    assert_eq!(both.len(), 1, "{both:?}");
    assert_eq!(both[0].name, "water.md");
    assert!((both[0].score - 2.0 / 61.0).abs() < 1e-9, "{both:?}");
    assert!(store.search("zeppelin", None, 3).unwrap().is_empty());
}

#[test]
fn a_rewritten_document_loses_its_vectors_and_a_stale_batch_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (store, collection) = indexed(dir.path());
    let embedder = minilm();
    embed_waiting(&store, embedder.as_ref(), |_, _| {}, || true).unwrap();
    assert_eq!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .len(),
        3
    );
    let stale = store.to_embed(MODEL, 10).unwrap();
    assert!(stale.is_empty());
    let old: Vec<i64> = store
        .search("pears cellar", None, 1)
        .unwrap()
        .iter()
        .map(|h| h.chunk)
        .collect();

    std::fs::write(
        dir.path().join("orchard/cellar.md"),
        "# Storage\n\nApples keep all winter in crates of straw.\n",
    )
    .unwrap();
    add(
        &store,
        &collection,
        &[dir.path().join("orchard/cellar.md")],
        false,
    )
    .unwrap();
    while index_next(&store).unwrap().is_some() {}
    // The old passage's vector went with it; the new passage waits for one.
    assert_eq!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 1);
    // A vector computed for the old passage, stored late: passed over, no error.
    store
        .put_vectors(MODEL, &[(old[0], vec![0.0; DIMENSION])])
        .unwrap();
    assert_eq!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .len(),
        2
    );
    embed_waiting(&store, embedder.as_ref(), |_, _| {}, || true).unwrap();
    assert_eq!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn vectors_are_reloaded_after_another_process_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (store, collection) = indexed(dir.path());
    assert!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .is_empty()
    );
    // Another connection (as `art kb` in another process) embeds.
    let other = KnowledgeStore::open(&dir.path().join(DATABASE_FILE)).unwrap();
    embed_waiting(&other, minilm().as_ref(), |_, _| {}, || true).unwrap();
    assert_eq!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .len(),
        3
    );
    // Unchanged since: the same set, not a reload.
    let a = store.vector_set(&collection, MODEL, DIMENSION).unwrap();
    let b = store.vector_set(&collection, MODEL, DIMENSION).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
}

#[test]
fn a_change_of_model_re_embeds_while_the_old_vectors_answer_and_never_mixes_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let (store, collection) = indexed(dir.path());
    let builtin = minilm();
    embed_waiting(&store, builtin.as_ref(), |_, _| {}, || true).unwrap();
    store.set_embedder(builtin);
    store.set_embedder(std::sync::Arc::new(Letters));

    store.change_embedder("orchard", "test:letters").unwrap();
    assert_eq!(store.waiting_for_vectors("test:letters").unwrap(), 3);
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 0);
    // Nothing of the new model yet, then one passage: the old vectors still answer, and
    // every passage is still searched by meaning.
    let answers = |store: &KnowledgeStore| {
        let found = store.search_scoped(COLD_PRUNING, &[], None, 3).unwrap();
        assert_eq!(found.words_only, 0);
        found.hits[0].name.clone()
    };
    assert_eq!(answers(&store), "pruning.md");
    let first = store.to_embed("test:letters", 1).unwrap();
    let vectors = Letters.embed(&[first[0].1.as_str()]).unwrap();
    store
        .put_vectors("test:letters", &[(first[0].0, vectors[0].clone())])
        .unwrap();
    assert_eq!(store.answering_model(&collection, 3).unwrap(), MODEL);
    assert_eq!(answers(&store), "pruning.md");
    // What the Knowledge page shows: the new model, and how far its passages are.
    let shown = store.find(&collection).unwrap();
    assert_eq!(shown.embedder, "test:letters");
    assert_eq!(
        shown.changing,
        Some(art_types::knowledge::ModelChange {
            from: MODEL.to_owned(),
            embedded: 1
        })
    );

    // Complete: the new model answers, the old vectors are gone.
    embed_waiting(&store, &Letters, |_, _| {}, || true).unwrap();
    assert_eq!(
        store.answering_model(&collection, 3).unwrap(),
        "test:letters"
    );
    assert!(
        store
            .vector_set(&collection, MODEL, DIMENSION)
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.find(&collection).unwrap().changing, None);
    let found = store.search_scoped("irrigation", &[], None, 3).unwrap();
    assert_eq!(found.words_only, 0);
    assert_eq!(found.hits[0].name, "water.md");
    assert!(found.hits.iter().any(|h| h.matched.meaning.is_some()));

    // Back to the built-in model: re-embedded from nothing, letters answering meanwhile.
    store.change_embedder(&collection, MODEL).unwrap();
    assert_eq!(
        store.answering_model(&collection, 3).unwrap(),
        "test:letters"
    );
    assert_eq!(store.waiting_for_vectors(MODEL).unwrap(), 3);
    assert!(matches!(
        store.change_embedder("no such collection", MODEL),
        Err(art_types::knowledge::KnowledgeProblem::NoCollection { .. })
    ));
}
