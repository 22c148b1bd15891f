//! The Trace panel: a run's spans as a timeline (plan, model calls, the tool), the
//! observation behind a bar, type filters, and Export to a file whose contents are
//! checked (OTLP with content, Markdown with the tool call).

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{MODEL, Protocol, text_reply};

use crate::day::{ENTER, PLAN, configure, fake_ollama};

#[tokio::test(flavor = "current_thread")]
async fn the_trace_panel_shows_the_run_and_exports_it() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "The sum of 19 and 23 is **42**.", 8),
    ])
    .await;
    let exports = tempfile::tempdir().unwrap();
    let app = AppSession::launch_exporting(exports.path()).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click("#new-thread").await;
    configure(&app, &ollama.url()).await;
    app.click("#settings-button").await;
    app.type_into("#composer-input", &format!("What is 19 + 23?{ENTER}"))
        .await;
    app.wait_for_text(".message.ai .answer", "is 42").await;

    app.click("#trace-button").await;
    app.wait_for_text("#trace-panel .trace-run-head", "1 tool call")
        .await;
    // One bar per span: the run, planning and its model call, the tool, the answer and
    // its model call.
    for label in ["Run", "Plan", "calculator", "Answer"] {
        app.wait_for(&format!(".trace-label[title=\"{label}\"]"))
            .await;
    }
    assert_eq!(
        app.count(&format!(".trace-label[title=\"chat {MODEL}\"]"))
            .await,
        2
    );
    assert_eq!(app.count(".trace-bar.bar-tool").await, 1);
    // The tool's bar shows its observation: arguments and result.
    app.click(".trace-row:has(.trace-label[title=\"calculator\"])")
        .await;
    let detail = app.wait_for_text("#trace-detail", "19 + 23").await;
    assert!(
        detail.contains("TOOL_EXECUTION") && detail.contains("42"),
        "{detail}"
    );
    // Filters hide a type.
    app.click("#trace-panel input[data-type=\"TOOL_EXECUTION\"]")
        .await;
    app.wait_gone(".trace-label[title=\"calculator\"]").await;
    app.click("#trace-panel input[data-type=\"TOOL_EXECUTION\"]")
        .await;
    app.wait_for(".trace-label[title=\"calculator\"]").await;
    app.screenshot("trace-panel").await;

    // OTLP with content.
    app.select("#export-format", "otlp").await;
    app.select("#export-scope", "thread").await;
    app.click("#export-content").await;
    app.click("#export-button").await;
    let done = app.wait_for_text("#export-done", "Saved").await;
    let file = std::fs::read_dir(exports.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".otlp.jsonl"))
        .unwrap_or_else(|| panic!("no OTLP file; the panel said {done:?}"));
    assert!(done.contains(&file.display().to_string()), "{done}");
    let otlp = std::fs::read_to_string(&file).unwrap();
    assert_eq!(otlp.lines().count(), 1, "one run");
    let line: serde_json::Value = serde_json::from_str(&otlp).unwrap();
    let spans = &line["resourceSpans"][0]["scopeSpans"][0]["spans"];
    let names: Vec<&str> = spans
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"execute_tool calculator"), "{names:?}");
    assert!(names.contains(&"invoke_agent PESAgent"), "{names:?}");
    assert!(
        otlp.contains("gen_ai.tool.call.arguments"),
        "content was asked for"
    );

    // Markdown.
    app.select("#export-format", "markdown").await;
    app.click("#export-button").await;
    app.wait_for_text("#export-done", ".md").await;
    let md = std::fs::read_dir(exports.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "md"))
        .expect("a Markdown file");
    let transcript = std::fs::read_to_string(md).unwrap();
    assert!(
        transcript.contains("**Tool `calculator`** (ok"),
        "{transcript}"
    );
    assert!(transcript.contains("What is 19 + 23?"), "{transcript}");
    app.close().await;
}
