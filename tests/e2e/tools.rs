//! A user's day with MCP tools: add `mcp-server-time` (PyPI) on the Tools page and see
//! its tools, paste `mcpServers` JSON for server-everything (npm), enable its image tool
//! in a thread, let the fake model plan two steps with a call to it; the call waits for
//! approval, through a restart, and once approved the tool card shows the server's real
//! result (the image too, attached to the next question in one click), both steps end done, and the Trace panel has its span;
//! restart and find the servers and the thread's settings again; quit and leave no
//! server running.

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::mcp::{MARKER_VAR, everything_script, marker, servers_dir, settle};

use crate::day::fake_ollama;

/// Two steps: fetch the image (its call already planned), then say what it is (done by
/// the answer).
const PLAN: &str = r#"{"title": "Show the logo", "intent": "Show the MCP logo", "steps": [{"id": "1", "description": "Fetch the image from the everything server", "tools": ["everything__get-tiny-image"]}, {"id": "2", "description": "Tell the user what it shows"}], "toolCalls": [{"callId": "c1", "toolName": "everything__get-tiny-image", "arguments": {}}]}"#;

/// Paste the `mcpServers` JSON for server-everything (marked `mark`) on the Tools page,
/// and wait until it is ready.
pub(crate) async fn paste_everything(app: &AppSession, mark: &str) {
    app.click("#paste-mcp-json").await;
    let json = serde_json::json!({ "mcpServers": { "Everything": {
        "command": "node",
        "args": [everything_script(), "stdio"],
        "env": { MARKER_VAR: mark },
    }}});
    app.type_into("#mcp-json", &json.to_string()).await;
    app.click("#import-mcp").await;
    app.wait_for_text("#mcp-import-report", "Added everything.")
        .await;
    app.wait_for(".server-item[data-server=\"everything\"][data-state=\"ok\"]")
        .await;
}

/// A new thread on the fake Ollama at `url` that may use `tool` (an MCP server's),
/// settings closed again.
pub(crate) async fn thread_with_tool(app: &AppSession, url: &str, tool: &str) {
    app.click("#new-thread").await;
    app.click("#settings-button").await;
    app.type_into("#base-url-input", url).await;
    app.select("#provider-select", "ollama").await;
    app.type_into("#model-input", art_testkit::fake::scripts::MODEL)
        .await;
    let server = art_types::mcp::server_of(tool).expect("an MCP tool's name");
    app.wait_for(&format!(".tool-group[data-group=\"{server}\"]"))
        .await;
    let checkbox = format!("#tool-list input[data-tool=\"{tool}\"]");
    app.click(&checkbox).await;
    app.wait_for(&format!("{checkbox}:checked")).await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;
}

