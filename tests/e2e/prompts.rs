//! A server's prompts, resources and progress in the real app, with server-everything:
//! a resource and one named by a template, attached from the Tools page, wait in the
//! next thread's composer; `/args`
//! in the composer lists the server's prompt, Enter opens its form, a required argument
//! left out is refused on the form, the filled prompt's message fills the composer; sent
//! with a plan that calls a long operation, the call's progress shows on its tool card.

use std::time::Duration;

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::mcp::{marker, settle};

use crate::day::fake_ollama;
use crate::tools::{paste_everything, thread_with_tool};

const TOOL: &str = "everything__trigger-long-running-operation";
const PLAN: &str = r#"{"title": "Weather", "intent": "Look it up slowly", "plan": ["Wait"], "toolCalls": [{"callId": "c1", "toolName": "everything__trigger-long-running-operation", "arguments": {"duration": 6, "steps": 4}}]}"#;

/// The composer's text, once it is `wanted`.
async fn composer_reads(app: &AppSession, wanted: &str) {
    let mut seen = serde_json::Value::Null;
    for _ in 0..100 {
        seen = app
            .eval_async(
                "arguments[0](document.querySelector('#composer-input').value)",
                Vec::new(),
            )
            .await;
        if seen == wanted {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the composer reads {seen}, not {wanted:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_prompt_fills_the_composer_a_resource_is_attached_and_progress_shows() {
    let mark = marker();
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "Sunny, after a while.", 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click("#tools-button").await;
    paste_everything(&app, &mark).await;

    // A resource, attached from the Tools page.
    app.click(".server-item[data-server=\"everything\"]").await;
    app.click("#mcp-resources summary").await;
    let resource = ".resource-item[data-uri$=\"architecture.md\"]";
    app.wait_for(resource).await;
    app.click(&format!("{resource} .attach-resource")).await;
    app.wait_for_text("#resource-attached", "Attached architecture.md")
        .await;

    // And one named by a template, its variable filled in (asked for when left empty).
    let template = ".resource-template[data-template$=\"text/{resourceId}\"]";
    app.click(&format!("{template} .attach-resource")).await;
    app.wait_for_text(&format!("{template} .template-problem"), "needs resourceId")
        .await;
    app.type_into(
        &format!("{template} input[data-variable=\"resourceId\"]"),
        "5",
    )
    .await;
    app.click(&format!("{template} .attach-resource")).await;
    app.wait_for_text("#resource-attached", "Attached 5.txt")
        .await;

    // It waits in the next thread's composer.
    thread_with_tool(&app, &ollama.url(), TOOL).await;
    app.wait_for("#attachment-tray .attachment-chip[title^=\"architecture.md\"]")
        .await;
    app.wait_for("#attachment-tray .attachment-chip[title^=\"5.txt\"]")
        .await;

    // `/` lists the prompts; the arrow keys move the mark.
    app.type_into("#composer-input", "/").await;
    app.wait_for("#prompt-menu .prompt-option.current:nth-child(1)")
        .await;
    app.press("#composer-input", "\u{E015}").await;
    app.wait_for("#prompt-menu .prompt-option.current:nth-child(2)")
        .await;

    // `/args`: the server's prompt; Enter opens its form.
    app.type_into("#composer-input", "/args").await;
    app.wait_for_text(
        "#prompt-menu .prompt-option[data-prompt=\"args-prompt\"]",
        "everything",
    )
    .await;
    app.press("#composer-input", "\u{E007}").await;
    app.wait_for("#prompt-form[data-prompt=\"args-prompt\"]")
        .await;
    app.click("#prompt-insert").await;
    app.wait_for_text("#prompt-problem", "needs city").await;
    app.type_into("#prompt-form input[data-argument=\"city\"]", "Lyon")
        .await;
    app.wait_gone("#prompt-problem").await;
    // The typed value painted before the picture: two frames after it is there.
    app.eval_async(
        "const done = arguments[0]; const box = document.querySelector('#prompt-form input[data-argument=\"city\"]'); \
         const wait = () => box.value === 'Lyon' ? requestAnimationFrame(() => requestAnimationFrame(() => done(true))) : setTimeout(wait, 50); wait();",
        Vec::new(),
    )
    .await;
    app.screenshot("mcp-prompt").await;
    app.click("#prompt-insert").await;
    composer_reads(&app, "What's weather in Lyon?").await;
    app.wait_gone("#prompt-form").await;

    // Sent: the long call's progress on its card.
    app.click("#send-button").await;
    let approval = format!(".approval-card[data-tool=\"{TOOL}\"]");
    app.wait_for_text(&approval, "Approval needed").await;
    app.click_until_gone(&format!("{approval} button.approve"), &approval)
        .await;
    let card = format!(".tool-card[data-tool=\"{TOOL}\"]");
    let said = app
        .wait_for_text(&format!("{card} .tool-progress"), " of 4")
        .await;
    assert!(said.starts_with('1') || said.starts_with('2'), "{said}");
    app.screenshot("mcp-progress").await;
    app.wait_for_text(&format!("{card}.ok"), "Long running operation completed")
        .await;
    app.wait_for_text(".message.ai .answer", "Sunny").await;
    assert_eq!(
        app.count(&format!("{card} .tool-progress")).await,
        0,
        "gone once done"
    );
    app.close().await;
    assert_eq!(settle(&mark, 10).await, 0, "no server left running");
}
