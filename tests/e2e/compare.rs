//! Replay and diff in the app: a run replayed from the Trace panel with its tool call
//! answered from the record, shown on its own branch, then compared with its original —
//! figures, plan, the tool call, the answers word by word.

use art_testkit::fake::scripts::{Protocol, text_reply};

use crate::day::{ENTER, PLAN, fake_ollama, launched, new_thread};

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

    // Replay… on the run: recorded (the form's default), the thread's model.
    app.click("#trace-button").await;
    app.wait_for_text("#trace-panel .trace-run-head", "1 tool call")
        .await;
    app.click(".replay-run").await;
    app.wait_for("#replay-form").await;
    app.wait_for("#replay-recorded:checked").await;
    app.click("#replay-start").await;
    app.wait_gone("#replay-form").await;
    // The replay answers on a branch beside the original (‹ 2 / 2 ›), its tool call
    // answered from the record.
    app.wait_for_text(".message.ai .answer", "Replayed").await;
    app.wait_for(".tool-card[data-tool=\"calculator\"] .recorded-badge")
        .await;
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
