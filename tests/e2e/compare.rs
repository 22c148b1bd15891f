//! Compare, replay and diff in the app: one question to three local models from the
//! composer, in columns (one calls a tool that asks first: approved in its column), one
//! kept, its run replayed from the record on
//! the thread's model and compared with it; and a run replayed from the Trace panel with
//! its tool call answered from the record, shown on its own branch, then compared with
//! its original — figures, plan, the tool call, the answers word by word.

use art_testkit::fake::FakeServer;
use art_testkit::fake::ollama::OllamaLibrary;
use art_testkit::fake::scripts::{Protocol, text_reply};

use crate::day::{
    ENTER, PLAN, fake_ollama, launched, new_thread, ollama_address, plan_without_tools,
};

/// Replay… on the thread's one run with a calculator call, from the record (the form's
/// default) on the thread's model, with `prompt` as its system prompt when given: the
/// replay answers ("Replayed…"), the calculator's result marked recorded.
async fn replay_from_the_record(app: &art_testkit::e2e::AppSession, prompt: Option<&str>) {
    app.click("#trace-button").await;
    app.wait_for_text("#trace-panel .trace-run-head", "1 tool call")
        .await;
    app.click(".replay-run").await;
    app.wait_for("#replay-form").await;
    app.wait_for("#replay-recorded:checked").await;
    if let Some(prompt) = prompt {
        app.type_into("#replay-prompt", prompt).await;
    }
    app.click("#replay-start").await;
    app.wait_gone("#replay-form").await;
    app.wait_for_text(".message.ai .answer", "Replayed").await;
    app.wait_for(".tool-card[data-tool=\"calculator\"] .recorded-badge")
        .await;
}

/// The column of `model`.
fn column(model: &str) -> String {
    format!(".comparison-column[data-model=\"{model}\"]")
}

