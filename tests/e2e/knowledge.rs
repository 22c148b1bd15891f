//! Knowledge in the real app: on the Knowledge page a collection is made and a folder
//! added (the picker's folder is `--pick-dir`); the background indexer reads it with
//! progress, each document ends in its state (a PDF ready with its pages, a scanned PDF
//! failed saying why, a photo skipped), a search finds the right page, a file edited in
//! the folder (kept in sync) is found anew, a name taken is refused at its field; then a
//! thread limited to the collection asks with `search_knowledge`, the tool card lists the
//! passage the agent was given as its source `[1] report.pdf, p. 2`, and the source
//! opens the document at that passage, highlighted.

use std::path::PathBuf;

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};

use crate::day::fake_ollama;

const PLAN: &str = r#"{"title": "Irrigation", "intent": "Find what irrigation cost", "plan": ["Search the documents", "Answer citing them"], "toolCalls": [{"callId": "c1", "toolName": "search_knowledge", "arguments": {"query": "irrigation cost", "k": 2}}]}"#;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/documents")
        .join(name)
}

#[tokio::test(flavor = "current_thread")]
async fn a_folder_is_indexed_with_progress_searched_and_cited_by_the_agent() {
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    std::fs::copy(
        fixture("ghostscript-three-pages.pdf"),
        dir.join("report.pdf"),
    )
    .unwrap();
    std::fs::copy(fixture("scanned-two-pages.pdf"), dir.join("scan.pdf")).unwrap();
    std::fs::create_dir(dir.join("notes")).unwrap();
    std::fs::write(
        dir.join("notes/pruning.md"),
        "# Pruning\n\nPrune the apple trees in late winter, before the buds swell.\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes/.draft.md"), "hidden, never read").unwrap();
    let photo = image::RgbImage::from_fn(8, 8, |x, y| image::Rgb([x as u8 * 30, y as u8, 9]));
    photo.save(dir.join("photo.png")).unwrap();

    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(
            Protocol::Ollama,
            "Irrigation cost **310 euros** in the quarter [1].",
            8,
        ),
    ])
    .await;
    let exports = tempfile::tempdir().unwrap();
    let app = AppSession::launch_picking(dir, exports.path()).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;

    // A collection, then the folder.
    app.click("#knowledge-button").await;
    app.wait_for("#knowledge").await;
    app.type_into("#new-collection-name", "Farm").await;
    app.click("#create-collection").await;
    app.wait_for(".library-item.collection.active[data-name=\"Farm\"]")
        .await;
    app.click("#add-folder").await;
    app.wait_for_text("#knowledge-note", "4 files queued").await;

    // Each document ends in its state, saying what it holds or why not.
    let ready_pdf = app
        .wait_for_text(
            "tr.document[data-name=\"report.pdf\"][data-state=\"ready\"]",
            "3 pages",
        )
        .await;
    assert!(ready_pdf.contains("3 passages"), "one a page: {ready_pdf}");
    app.wait_for("tr.document[data-name=\"pruning.md\"][data-state=\"ready\"]")
        .await;
    let scan = app
        .wait_for_text(
            "tr.document[data-name=\"scan.pdf\"][data-state=\"failed\"]",
            "no text",
        )
        .await;
    assert!(scan.contains("OCR"), "{scan}");
    app.wait_for_text(
        "tr.document[data-name=\"photo.png\"][data-state=\"skipped\"]",
        "image",
    )
    .await;
    assert_eq!(
        app.count("tr.document").await,
        4,
        "the hidden draft is left out"
    );
    app.wait_for_text("#collection-counts", "2 ready · 1 failed · 1 skipped")
        .await;
    app.wait_for_text("#indexing-line", "Read 4 documents")
        .await;
    app.wait_for_text(".library-item.collection[data-name=\"Farm\"]", "2 ready")
        .await;

    // A search finds the page.
    app.type_into("#knowledge-query", "irrigation cost").await;
    app.click("#knowledge-search").await;
    let hit = app
        .wait_for_text("#knowledge-hits .hit[data-name=\"report.pdf\"]", "p. 2")
        .await;
    assert!(hit.contains("Irrigation cost 310 euros"), "{hit}");
    // Found by its words, and said so on the result.
    app.wait_for_text(
        "#knowledge-hits .hit[data-name=\"report.pdf\"] .match-words",
        "words #",
    )
    .await;

    // Once embedded (in the background, after the reading), a question that shares no
    // word with the passage finds it by meaning.
    first_hit_after(
        &app,
        "cutting back branches during the cold months",
        "Prune the apple trees",
    )
    .await;
    app.wait_for_text("#knowledge-hits .hit .match-meaning", "meaning 0.")
        .await;
    app.wait_for_text("#indexing-line", "Read 4 documents")
        .await;
    assert_eq!(app.count("#embedder-unavailable").await, 0);
    app.screenshot("knowledge-page").await;

    // The folder is kept in sync: a file edited there is read again and found.
    let folder_shown = dir.to_string_lossy().into_owned();
    app.wait_for_text("#synced-folders .synced-folder", &folder_shown)
        .await;
    std::fs::write(
        dir.join("notes/pruning.md"),
        "# Pruning\n\nPrune the pear trees after the harvest, never in spring.\n",
    )
    .unwrap();
    app.click("#sync-now").await;
    first_hit_after(&app, "pear harvest", "pear trees after the harvest").await;

    // Searched by meaning with the built-in model; another can be chosen: the built-in
    // one or a provider's that embeds (Anthropic offers no embeddings, so is not listed).
    app.wait_for_text("#collection-embedder", "all-MiniLM-L6-v2 (built-in)")
        .await;
    app.click("#change-model").await;
    app.wait_for("#model-provider option[value=\"ollama\"]")
        .await;
    assert_eq!(
        app.count("#model-provider option[value=\"anthropic\"]")
            .await,
        0
    );
    app.select("#model-provider", "ollama").await;
    let suggested = app.wait_for("#model-name").await;
    assert_eq!(
        suggested.prop("value").await.unwrap().as_deref(),
        Some("nomic-embed-text")
    );
    app.screenshot("knowledge-model-form").await;
    app.click("#model-form button.ghost").await;
    app.wait_gone("#model-form").await;

    // A second collection cannot take the same name, whatever the case.
    app.type_into("#new-collection-name", "farm").await;
    app.click("#create-collection").await;
    app.wait_for_text(".field-problem[data-field=\"name\"]", "exists already")
        .await;

    // The agent searches it: the tool card shows the passage, its document and page.
    app.click("#new-thread").await;
    app.wait_for("#thread").await;
    app.click("#settings-button").await;
    app.type_into("#base-url-input", &ollama.url()).await;
    app.select("#provider-select", "ollama").await;
    app.type_into("#model-input", "fake-model:latest").await;
    app.click("#tool-list input[data-tool=\"search_knowledge\"]")
        .await;
    app.click("#thread-knowledge input[data-collection=\"Farm\"]")
        .await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;
    app.type_into("#composer-input", "What did irrigation cost?")
        .await;
    app.click("#send-button").await;
    let card = app
        .wait_for_text(
            ".tool-card.ok[data-tool=\"search_knowledge\"]",
            "report.pdf",
        )
        .await;
    assert!(
        card.contains("p. 2") && card.contains("310 euros"),
        "{card}"
    );
    app.wait_for_text(".message.ai .answer", "310 euros").await;
    // The card lists its sources as the answer cites them; one opens its document with
    // the cited passage highlighted among the others.
    app.wait_for_text(".tool-card .sources .source", "[1] report.pdf, p. 2")
        .await;
    app.screenshot("knowledge-tool-card").await;
    app.click(".tool-card .sources .source").await;
    let cited = app
        .wait_for_text("#source-viewer .passage.cited", "Irrigation cost 310 euros")
        .await;
    assert!(cited.contains("p. 2"), "{cited}");
    assert_eq!(app.count("#source-viewer .passage").await, 3, "one a page");
    app.wait_for_text("#source-viewer .viewer-header", "report.pdf")
        .await;
    app.screenshot("knowledge-source").await;
    app.click("#source-close").await;
    app.wait_gone("#source-viewer").await;

    // The model was given the passage numbered, to cite.
    let answering = ollama
        .requests()
        .into_iter()
        .filter(|r| r.request_line.contains("/api/chat"))
        .nth(1)
        .expect("the answering call")
        .json();
    let sent: String = answering["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        sent.contains("Irrigation cost 310 euros") && sent.contains("\"ref\""),
        "{sent}"
    );

    // Deleting the collection asks first, then its documents are gone.
    app.click("#knowledge-button").await;
    app.wait_for(".library-item.collection.active[data-name=\"Farm\"]")
        .await;
    app.click("#delete-collection").await;
    app.click("#confirm-delete-collection").await;
    app.wait_gone(".library-item.collection[data-name=\"Farm\"]")
        .await;
    assert_eq!(app.count("tr.document").await, 0);
    app.close().await;
}

/// Search the Knowledge page for `query` until its first hit holds `expected` — reading,
/// embedding and rescans run in the background, so a search may come before them —, or
/// fail after a minute.
async fn first_hit_after(app: &AppSession, query: &str, expected: &str) {
    app.type_into("#knowledge-query", query).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        app.click("#knowledge-search").await;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let first = match app.count("#knowledge-hits .hit").await {
            0 => String::new(),
            // The list may be drawn again between finding its first hit and reading it
            // (a search answering late): not there yet, search again.
            _ => match app.wait_for("#knowledge-hits .hit").await.text().await {
                Ok(text) => text,
                Err(e) if e.is_stale_element_reference() => String::new(),
                Err(e) => panic!("reading the first hit: {e}"),
            },
        };
        if first.contains(expected) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{query:?} never found {expected:?} first: {first}"
        );
    }
}