#[tokio::test(flavor = "current_thread")]
async fn add_servers_call_a_tool_see_its_image_restart_and_quit_cleanly() {
    let mark = marker();
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "Here is the MCP logo.", 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;

    // A stdio server through the form.
    app.click("#tools-button").await;
    app.click("#new-mcp-server").await;
    app.type_into("#mcp-name", "time").await;
    let time = servers_dir().join("venv/bin/mcp-server-time");
    app.type_into("#command", &time.display().to_string()).await;
    app.type_into("#env", &format!("{MARKER_VAR}={mark}")).await;
    app.click("#save-mcp-server").await;
    app.wait_for_text("#mcp-state-line", "Ready · 2 tools")
        .await;
    let listed = app
        .wait_for_text("#mcp-tool-list", "time__get_current_time")
        .await;
    assert!(listed.contains("Get current time"), "{listed}");

    // Another by pasting the JSON other apps use.
    paste_everything(&app, &mark).await;
    app.click(".server-item[data-server=\"everything\"]").await;
    app.wait_for("#mcp-tool-list [data-tool=\"everything__get-tiny-image\"]")
        .await;
    app.screenshot("tools-page").await;

    // A thread that may use the image tool.
    thread_with_tool(&app, &ollama.url(), "everything__get-tiny-image").await;

    app.type_into("#composer-input", "Show me the MCP logo")
        .await;
    app.click("#send-button").await;
    // An MCP tool asks first: the run waits with the call's arguments on its card.
    let asking = ".approval-card[data-tool=\"everything__get-tiny-image\"]";
    app.wait_for_text(asking, "Approval needed").await;
    app.wait_for(".plan-steps li[data-status=\"in progress\"]")
        .await;
    app.screenshot("approval-card").await;

    // Closed while it waits, the app shows the same waiting card after a restart.
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click(".thread-item .thread-title").await;
    app.wait_for_text(asking, "Approval needed").await;
    app.click(&format!("{asking} button.approve")).await;
    let card = app
        .wait_for_text(
            ".tool-card.ok[data-tool=\"everything__get-tiny-image\"]",
            "[image: image/png",
        )
        .await;
    assert!(card.contains("everything__get-tiny-image"), "{card}");
    app.wait_for_text(".tool-card .server-badge", "everything")
        .await;
    app.wait_for(".tool-card img.tool-image[src^=\"data:image/png;base64,\"]")
        .await;
    app.wait_for_text(".message.ai .answer", "Here is the MCP logo.")
        .await;
    app.wait_for_text(".tool-card .tool-approval", "Approved by you")
        .await;
    // Both steps are done: the first by its call, the second by the answer.
    app.wait_for(".plan-steps li:nth-child(2)[data-status=\"done\"]")
        .await;
    app.wait_for(".plan-steps li:nth-child(1)[data-status=\"done\"]")
        .await;
    app.screenshot("tool-card-mcp").await;
    // The image the tool returned goes onto the next question in one click.
    app.click(".tool-card .attach-returned").await;
    app.wait_for("#attachment-tray .attachment-chip.image[title^=\"everything__get-tiny-image-1.png (image\"]")
        .await;
    app.click("#attachment-tray .chip-remove").await;
    app.click("#trace-button").await;
    app.wait_for(".trace-label[title=\"everything__get-tiny-image\"]")
        .await;
    app.click("#trace-button").await;

    // Restart: the servers and the thread's choice are still there.
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click("#tools-button").await;
    app.wait_for(".server-item[data-server=\"time\"][data-state=\"ok\"]")
        .await;
    app.wait_for(".server-item[data-server=\"everything\"][data-state=\"ok\"]")
        .await;
    app.click(".thread-item .thread-title").await;
    app.click("#settings-button").await;
    app.wait_for("#tool-list input[data-tool=\"everything__get-tiny-image\"]:checked")
        .await;
    app.close().await;
    assert_eq!(settle(&mark, 10).await, 0, "MCP servers outlived the app");
}

/// The app's environment holds a key (`cargo xtask test` puts one there, as a user's
/// shell holds `OPENAI_API_KEY`); a stdio server the app starts gets its own configured
/// variables and a small safe set, never that key — server-everything's `get-env`
/// shows all it was given, in the tool card.
#[tokio::test(flavor = "current_thread")]
async fn a_server_the_app_starts_never_sees_the_apps_keys() {
    use art_testkit::e2e::{SENTINEL_KEY_VAR, app_environments};
    let sentinel = std::env::var(SENTINEL_KEY_VAR).expect("set by `cargo xtask test`");
    let mark = marker();
    let plan = r#"{"title": "Environment", "intent": "See the server's environment", "steps": [{"id": "1", "description": "Ask the server", "tools": ["everything__get-env"]}], "toolCalls": [{"callId": "c1", "toolName": "everything__get-env", "arguments": {}}]}"#;
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, plan, 24),
        text_reply(Protocol::Ollama, "That is its environment.", 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    let carried = format!("{SENTINEL_KEY_VAR}={sentinel}");
    assert!(
        app_environments().iter().any(|env| env.contains(&carried)),
        "the app under test does not carry the key, so this test would prove nothing"
    );

    app.click("#tools-button").await;
    paste_everything(&app, &mark).await;
    thread_with_tool(&app, &ollama.url(), "everything__get-env").await;
    app.type_into("#composer-input", "What environment does the server see?")
        .await;
    app.click("#send-button").await;
    let asking = ".approval-card[data-tool=\"everything__get-env\"]";
    app.wait_for_text(asking, "Approval needed").await;
    app.click(&format!("{asking} button.approve")).await;
    let card = app
        .wait_for_text(".tool-card.ok[data-tool=\"everything__get-env\"]", &mark)
        .await;
    assert!(card.contains("PATH"), "{card}");
    assert!(
        !card.contains(&sentinel),
        "the key reached the server: {card}"
    );
    assert!(!card.contains(SENTINEL_KEY_VAR), "{card}");
    app.close().await;
    assert_eq!(settle(&mark, 10).await, 0, "MCP servers outlived the app");
}
