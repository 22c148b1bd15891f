//! "Send traces to" in the app: set a collector with an API-key header, answer a
//! question while the collector is down (the status line says failing, with the spans
//! queued), quit, and start again with the collector up: the queue is sent, with the
//! header read back from the keychain, and the status line says so.

use std::time::Duration;

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::otlp::OtlpReceiver;

use crate::day::{ENTER, PLAN, configure, fake_ollama};

const KEY: &str = "sk-e2e-push-header-24680";

#[tokio::test(flavor = "current_thread")]
async fn traces_queued_while_the_collector_was_down_are_sent_after_a_restart() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "The sum of 19 and 23 is **42**.", 8),
    ])
    .await;
    // A port no collector listens on yet.
    let port = OtlpReceiver::start().await.port();
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;

    app.click("#send-traces-button").await;
    app.wait_for_text("#push-status", "Sending traces is off")
        .await;
    app.click("#push-enabled").await;
    // Saving with no address says so at its field, and saves nothing.
    app.click("#push-save").await;
    app.wait_for_text(
        ".field-problem[data-field=\"endpoint\"]",
        "collector's OTLP/HTTP address",
    )
    .await;
    app.type_into("#push-endpoint", &format!("http://127.0.0.1:{port}"))
        .await;
    app.click("#push-headers-edit").await;
    app.type_into(".header-row .header-name", "x-api-key").await;
    app.type_into(".header-row .header-value", KEY).await;
    app.click("#push-save").await;
    app.wait_for("#push-saved").await;
    app.wait_for_text("#push-status", "Sent 0 spans").await;

    app.click("#new-thread").await;
    configure(&app, &ollama.url()).await;
    app.click("#settings-button").await;
    app.type_into("#composer-input", &format!("What is 19 + 23?{ENTER}"))
        .await;
    app.wait_for_text(".message.ai .answer", "is 42").await;

    app.click("#send-traces-button").await;
    let failing = app
        .wait_for_text("#push-status.failing", "spans queued")
        .await;
    assert!(
        failing.contains("cannot reach") && failing.contains(&port.to_string()),
        "{failing}"
    );
    app.screenshot("send-traces-failing").await;

    // Quit with the queue; the collector comes up; the app starts again and sends it.
    let data = app.close_keeping_data().await;
    let collector = OtlpReceiver::start_at(port).await.unwrap();
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    let spans = collector.wait_for(5, Duration::from_secs(60)).await;
    assert!(spans >= 5, "the run's spans arrived: {spans}");
    let request = &collector.received()[0];
    assert_eq!(
        request.header("x-api-key"),
        Some(KEY),
        "the header from the keychain"
    );
    let names: Vec<String> = collector.spans().into_iter().map(|s| s.name).collect();
    assert!(
        names.iter().any(|n| n == "invoke_agent PESAgent"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "execute_tool calculator"),
        "{names:?}"
    );
    app.click("#send-traces-button").await;
    app.wait_for_text("#push-status.ok", &format!("Sent {spans} spans"))
        .await;
    // The key is kept, never shown.
    let kept = app.wait_for_text("#push-headers-kept", "x-api-key").await;
    assert!(!kept.contains(KEY), "{kept}");
    app.screenshot("send-traces").await;
    app.close().await;
}
