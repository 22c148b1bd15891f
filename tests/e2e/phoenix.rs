//! Traces where teams look: the app pushes a run with an MCP tool call it asked
//! approval for to a real Arize Phoenix (PyPI, on loopback), which is read back through
//! its REST API — span kinds, token counts, the agent's input and output, the tool's
//! arguments and result — and shown in Phoenix's own page (screenshot).

use std::time::Duration;

use art_testkit::e2e::AppSession;
use art_testkit::e2e::browser::screenshot_page;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::mcp::{marker, settle};
use art_testkit::phoenix::Phoenix;
use serde_json::Value;

use crate::day::fake_ollama;
use crate::tools::{paste_everything, thread_with_tool};

const TOOL: &str = "everything__echo";
const PLAN: &str = r#"{"title": "Echo", "intent": "Have the server echo a message", "plan": ["Echo it"], "toolCalls": [{"callId": "c1", "toolName": "everything__echo", "arguments": {"message": "hello phoenix"}}]}"#;
const QUESTION: &str = "Ask the server to echo hello phoenix";
const ANSWER: &str = "The server echoed: hello phoenix.";

/// Attribute `key` of a span as Phoenix gives it back.
fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_pushed_to_phoenix_reads_back_whole() {
    let mark = marker();
    let phoenix = Phoenix::start().await;
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, ANSWER, 8),
    ])
    .await;
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app.click("#tools-button").await;
    paste_everything(&app, &mark).await;

    app.click("#send-traces-button").await;
    app.click("#push-enabled").await;
    app.type_into("#push-endpoint", &phoenix.url()).await;
    app.click("#push-content").await;
    app.click("#push-save").await;
    app.wait_for("#push-saved").await;

    thread_with_tool(&app, &ollama.url(), TOOL).await;
    app.type_into("#composer-input", QUESTION).await;
    app.click("#send-button").await;
    let approval = format!(".approval-card[data-tool=\"{TOOL}\"]");
    app.wait_for_text(&approval, "Approval needed").await;
    app.click(&format!("{approval} button.approve")).await;
    app.wait_for_text(".message.ai .answer", "hello phoenix")
        .await;

    let spans = phoenix.spans(7, Duration::from_secs(60)).await;
    let kinds: std::collections::BTreeSet<&str> = spans
        .iter()
        .filter_map(|s| s["span_kind"].as_str())
        .collect();
    for kind in ["AGENT", "CHAIN", "LLM", "TOOL"] {
        assert!(kinds.contains(kind), "{kind} in {kinds:?}: {spans:#?}");
    }
    let agent = spans.iter().find(|s| s["span_kind"] == "AGENT").unwrap();
    assert_eq!(attr(agent, "input.value"), QUESTION, "{agent:#}");
    assert_eq!(attr(agent, "output.value"), ANSWER, "{agent:#}");
    for llm in spans.iter().filter(|s| s["span_kind"] == "LLM") {
        let prompt = attr(llm, "llm.token_count.prompt").as_u64().unwrap_or(0);
        let completion = attr(llm, "llm.token_count.completion")
            .as_u64()
            .unwrap_or(0);
        assert!(prompt > 0 && completion > 0, "{llm:#}");
        assert!(
            attr(llm, "llm.input_messages.0.message.role").is_string(),
            "{llm:#}"
        );
        // Every model call says what it answered: the plan, the step's call, the answer.
        assert!(
            attr(llm, "llm.output_messages.0.message.role").is_string(),
            "{llm:#}"
        );
    }
    // A later call's tool message carries the tool's result, not only its role.
    let tool_messages: Vec<&Value> = spans
        .iter()
        .filter(|s| s["span_kind"] == "LLM")
        .flat_map(|llm| {
            (0..32)
                .filter(move |i| {
                    attr(llm, &format!("llm.input_messages.{i}.message.role")) == "tool"
                })
                .map(move |i| attr(llm, &format!("llm.input_messages.{i}.message.content")))
        })
        .collect();
    assert!(!tool_messages.is_empty(), "{spans:#?}");
    for content in &tool_messages {
        assert!(
            content
                .as_str()
                .is_some_and(|c| c.contains("Echo: hello phoenix")),
            "{tool_messages:?}"
        );
    }
    let tool = spans.iter().find(|s| s["span_kind"] == "TOOL").unwrap();
    println!("{tool:#}");
    let arguments = attr(tool, "gen_ai.tool.call.arguments")
        .as_str()
        .unwrap_or_default();
    assert!(arguments.contains("hello phoenix"), "{tool:#}");
    let result = attr(tool, "gen_ai.tool.call.result")
        .as_str()
        .unwrap_or_default();
    assert!(result.contains("Echo: hello phoenix"), "{tool:#}");
    // The tool's input and output as Phoenix shows them.
    let input = attr(tool, "input.value").as_str().unwrap_or_default();
    assert!(input.contains("hello phoenix"), "{tool:#}");
    let output = attr(tool, "output.value").as_str().unwrap_or_default();
    assert!(output.contains("Echo: hello phoenix"), "{tool:#}");
    // The approval, as an event on the step that asked for it.
    let approved = spans
        .iter()
        .flat_map(|s| s["events"].as_array().cloned().unwrap_or_default())
        .any(|e| e["name"] == "APPROVAL");
    assert!(approved, "{spans:#?}");

    // As Phoenix shows it, the tool's span open.
    let project = phoenix.project_id("default").await;
    let trace = tool["context"]["trace_id"].as_str().unwrap();
    let url = format!(
        "{}/projects/{project}/traces/{trace}?selectedSpanNodeId={}",
        phoenix.url(),
        tool["id"].as_str().unwrap()
    );
    screenshot_page(
        &url,
        "hello phoenix",
        "phoenix-trace",
        Duration::from_secs(60),
    )
    .await;
    app.close().await;
    assert_eq!(settle(&mark, 10).await, 0, "no server left running");
}
