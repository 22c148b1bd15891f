//! A key set through the UI goes to the keychain and to its provider, and nowhere else,
//! through a whole session: a run with a tool call, a run the provider refuses while
//! repeating the key back, and exports in every format. Afterwards the key is in no
//! file of the data directory (database, WAL, logs at debug level), no export, no event
//! the page received, and nothing the page shows.

use std::path::{Path, PathBuf};
use std::time::Duration;

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};
use art_testkit::fake::{FakeServer, Reply};

use crate::day::{ENTER, PLAN};

const KEY: &str = "sk-e2e-leak-SENTINEL-7d2a91c4b5e8";

/// Keep every event the backend sends the page.
const CAPTURE: &str = r#"
    window.__captured = [];
    for (const name of ["art://ready", "art://stream", "art://observation", "art://message",
                        "art://threads", "art://export-progress", "art://run-finished"]) {
        window.__TAURI__.event.listen(name, (e) => window.__captured.push(name + " " + JSON.stringify(e.payload)));
    }
"#;

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn holds_key(bytes: &[u8]) -> bool {
    bytes.windows(8).any(|w| w == b"SENTINEL")
}

/// Wait until `dir` holds `n` files.
async fn wait_for_files(dir: &Path, n: usize) {
    for _ in 0..200 {
        if files(dir).len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{} files in {}, expected {n}",
        files(dir).len(),
        dir.display()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_key_stays_in_the_keychain_through_runs_errors_and_exports() {
    let refusal = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key in your account.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let server = FakeServer::start_at(
        0,
        Some(router(Protocol::OpenAi)),
        vec![
            text_reply(Protocol::OpenAi, PLAN, 24),
            text_reply(Protocol::OpenAi, "The sum of 19 and 23 is 42.", 8),
            Reply::error(401, &refusal),
        ],
    )
    .await
    .unwrap();
    let exports = tempfile::tempdir().unwrap();
    let app = AppSession::launch_exporting(exports.path()).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.run_script(CAPTURE).await;

    // The key, through the providers form.
    app.click("#providers-button").await;
    let row = "[data-provider=\"openai\"]";
    app.type_into(&format!("{row} .key-input"), KEY).await;
    app.click(&format!("{row} .save-key")).await;
    app.wait_for_text(&format!("{row} .key-state"), "key set")
        .await;

    // A thread on "OpenAI" (the fake server) with the calculator.
    app.click("#new-thread").await;
    app.click("#settings-button").await;
    app.type_into("#base-url-input", &format!("{}/v1", server.url()))
        .await;
    app.select("#provider-select", "openai").await;
    app.type_into("#model-input", MODEL).await;
    app.click("#tool-list input[data-tool=\"calculator\"]")
        .await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;

    // A run with a tool call, then one the provider refuses, repeating the key.
    app.type_into("#composer-input", &format!("What is 19 + 23?{ENTER}"))
        .await;
    app.wait_for_text(".message.ai .answer", "is 42").await;
    app.type_into("#composer-input", &format!("And once more?{ENTER}"))
        .await;
    let shown = app
        .wait_for_text("body", "Incorrect API key provided")
        .await;
    assert!(
        shown.contains("[REDACTED]"),
        "the refusal is shown, without the key"
    );

    // Exports in every format, content included.
    app.click("#trace-button").await;
    app.wait_for("#export-button").await;
    app.click("#export-content").await;
    for (n, format) in ["jsonl", "otlp", "markdown"].iter().enumerate() {
        app.select("#export-format", format).await;
        app.select("#export-scope", "thread").await;
        app.click("#export-button").await;
        wait_for_files(exports.path(), n + 1).await;
    }
    let events = app
        .eval_async(
            "const [done] = arguments; done(window.__captured.join('\\n'));",
            Vec::new(),
        )
        .await;
    let page = app.page_text().await;
    let data = app.close_keeping_data().await;

    // The key was used: the provider got it.
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {KEY}"))),
        "the provider got the key"
    );
    // And it is nowhere else.
    let events = events.as_str().unwrap_or_default();
    assert!(events.contains("art://stream"), "events were captured");
    assert!(!holds_key(events.as_bytes()), "the key is in an event");
    assert!(!holds_key(page.as_bytes()), "the page shows the key");
    let written: Vec<PathBuf> = files(data.path())
        .into_iter()
        .chain(files(exports.path()))
        .collect();
    assert!(
        written.iter().any(|p| p.to_string_lossy().contains("log")),
        "logs were written: {written:?}"
    );
    assert_eq!(files(exports.path()).len(), 3);
    for file in written {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!holds_key(&bytes), "the key is in {}", file.display());
    }
    // The keychain has it.
    let entry = keyring::Entry::new("org.artworkbench.desktop", "openai").unwrap();
    assert_eq!(entry.get_password().unwrap(), KEY);
    entry.delete_credential().unwrap();
}
