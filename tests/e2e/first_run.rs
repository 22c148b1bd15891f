//! A new user's first minute, and the thread header's model picker, against a fake
//! Ollama library: a fresh data directory's welcome page finds Ollama without a model,
//! pulls one with its progress and opens a thread on it that answers; with no Ollama it
//! says how to get one and checks again; the picker switches a thread's model, makes it
//! the default for new threads, marks what each model can do (an image attached for a
//! model without vision is said at once), and a thread whose model was deleted says so;
//! a pull the closing app cut short is said when it opens again.

use art_testkit::e2e::AppSession;
use art_testkit::fake::FakeServer;
use art_testkit::fake::ollama::{OllamaLibrary, PullFault};
use art_testkit::fake::scripts::{Protocol, text_reply};

use crate::attach::{PASTE, png_base64};

#[tokio::test(flavor = "current_thread")]
async fn the_first_run_pulls_a_model_and_opens_a_thread_that_answers() {
    let library = OllamaLibrary::new().in_registry(
        "llama3.2:3b",
        &[2_000_000_000, 12_000],
        &["completion", "tools"],
    );
    // The first thread has no tools: it answers in one call.
    let replies = vec![text_reply(
        Protocol::Ollama,
        "Hello from your first model.",
        6,
    )];
    let server = FakeServer::start_at(0, Some(library.router()), replies)
        .await
        .unwrap();
    let app = AppSession::launch_with_ollama(&server.url()).await;
    app.wait_for_text(
        "#first-run-check[data-state=\"ollama-empty\"]",
        "no model yet",
    )
    .await;
    app.wait_for_text("#pull-first", "Pull llama3.2:3b (2.0 GB)")
        .await;
    app.screenshot("first-run").await;
    // The first try fails part way: how far it got, and why, in words; then again.
    library.fail_next_pull(PullFault::NoSpaceAt(40));
    app.click("#pull-first").await;
    let failed = app
        .wait_for_text("#first-pull[data-phase=\"failed\"]", "llama3.2:3b")
        .await;
    assert!(failed.to_lowercase().contains("space"), "{failed}");
    app.click("#pull-again").await;
    // Installed, it becomes the default and a thread opens on it, ready to be asked.
    app.wait_for_text("#model-name", "llama3.2:3b").await;
    assert!(library.names().contains(&"llama3.2:3b".to_owned()));
    app.wait_for_text("#model-picker [data-capability=\"tools\"]", "tools")
        .await;
    app.type_into("#composer-input", "Hello?").await;
    app.click("#send-button").await;
    app.wait_for_text(".message.ai .answer", "Hello from your first model.")
        .await;
    // No tools: answered in one call, and its card says so (no plan card).
    app.wait_for_text(".run-card .answered-directly", "Answered directly")
        .await;
    assert_eq!(app.count(".plan-card").await, 0);
    // Titled from the question.
    app.wait_for_text("#thread-title", "Hello?").await;
    // The next thread starts on it too.
    app.click("#new-thread").await;
    for _ in 0..100 {
        if app.count(".thread-item").await == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(app.count(".thread-item").await, 2);
    app.wait_for_text("#model-name", "llama3.2:3b").await;
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_picker_switches_models_and_says_what_each_can_do() {
    let library = OllamaLibrary::new()
        .installed("llama3.2:3b", &[2_000_000_000], &["completion", "tools"])
        .installed("llava:7b", &[4_700_000_000], &["completion", "vision"]);
    let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
        .await
        .unwrap();
    // A machine without Ollama first: the page says how to get it, and checks again.
    let app = AppSession::launch().await;
    app.wait_for_text(
        "#first-run-check[data-state=\"no-ollama\"]",
        "does not answer",
    )
    .await;
    app.wait_for_text("#install-ollama", "ollama.com").await;
    app.screenshot("first-run-no-ollama").await;
    app.wait_for("#add-key").await;
    let set = crate::day::ollama_address(&app, &server.url()).await;
    assert_eq!(set.as_str(), Some(server.url().as_str()));
    app.click("#check-again").await;
    let offered = app
        .wait_for_text(
            "#first-run-check[data-state=\"ollama-ready\"]",
            "2 model(s)",
        )
        .await;
    assert!(offered.contains(&server.url()), "{offered}");
    // A suggested model is offered first.
    app.wait_for_text(
        "#start-chatting[data-model=\"llama3.2:3b\"]",
        "Start chatting",
    )
    .await;
    app.click("#start-chatting").await;
    app.wait_for_text("#model-name", "llama3.2:3b").await;

    // An image for a model that does not see images is said at once.
    let pasted = app
        .eval_async(PASTE, vec!["chart.png".into(), png_base64().into()])
        .await;
    assert_eq!(pasted, serde_json::Value::Bool(true));
    app.wait_for_text("#vision-note", "llama3.2:3b does not see images")
        .await;

    // The picker: every installed model with what it can do; a search narrows it.
    app.click("#model-picker").await;
    app.wait_for_text(
        ".model-group[data-provider=\"ollama\"] .model-choice[data-model=\"llava:7b\"]",
        "vision",
    )
    .await;
    app.wait_for_text(".model-group[data-provider=\"openai\"]", "No API key")
        .await;
    app.type_into("#model-search", "llava").await;
    app.wait_gone(
        ".model-group[data-provider=\"ollama\"] .model-choice[data-model=\"llama3.2:3b\"]",
    )
    .await;
    app.click("#make-default").await;
    app.click(".model-group[data-provider=\"ollama\"] .model-choice[data-model=\"llava:7b\"]")
        .await;
    app.wait_for_text("#model-name", "llava:7b").await;
    app.wait_gone("#vision-note").await;
    app.wait_gone("#model-menu").await;

    // Chosen lately: listed first, and the default for new threads.
    app.click("#model-picker").await;
    app.wait_for_text(
        ".model-group[data-provider=\"recent\"] .model-choice[data-model=\"llava:7b\"]",
        "default",
    )
    .await;
    app.screenshot("model-picker").await;
    app.press("#model-search", "\u{e00c}").await; // Escape
    app.wait_gone("#model-menu").await;

    // Deleted on the Models page, the thread's model is said to be missing.
    app.click("#models-button").await;
    app.click("tr.local-model[data-id=\"llava:7b\"] .delete-model")
        .await;
    app.click("tr.local-model[data-id=\"llava:7b\"] .confirm-delete-model")
        .await;
    app.wait_gone("tr.local-model[data-id=\"llava:7b\"]").await;
    app.click(".thread-item .thread-title").await;
    app.wait_for_text("#model-missing", "llava:7b is not installed")
        .await;
    app.close().await;
}

/// The app closed mid-pull: Ollama stops a pull whose connection closes (keeping what
/// it downloaded), and the Models page says so when the app is opened again.
#[tokio::test(flavor = "current_thread")]
async fn a_pull_cut_short_by_closing_the_app_is_said_after_a_restart() {
    let library = OllamaLibrary::new().in_registry(
        "qwen3:4b",
        &[2_500_000_000, 12_000],
        &["completion", "tools", "thinking"],
    );
    library.fail_next_pull(PullFault::Stall);
    let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
        .await
        .unwrap();
    let app = AppSession::launch_with_ollama(&server.url()).await;
    app.click("#models-button").await;
    app.click(".suggestion[data-name=\"qwen3:4b\"] .pull-suggested")
        .await;
    app.wait_for_text(
        ".pull[data-model=\"qwen3:4b\"][data-phase=\"pulling\"]",
        "of 2.5 GB",
    )
    .await;
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click("#models-button").await;
    app.wait_for_text(
        ".pull[data-model=\"qwen3:4b\"][data-phase=\"failed\"]",
        "the app was closed while it pulled qwen3:4b: pull again to resume",
    )
    .await;
    // Said once: dismissed, it is gone for good.
    app.click("#dismiss-pulls").await;
    app.wait_gone(".pull[data-model=\"qwen3:4b\"]").await;
    app.close().await;
}
