//! Signing in to a remote MCP server from the Tools page, against the in-tree
//! authorization server (`art_testkit::oauth`): the server added by its URL asks to
//! sign in; "Sign in" opens the browser (the test session's `BROWSER` follows the
//! authorization server's redirects back to the app, as a browser does once the user
//! approves); the server is ready with the account shown; a run calls its tool; after a
//! restart it is still signed in; "Sign out" asks to sign in again. No token reaches
//! the app's files.

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::oauth::OAuthServers;

use crate::day::fake_ollama;
use crate::tools::thread_with_tool;

/// One step calling the protected server's tool, then the answer.
const PLAN: &str = r#"{"title": "Who am I", "intent": "Ask the remote server who we are", "steps": [{"id": "1", "description": "Ask the remote server", "tools": ["remote__whoami"]}], "toolCalls": [{"callId": "c1", "toolName": "remote__whoami", "arguments": {}}]}"#;

#[tokio::test(flavor = "current_thread")]
async fn sign_in_to_a_remote_server_use_it_restart_still_signed_in_then_sign_out() {
    let servers = OAuthServers::start().await;
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "The server knows you as tester.", 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;

    app.click("#tools-button").await;
    app.click("#new-mcp-server").await;
    app.type_into("#mcp-name", "remote").await;
    app.select("#mcp-transport", "http").await;
    app.type_into("#url", &servers.url()).await;
    app.select("#mcp-policy", "auto").await;
    app.click("#save-mcp-server").await;
    app.wait_for_text("#mcp-state-line", "Sign-in needed").await;
    app.wait_for_text("#mcp-sign-in-reason", "asks to sign in")
        .await;
    app.wait_for(".server-item[data-server=\"remote\"][data-state=\"warn\"]")
        .await;

    app.click("#mcp-sign-in").await;
    app.wait_for_text("#mcp-state-line", "Ready · 1 tool").await;
    let account = app.wait_for_text("#mcp-account", "Signed in at").await;
    assert!(account.contains(&servers.issuer()), "{account}");
    assert!(account.contains("scopes tools"), "{account}");
    app.wait_for("#mcp-tool-list [data-tool=\"remote__whoami\"]")
        .await;
    app.wait_for("#mcp-sign-out").await;
    app.run_script(
        "document.getElementById('mcp-sign-in-panel').scrollIntoView({block: 'center'})",
    )
    .await;
    app.screenshot("mcp-signed-in").await;

    // A run uses the server's tool with the app's sign-in.
    thread_with_tool(&app, &ollama.url(), "remote__whoami").await;
    app.type_into("#composer-input", "Who does the remote server think I am?")
        .await;
    app.click("#send-button").await;
    app.wait_for_text(
        ".tool-card.ok[data-tool=\"remote__whoami\"]",
        "signed in as tester",
    )
    .await;
    app.wait_for_text(".message.ai .answer", "knows you as tester")
        .await;

    // Restarted: still signed in, nothing to do.
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click("#tools-button").await;
    app.click(".server-item[data-server=\"remote\"]").await;
    app.wait_for_text("#mcp-state-line", "Ready · 1 tool").await;
    app.wait_for_text("#mcp-account", "Signed in at").await;

    // No token in the app's files (database, logs).
    for entry in walk(app.data_dir()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for token in servers.issued() {
            assert!(!text.contains(&token), "a token is in {}", entry.display());
        }
    }

    // Signed out: the server asks again.
    app.click("#mcp-sign-out").await;
    app.wait_for_text("#mcp-state-line", "Sign-in needed").await;
    app.wait_for("#mcp-sign-in").await;
    app.close().await;
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