#[tokio::test(flavor = "current_thread")]
async fn three_models_answer_in_columns_one_is_kept_replayed_and_diffed() {
    let models = ["llama3.2:3b", "qwen3:4b", "gemma3:4b"];
    let library = models.iter().fold(OllamaLibrary::new(), |library, m| {
        library.installed(m, &[2_000_000_000], &["completion", "tools"])
    });
    // Local models take turns, in column order: llama3.2, then qwen3 (which plans a
    // calculator call), then gemma3; then the replay of qwen3's run.
    let ollama = FakeServer::start_at(
        0,
        Some(library.router()),
        vec![
            text_reply(Protocol::Ollama, &plan_without_tools("Say it"), 8),
            text_reply(Protocol::Ollama, "Llama says forty-two.", 8),
            text_reply(Protocol::Ollama, PLAN, 24),
            text_reply(Protocol::Ollama, "Qwen added them: **42**.", 8),
            text_reply(Protocol::Ollama, &plan_without_tools("Say it"), 8),
            text_reply(Protocol::Ollama, "Gemma thinks 42.", 8),
            text_reply(Protocol::Ollama, PLAN, 24),
            text_reply(Protocol::Ollama, "Replayed: 19 and 23 make **42**.", 8),
        ],
    )
    .await
    .unwrap();
    let app = launched().await;
    // The Models page's Ollama is the fake one: the compare list reads its models.
    let set = ollama_address(&app, &ollama.url()).await;
    assert_eq!(set.as_str(), Some(ollama.url().as_str()));
    new_thread(&app, &ollama.url()).await;
    app.click("#model-picker").await;
    app.click(".model-group[data-provider=\"ollama\"] .model-choice[data-model=\"llama3.2:3b\"]")
        .await;
    app.wait_for_text("#model-name", "llama3.2:3b").await;
    // The calculator asks first in this thread.
    app.click("#settings-button").await;
    app.select(".tool-policy[data-tool=\"calculator\"]", "ask")
        .await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;

    // Compare…: three models ticked, in order, asked the question being written.
    app.type_into("#composer-input", "What is 19 + 23?").await;
    app.click("#compare-button").await;
    // Every provider's list in first: the menu draws its groups again as each arrives,
    // and a tick on an entry being replaced is lost.
    app.wait_gone("#compare-menu .group-loading").await;
    for model in models {
        app.click(&format!(".compare-choice[data-model=\"{model}\"] input"))
            .await;
    }
    app.wait_for_text("#compare-start", "Ask 3 models").await;
    app.click("#compare-start").await;
    app.wait_gone("#compare-menu").await;
    app.wait_for("#comparison").await;
    assert_eq!(app.count(".comparison-column").await, 3);

    // Each column answers in its own place. qwen3's calls the calculator, which asks
    // first: its column waits for the decision, and gemma3 (local too) for its turn.
    app.wait_for_text(&format!("{} .answer", column("llama3.2:3b")), "forty-two")
        .await;
    let approval = format!(
        "{} .approval-card[data-tool=\"calculator\"]",
        column("qwen3:4b")
    );
    app.wait_for(&approval).await;
    app.wait_for_text(
        &format!("{} .column-state", column("gemma3:4b")),
        "Waits for qwen3:4b",
    )
    .await;
    app.screenshot("compare-approval").await;
    app.click(&format!("{approval} button.approve")).await;
    app.wait_for_text(&format!("{} .answer", column("qwen3:4b")), "42")
        .await;
    app.wait_for_text(&format!("{} .answer", column("gemma3:4b")), "Gemma")
        .await;
    app.wait_for(&format!(
        "{} .tool-card[data-tool=\"calculator\"]",
        column("qwen3:4b")
    ))
    .await;
    assert_eq!(app.count(".comparison-column .tool-card").await, 1);
    // Ended: each says so, with its figures, and may be kept.
    app.wait_for_count(".keep-column", 3).await;
    for model in models {
        let state = app
            .wait_for_text(&format!("{} .column-state", column(model)), "Answered")
            .await;
        assert_eq!(state, "Answered");
        let figures = app
            .wait_for_text(&format!("{} .column-figures", column(model)), "first token")
            .await;
        assert!(figures.contains("model call"), "{figures}");
    }
    let qwen_figures = app
        .wait_for_text(&format!("{} .column-figures", column("qwen3:4b")), "tool")
        .await;
    assert!(qwen_figures.contains("1 tool call"), "{qwen_figures}");
    // The columns' questions are not listed again above them.
    assert_eq!(app.count(".message.user").await, 0);
    app.screenshot("compare-columns").await;

    // The diff of two columns, below them.
    app.select("#comparison-diff-a", "0").await;
    app.select("#comparison-diff-b", "1").await;
    app.click("#comparison-diff").await;
    let diff = app.wait_for_text("#diff-view", "Tool calls").await;
    assert!(diff.contains("calculator"), "{diff}");
    assert!(diff.contains("qwen3:4b"), "{diff}");

    // Keep qwen3's: the columns close and the thread shows its branch (2 of 3).
    app.click(&format!("{} .keep-column", column("qwen3:4b")))
        .await;
    app.wait_gone("#comparison").await;
    app.wait_for_text(".message.ai .answer", "Qwen added them")
        .await;
    app.wait_for_text(".message.user .branch-position", "2 / 3")
        .await;
    let shown = app.page_text().await;
    assert!(!shown.contains("Llama says"), "{shown}");
    assert!(!shown.contains("Gemma thinks"), "{shown}");

    // Its run replayed from the record on the thread's model with another system
    // prompt, then diffed with it.
    replay_from_the_record(&app, Some("Answer like a ship's log.")).await;
    app.wait_for(".compare-original").await;
    app.click(".compare-original").await;
    let answer = app.wait_for_text("#diff-answer", "Replayed").await;
    assert!(answer.contains("42"), "{answer}");
    // Only the replay's calls went to the server after the comparison's six, and they
    // carry its system prompt; the comparison's did not.
    let chats: Vec<_> = ollama
        .requests()
        .into_iter()
        .filter(|r| r.request_line.starts_with("POST /api/chat"))
        .filter(|r| {
            r.json()["messages"]
                .as_array()
                .is_some_and(|m| !m.is_empty())
        })
        .collect();
    assert_eq!(chats.len(), 8);
    let prompted: Vec<bool> = chats
        .iter()
        .map(|r| r.body.contains("ship's log"))
        .collect();
    assert_eq!(
        prompted,
        [false, false, false, false, false, false, true, true]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_replayed_from_the_record_is_compared_with_its_original() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "The sum of 19 and 23 is **42**.", 8),
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "Replayed: 19 and 23 make **42**.", 8),
    ])
    .await;
    let app = launched().await;
    new_thread(&app, &ollama.url()).await;
    app.type_into("#composer-input", &format!("What is 19 + 23?{ENTER}"))
        .await;
    app.wait_for_text(".message.ai .answer", "is 42").await;

    // Replay… on the run: recorded (the form's default), the thread's model; it answers
    // on a branch beside the original (‹ 2 / 2 ›), its tool call answered from the record.
    replay_from_the_record(&app, None).await;
    app.wait_for_text(".message.user .branch-position", "2 / 2")
        .await;
    app.screenshot("replay-answered").await;

    // The panel shows the original beside its replay, and compares them.
    app.wait_for(".compare-original").await;
    assert_eq!(app.count("#trace-panel .trace-run").await, 2);
    app.click(".compare-original").await;
    let diff = app.wait_for_text("#diff-view", "Tool calls").await;
    assert!(diff.contains("calculator"), "{diff}");
    let answer = app.wait_for_text("#diff-answer", "42").await;
    assert!(answer.contains("Replayed"), "{answer}");
    // "The sum of … is" became "Replayed: … make": words taken out and put in.
    assert!(app.count("#diff-answer del").await >= 1, "{answer}");
    assert!(app.count("#diff-answer ins").await >= 1, "{answer}");
    app.run_script("document.querySelector('#diff-view').scrollIntoView({block: 'start'})")
        .await;
    let answers = app.page_text().await;
    assert!(
        !answers.contains("The sum of 19 and 23 is 42."),
        "{answers}"
    );
    app.screenshot("replay-diff").await;
}
