//! The Models page against a fake Ollama library (the page pointed at it by the command
//! its address field calls): installed models with what each can do, a pull showing its progress and
//! cancelled, a suggested model pulled and listed, a failing pull said in words, a
//! delete confirmed and what it freed said.

use art_testkit::e2e::AppSession;
use art_testkit::fake::FakeServer;
use art_testkit::fake::ollama::{OllamaLibrary, PullFault};

#[tokio::test(flavor = "current_thread")]
async fn models_are_listed_pulled_with_progress_and_deleted() {
    let library = OllamaLibrary::new()
        .installed("llava:7b", &[4_700_000_000], &["completion", "vision"])
        .in_registry(
            "llama3.2:3b",
            &[2_000_000_000, 12_000],
            &["completion", "tools"],
        );
    let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
        .await
        .unwrap();
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    // The suite holds the default Ollama address (nothing may reach it): the page is
    // pointed at the fake library before it first lists, as its address field would.
    let set = crate::day::ollama_address(&app, &format!("{}/v1", server.url())).await;
    assert_eq!(set.as_str(), Some(server.url().as_str()), "no /v1");
    app.click("#models-button").await;
    app.wait_for("#models").await;
    let row = app
        .wait_for_text("tr.local-model[data-id=\"llava:7b\"]", "vision")
        .await;
    assert!(
        row.contains("4.7 GB · 3.2B · Q4_K_M · 128k context"),
        "{row}"
    );
    let address = app
        .eval_async(
            "arguments[0](document.querySelector('#ollama-address').value)",
            Vec::new(),
        )
        .await;
    assert_eq!(address.as_str(), Some(server.url().as_str()));
    // A pull that stalls halfway shows how far it got, and can be cancelled.
    library.fail_next_pull(PullFault::Stall);
    app.click(".suggestion[data-name=\"llama3.2:3b\"] .pull-suggested")
        .await;
    app.wait_for_text(
        ".pull[data-model=\"llama3.2:3b\"][data-phase=\"pulling\"]",
        "of 2.0 GB",
    )
    .await;
    app.click(".pull[data-model=\"llama3.2:3b\"] .cancel-pull")
        .await;
    app.wait_for(".pull[data-model=\"llama3.2:3b\"][data-phase=\"cancelled\"]")
        .await;

    // Pulled again, whole: installed, listed with its abilities, no longer suggested.
    app.click(".suggestion[data-name=\"llama3.2:3b\"] .pull-suggested")
        .await;
    app.wait_for_text(
        ".pull[data-model=\"llama3.2:3b\"][data-phase=\"done\"]",
        "installed (2.0 GB)",
    )
    .await;
    app.wait_for_text("tr.local-model[data-id=\"llama3.2:3b\"]", "tools")
        .await;
    app.wait_for_text(".suggestion[data-name=\"llama3.2:3b\"]", "installed")
        .await;

    // A pull that fails says why in words.
    library.fail_next_pull(PullFault::NoSpaceAt(40));
    app.type_into("#pull-name", "llama3.2:3b").await;
    app.click("#pull-model").await;
    app.wait_for_text(
        ".pull[data-model=\"llama3.2:3b\"][data-phase=\"failed\"]",
        "not enough disk space",
    )
    .await;
    app.screenshot("models").await;
    app.type_into("#pull-name", "llama 3").await;
    app.click("#pull-model").await;
    app.wait_for_text(".field-problem[data-field=\"name\"]", "is not a model name")
        .await;
    // An address that is not one is refused where it was typed, the page unchanged.
    app.type_into("#ollama-address", "ftp://nowhere").await;
    app.click("#use-address").await;
    app.wait_for(".field-problem[data-field=\"address\"]").await;
    assert_eq!(app.count("tr.local-model").await, 2);

    // Delete, confirmed, saying what it frees.
    app.click("tr.local-model[data-id=\"llava:7b\"] .delete-model")
        .await;
    app.click("tr.local-model[data-id=\"llava:7b\"] .confirm-delete-model")
        .await;
    app.wait_for_text("#models-note", "Deleted llava:7b: up to 4.7 GB freed")
        .await;
    app.wait_gone("tr.local-model[data-id=\"llava:7b\"]").await;
    assert_eq!(library.names(), ["llama3.2:3b"]);
    app.close().await;
}
