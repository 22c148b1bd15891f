//! A server that asks the user mid-call (MCP elicitation), in the real app: the fake
//! model calls server-everything's `trigger-elicitation-request`; once approved, the
//! server's form shows on the call's tool card; a value out of bounds is refused under
//! the form and the question keeps waiting; sent, the server's result has the answers,
//! and the card says what was sent.

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::mcp::{marker, settle};

use crate::day::fake_ollama;
use crate::tools::{paste_everything, thread_with_tool};

const TOOL: &str = "everything__trigger-elicitation-request";
const PLAN: &str = r#"{"title": "Sign up", "intent": "Fill the server's form", "plan": ["Ask"], "toolCalls": [{"callId": "c1", "toolName": "everything__trigger-elicitation-request", "arguments": {}}]}"#;

#[tokio::test(flavor = "current_thread")]
async fn a_servers_question_is_answered_on_its_tool_card() {
    let mark = marker();
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "Thanks, you are signed up.", 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click("#tools-button").await;
    paste_everything(&app, &mark).await;
    thread_with_tool(&app, &ollama.url(), TOOL).await;

    app.type_into("#composer-input", "Sign me up").await;
    app.click("#send-button").await;
    let approval = format!(".approval-card[data-tool=\"{TOOL}\"]");
    app.wait_for_text(&approval, "Approval needed").await;
    app.click(&format!("{approval} button.approve")).await;

    // The server's form on the call's card, the call waiting.
    let card = format!(".tool-card[data-tool=\"{TOOL}\"]");
    let form = format!("{card} .question.waiting");
    let text = app
        .wait_for_text(&form, "Please provide inputs for the following fields")
        .await;
    assert!(text.contains("Your full, legal name"), "{text}");
    app.wait_for_text(&format!("{card} .tool-status"), "waiting for your answer")
        .await;
    app.type_into(
        &format!("{form} input[data-field=\"name\"]"),
        "Ada Lovelace",
    )
    .await;
    app.type_into(&format!("{form} input[data-field=\"integer\"]"), "500")
        .await;
    app.run_script("document.querySelector('.question.waiting').scrollIntoView({block: 'start'});")
        .await;
    app.screenshot("mcp-question").await;
    app.click(&format!("{form} .question-send")).await;
    app.wait_for_text(&format!("{form} .question-problem"), "between 1 and 100")
        .await;
    app.type_into(&format!("{form} input[data-field=\"integer\"]"), "7")
        .await;
    app.click(&format!("{form} .question-send")).await;

    // The server got the answers; the card says what was sent.
    let done = app
        .wait_for_text(&format!("{card}.ok"), "Name: Ada Lovelace")
        .await;
    assert!(done.contains("Favorite Integer: 7"), "{done}");
    app.wait_for_text(&format!("{card} .question-outcome"), "You answered")
        .await;
    app.wait_for_text(".message.ai .answer", "signed up").await;
    app.close().await;
    assert_eq!(settle(&mark, 10).await, 0, "no server left running");
}

/// Closed (killed) while a server's question waits, the app ends the server it left
/// running when it opens again and shows the same question, the run waiting on it; answered there, the call runs again, its server's same
/// question gets the answer without asking, and the run ends with the answer.
#[tokio::test(flavor = "current_thread")]
async fn a_question_waiting_when_the_app_closed_is_answered_after_a_restart() {
    let mark = marker();
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "Thanks, you are signed up.", 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click("#tools-button").await;
    paste_everything(&app, &mark).await;
    thread_with_tool(&app, &ollama.url(), TOOL).await;
    app.type_into("#composer-input", "Sign me up").await;
    app.click("#send-button").await;
    let approval = format!(".approval-card[data-tool=\"{TOOL}\"]");
    app.wait_for_text(&approval, "Approval needed").await;
    app.click(&format!("{approval} button.approve")).await;
    let card = format!(".tool-card[data-tool=\"{TOOL}\"]");
    let form = format!("{card} .question.waiting");
    app.wait_for_text(&form, "Please provide inputs for the following fields")
        .await;

    // Closed under the WebDriver, the app is killed: the server, still waiting on its
    // question, outlives it — until the app opens again and ends what it left.
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click(".thread-item .thread-title").await;
    app.wait_for_text(&form, "Please provide inputs for the following fields")
        .await;
    app.wait_for_text(&format!("{card} .tool-status"), "waiting for your answer")
        .await;
    app.run_script("document.querySelector('.question.waiting').scrollIntoView({block: 'start'});")
        .await;
    app.screenshot("mcp-question-after-restart").await;
    app.type_into(
        &format!("{form} input[data-field=\"name\"]"),
        "Ada Lovelace",
    )
    .await;
    app.type_into(&format!("{form} input[data-field=\"integer\"]"), "7")
        .await;
    app.click(&format!("{form} .question-send")).await;
    let done = app
        .wait_for_text(&format!("{card}.ok"), "Name: Ada Lovelace")
        .await;
    assert!(done.contains("Favorite Integer: 7"), "{done}");
    app.wait_for_text(".message.ai .answer", "signed up").await;
    app.close().await;
    // Neither the server the first app left (it would wait a minute more on its
    // question) nor the second app's.
    assert_eq!(settle(&mark, 10).await, 0, "no server left running");
}
