//! Trace export and import on real SQLite files: OTLP decoded by an independent
//! implementation (`opentelemetry-proto`), the native JSONL round trip, the Markdown
//! golden transcript, secrets redacted in every format, and imports that refuse bad
//! files without writing anything.

use art_testkit::framework::scripted;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::export::{self, Format, Options, Redactor, Scope};
use art::storage::sqlite::SqliteStorage;
use art_types::{
    AgentProps, ConversationMessage, MessageRole, MessageStatus, Observation, ObservationType,
    Phase, SpanInfo, StreamEventKind, ThreadSummary, TokenType,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::{Span, TracesData};
use scripted::{Script, ScriptedSource, plan_json};
use serde_json::{Value, json};

const SENTINEL: &str = "sk-sentinel-7d3f9a1c2b4e6f80";

fn instance(dir: &Path, source: Arc<ScriptedSource>) -> ArtInstance {
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, source).build().unwrap()
}

fn empty_instance(dir: &Path) -> ArtInstance {
    instance(dir, Arc::new(ScriptedSource::new(Vec::new())))
}

/// A real PES run: thinking while planning, two calculator calls (the second fails),
/// a synthesised answer. Returns the instance, thread and trace.
pub(crate) async fn known_run(dir: &Path) -> (ArtInstance, String, String) {
    let plan = plan_json(
        "Two sums",
        &[
            ("c1", "calculator", json!({ "expression": "6*7" })),
            (
                "c2",
                "calculator",
                json!({ "expression": "import(\"fs\")" }),
            ),
        ],
    );
    let planning = Script::events(vec![
        StreamEventKind::Token {
            text: "Let me use the calculator.".into(),
            token_type: TokenType::AgentThoughtLlmThinking,
        },
        StreamEventKind::Token {
            text: plan,
            token_type: TokenType::AgentThoughtLlmResponse,
        },
        StreamEventKind::End,
    ]);
    // The second call fails: the step gets a call of its own to try again, and gives up.
    let source = Arc::new(ScriptedSource::new(vec![
        planning,
        Script::text("6*7 is 42; the other sum cannot be computed."),
        Script::text("It is 42."),
    ]));
    let art = instance(dir, source);
    let thread = art
        .conversation
        .create_thread(Some("Sums"))
        .await
        .unwrap()
        .thread_id;
    let config = scripted::thread_config("test-model", &["calculator"]);
    art.state.set_thread_config(&thread, &config).await.unwrap();
    // Watched from its start, as the app watches a run it will push.
    let trace = art::clock::new_id();
    art.observations.tap().watch(&trace);
    let props = AgentProps {
        query: "What is 6*7?".into(),
        thread_id: thread.clone(),
        trace_id: Some(trace.clone()),
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.trace_id, trace);
    (art, thread, trace)
}

pub(crate) async fn export_to_string(
    art: &ArtInstance,
    scope: &Scope,
    format: Format,
    options: Options,
    redactor: &Redactor,
) -> String {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    export::export(art, scope, format, options, redactor, &mut out, &mut |p| {
        seen.push(p)
    })
    .await
    .unwrap();
    let last = seen.last().copied().unwrap();
    assert_eq!(last.done, last.total, "progress ends at the total");
    // Text formats whole; protobuf's text fields stay readable (its strings are UTF-8
    // as they are), which is what the redaction checks look for.
    match format {
        Format::OtlpProto => String::from_utf8_lossy(&out).into_owned(),
        _ => String::from_utf8(out).unwrap(),
    }
}

/// Span `span`'s attribute `key`.
pub(crate) fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// Span `span`'s text attribute `key`.
pub(crate) fn attr_str<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    match attr(span, key) {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_is_a_span_tree_an_independent_decoder_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let redactor = Redactor::new(Vec::new());
    let scope = Scope::Trace(trace.clone());
    let text = export_to_string(&art, &scope, Format::Otlp, Options::default(), &redactor).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one TracesData per run");
    let data: TracesData = serde_json::from_str(lines[0]).expect("valid OTLP JSON");
    let spans: Vec<&Span> = data
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .collect();
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), *s)).collect();
    let trace_ids: std::collections::HashSet<&[u8]> =
        spans.iter().map(|s| s.trace_id.as_slice()).collect();
    assert_eq!(trace_ids.len(), 1);
    assert_eq!(spans[0].trace_id.len(), 16);
    let parent_name = |s: &Span| {
        by_id
            .get(s.parent_span_id.as_slice())
            .map(|p| p.name.clone())
    };
    let named =
        |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).copied().collect() };

    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .copied()
        .collect();
    assert_eq!(roots.len(), 1);
    let root = roots[0];
    assert_eq!(root.name, "invoke_agent PESAgent");
    assert_eq!(
        attr_str(root, "gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(
        attr_str(root, "gen_ai.conversation.id"),
        Some(thread.as_str())
    );
    assert_eq!(attr_str(root, "openinference.span.kind"), Some("AGENT"));
    assert_eq!(attr_str(root, "gen_ai.request.model"), Some("test-model"));
    assert!(root.end_time_unix_nano >= root.start_time_unix_nano);
    for span in &spans {
        if !span.parent_span_id.is_empty() {
            assert!(
                by_id.contains_key(span.parent_span_id.as_slice()),
                "{} has a parent",
                span.name
            );
        }
    }

    let plan = named("plan")[0];
    assert_eq!(parent_name(plan).as_deref(), Some(root.name.as_str()));
    assert_eq!(attr_str(plan, "openinference.span.kind"), Some("CHAIN"));
    let chats = named("chat test-model");
    assert_eq!(chats.len(), 3, "planning, the step's retry and synthesis");
    let chat_parents: Vec<Option<String>> = chats.iter().map(|c| parent_name(c)).collect();
    assert!(
        chat_parents.contains(&Some("plan".into())),
        "{chat_parents:?}"
    );
    assert!(
        chat_parents.contains(&Some("synthesize".into())),
        "{chat_parents:?}"
    );
    assert!(
        chat_parents.contains(&Some("execute".into())),
        "{chat_parents:?}"
    );
    // The step is a span of its own, under the root, holding its calls and tools.
    let steps = named("execute");
    assert_eq!(steps.len(), 1, "one step acted");
    let step = steps[0];
    assert_eq!(parent_name(step).as_deref(), Some(root.name.as_str()));
    for chat in &chats {
        assert_eq!(chat.kind, 3, "CLIENT");
        assert_eq!(attr_str(chat, "gen_ai.operation.name"), Some("chat"));
        assert_eq!(attr_str(chat, "gen_ai.provider.name"), Some("scripted"));
        assert_eq!(attr_str(chat, "openinference.span.kind"), Some("LLM"));
        assert!(
            attr_str(chat, "gen_ai.input.messages").is_none(),
            "content is opt-in"
        );
    }
    let synthesis_chat = chats
        .iter()
        .find(|c| attr_str(c, "art.stage") == Some("synthesis"))
        .unwrap();
    // The model that answered, as the provider named it, beside the one asked for.
    assert_eq!(
        attr_str(synthesis_chat, "gen_ai.response.model"),
        Some(art_testkit::framework::scripted::Script::ANSWERED_BY)
    );
    assert_eq!(
        attr(synthesis_chat, "gen_ai.usage.input_tokens"),
        Some(&Any::IntValue(10))
    );
    assert_eq!(
        attr(synthesis_chat, "gen_ai.usage.output_tokens"),
        Some(&Any::IntValue(5))
    );

    let tools = named("execute_tool calculator");
    assert_eq!(tools.len(), 2);
    for tool in &tools {
        assert_eq!(parent_name(tool).as_deref(), Some("execute"));
        assert_eq!(attr_str(tool, "gen_ai.tool.name"), Some("calculator"));
        assert_eq!(attr_str(tool, "openinference.span.kind"), Some("TOOL"));
        assert!(
            attr_str(tool, "gen_ai.tool.call.arguments").is_none(),
            "content is opt-in"
        );
    }
    let calls: Vec<&str> = tools
        .iter()
        .filter_map(|t| attr_str(t, "gen_ai.tool.call.id"))
        .collect();
    assert_eq!(calls.len(), 2);
    let failed: Vec<&&Span> = tools
        .iter()
        .filter(|t| t.status.as_ref().is_some_and(|s| s.code == 2))
        .collect();
    assert_eq!(failed.len(), 1, "the second call failed");
    assert!(attr_str(failed[0], "error.type").is_some());
    // …and as OpenTelemetry's standard `exception` event, which tracing tools list.
    let exception = failed[0]
        .events
        .iter()
        .find(|e| e.name == "exception")
        .expect("an exception event on the failed call");
    let has = |key: &str| exception.attributes.iter().any(|kv| kv.key == key);
    assert!(has("exception.type") && has("exception.message"));
    assert_eq!(exception.time_unix_nano, failed[0].end_time_unix_nano);

    // Points become events: the step's tool calls and status, the thinking.
    let step_events: Vec<&str> = step.events.iter().map(|e| e.name.as_str()).collect();
    assert!(step_events.contains(&"TOOL_CALL"), "{step_events:?}");
    assert!(step_events.contains(&"STEP"), "{step_events:?}");
    assert!(
        !root.events.is_empty()
            || spans
                .iter()
                .any(|s| s.events.iter().any(|e| e.name == "THOUGHTS"))
    );

    // Deterministic: the same data exports to the same bytes.
    let again = export_to_string(&art, &scope, Format::Otlp, Options::default(), &redactor).await;
    assert_eq!(again, text);

    // With content: the question, the answer and tool arguments are there.
    let with = Options {
        include_content: true,
        ..Options::default()
    };
    let full = export_to_string(&art, &scope, Format::Otlp, with, &redactor).await;
    let data: TracesData = serde_json::from_str(full.lines().next().unwrap()).unwrap();
    let spans: Vec<&Span> = data.resource_spans[0].scope_spans[0].spans.iter().collect();
    let root = spans.iter().find(|s| s.parent_span_id.is_empty()).unwrap();
    assert!(
        attr_str(root, "gen_ai.input.messages")
            .unwrap()
            .contains("What is 6*7?")
    );
    assert!(
        attr_str(root, "gen_ai.output.messages")
            .unwrap()
            .contains("It is 42.")
    );
    // The messages follow the GenAI conventions' schemas (vendored with their version),
    // every output message with why it ended; the plain question and answer are there
    // for tools that read OpenInference's input and output.
    let schema = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../tests/fixtures/semconv")
            .join(name);
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    };
    let (inputs, outputs) = (
        schema("gen-ai-input-messages.json"),
        schema("gen-ai-output-messages.json"),
    );
    let parsed = |span: &Span, key: &str| -> Value {
        serde_json::from_str(attr_str(span, key).unwrap()).unwrap()
    };
    let asked = parsed(root, "gen_ai.input.messages");
    assert!(inputs.is_valid(&asked), "{asked}");
    let answered = parsed(root, "gen_ai.output.messages");
    assert!(outputs.is_valid(&answered), "{answered}");
    assert_eq!(answered[0]["finish_reason"], "stop");
    assert_eq!(attr_str(root, "input.value"), Some("What is 6*7?"));
    assert_eq!(attr_str(root, "output.value"), Some("It is 42."));
    let synthesis = spans
        .iter()
        .find(|s| s.name.starts_with("chat ") && attr_str(s, "art.stage") == Some("synthesis"))
        .expect("the synthesis call");
    // Every model call says what it answered, in the conventions' form: the planning
    // call its plan, the step's call its words (not only the answer's call).
    for chat in spans.iter().filter(|s| s.name.starts_with("chat ")) {
        let out = parsed(chat, "gen_ai.output.messages");
        assert!(outputs.is_valid(&out), "{}: {out}", chat.name);
    }
    let planning = spans
        .iter()
        .find(|s| s.name.starts_with("chat ") && attr_str(s, "art.stage") == Some("planning"))
        .expect("the planning call");
    assert!(
        attr_str(planning, "gen_ai.output.messages")
            .unwrap()
            .contains("Two sums"),
        "the plan the model wrote"
    );
    // The phases say what they came to: the plan (an operation the conventions name),
    // the answer.
    let plan = spans
        .iter()
        .find(|s| s.name == "plan")
        .expect("the plan span");
    assert_eq!(attr_str(plan, "gen_ai.operation.name"), Some("plan"));
    assert!(attr_str(plan, "output.value").is_some_and(|v| v.contains("6*7")));
    let synthesize = spans.iter().find(|s| s.name == "synthesize").unwrap();
    assert_eq!(attr_str(synthesize, "output.value"), Some("It is 42."));
    let said = parsed(synthesis, "gen_ai.output.messages");
    assert!(outputs.is_valid(&said), "{said}");
    assert!(said[0]["finish_reason"].is_string(), "{said}");
    // Every model call says what it sent: the synthesis call the question, the tool
    // calls the model asked for and their results (one of them the failure).
    for chat in spans.iter().filter(|s| s.name.starts_with("chat ")) {
        let sent = parsed(chat, "gen_ai.input.messages");
        assert!(inputs.is_valid(&sent), "{sent}");
        assert!(sent.to_string().contains("What is 6*7?"), "{sent}");
    }
    let sent = parsed(synthesis, "gen_ai.input.messages");
    let parts: Vec<&Value> = sent
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .collect();
    let calls = parts.iter().filter(|p| p["type"] == "tool_call").count();
    let results = parts
        .iter()
        .filter(|p| p["type"] == "tool_call_response")
        .count();
    assert_eq!((calls, results), (2, 2), "{sent}");
    // A parent ends no earlier than any of its children.
    for span in &spans {
        if let Some(parent) = spans.iter().find(|p| p.span_id == span.parent_span_id) {
            assert!(
                parent.end_time_unix_nano >= span.end_time_unix_nano,
                "{} ends before its child {}",
                parent.name,
                span.name
            );
        }
    }
    // Without `finish_reason` a message fails the schema (Phoenix drops it).
    let mut bare = said.clone();
    bare[0].as_object_mut().unwrap().remove("finish_reason");
    assert!(!outputs.is_valid(&bare));
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool calculator")
        .unwrap();
    assert!(
        attr_str(tool, "gen_ai.tool.call.arguments")
            .unwrap()
            .contains("expression")
    );
    // OpenInference's input and output too (Phoenix shows the tool's from these).
    assert!(attr_str(tool, "input.value").is_some_and(|v| v.contains("expression")));
    assert!(attr_str(tool, "output.value").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_round_trip_is_lossless() {
    let dir = tempfile::tempdir().unwrap();
    let (art, _thread, _trace) = known_run(dir.path()).await;
    let redactor = Redactor::new(Vec::new());
    let first = export_to_string(
        &art,
        &Scope::All,
        Format::Jsonl,
        Options::default(),
        &redactor,
    )
    .await;
    let header: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "header");
    assert_eq!(header["format"], "art-trace");
    assert_eq!(header["version"], 1);
    assert_eq!(header["scope"]["kind"], "all");
    let end: Value = serde_json::from_str(first.lines().last().unwrap()).unwrap();
    assert_eq!(end["type"], "end");
    assert_eq!(end["threads"], 1);

    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, &first).unwrap();
    let other = tempfile::tempdir().unwrap();
    let copy = empty_instance(other.path());
    let summary = export::jsonl::import(&copy, &file).await.unwrap();
    assert_eq!(summary.threads, 1);
    assert_eq!(summary.observations, end["observations"].as_u64().unwrap());
    let second = export_to_string(
        &copy,
        &Scope::All,
        Format::Jsonl,
        Options::default(),
        &redactor,
    )
    .await;
    assert_eq!(second, first, "export → import → export is identical");
    // The imported thread is usable: its settings and answers are there.
    let thread = &copy.conversation.list_threads().await.unwrap()[0];
    let (config, _) = copy.state.saved(&thread.thread_id).await.unwrap();
    assert_eq!(config.unwrap().enabled_tools, ["calculator"]);
}

/// A fixed run (ids and times set) with a plan, two tools (one failing) and thinking.
async fn fixed_thread(art: &ArtInstance, secret: &str) -> String {
    let t0 = 1_767_225_600_000; // 2026-01-01 00:00 UTC
    let thread = ThreadSummary {
        thread_id: "thread-1".into(),
        title: "Golden thread".into(),
        created_at: t0,
        updated_at: t0 + 9_000,
        message_count: 3,
        forked_from: None,
        head: None,
    };
    let message = |id: &str, role, at: i64, content: &str| ConversationMessage {
        message_id: id.into(),
        thread_id: "thread-1".into(),
        role,
        content: content.into(),
        timestamp: t0 + at,
        status: MessageStatus::Complete,
        metadata: json!({ "traceId": "run-1", "model": "test-model" }),
        parent_id: None,
        attachments: Vec::new(),
    };
    let messages = [
        message(
            "m1",
            MessageRole::User,
            0,
            &format!("What is 6*7? My key is {secret}"),
        ),
        message("m2", MessageRole::Tool, 5_000, "42"),
        message(
            "m3",
            MessageRole::Ai,
            8_000,
            "It is **42**.\n\n```\nsum = 6 * 7\n```",
        ),
    ];
    art.conversation.restore(&thread, &messages).await.unwrap();
    let span = |phase, id: &str, parent: Option<&str>, start: i64, end: Option<i64>| {
        Some(SpanInfo {
            phase,
            span_id: id.into(),
            parent_span_id: parent.map(str::to_owned),
            start_ms: t0 + start,
            end_ms: end.map(|e| t0 + e),
        })
    };
    let obs = |id: &str, at: i64, kind, title: &str, content: Value, span| Observation {
        id: id.into(),
        thread_id: "thread-1".into(),
        trace_id: "run-1".into(),
        timestamp: t0 + at,
        kind,
        title: title.into(),
        content,
        metadata: json!({ "provider": "ollama", "model": "test-model" }),
        span,
    };
    use ObservationType as T;
    use Phase as P;
    let observations = vec![
        obs(
            "o1",
            100,
            T::LlmStreamStart,
            "LLM call started",
            json!({ "stage": "planning" }),
            span(P::Planning, "llm-1", Some("plan"), 100, None),
        ),
        obs(
            "o2",
            900,
            T::Thoughts,
            "Thinking",
            json!({ "text": "Two sums; one will fail." }),
            None,
        ),
        obs(
            "o3",
            1_000,
            T::LlmStreamEnd,
            "LLM call finished",
            json!({ "metadata": { "inputTokens": 30, "outputTokens": 20 } }),
            span(P::Planning, "llm-1", Some("plan"), 100, Some(1_000)),
        ),
        obs(
            "o4",
            1_100,
            T::Title,
            "Title",
            json!({ "title": "Two sums" }),
            span(P::Planning, "plan", Some("root"), 50, None),
        ),
        obs(
            "o5",
            1_100,
            T::Plan,
            "Plan",
            json!({ "intent": "Compute 6*7", "plan": ["1. Calculate", "2) Answer"] }),
            span(P::Planning, "plan", Some("root"), 50, Some(1_100)),
        ),
        obs(
            "o6",
            1_100,
            T::ToolCall,
            "Tool call: calculator",
            json!({ "callId": "c1", "toolName": "calculator", "arguments": { "expression": "6*7" } }),
            span(P::Planning, "plan", Some("root"), 50, None),
        ),
        obs(
            "o7",
            1_100,
            T::ToolCall,
            "Tool call: calculator",
            json!({ "callId": "c2", "toolName": "calculator", "arguments": { "expression": format!("key {secret}") } }),
            span(P::Planning, "plan", Some("root"), 50, None),
        ),
        obs(
            "o8",
            1_200,
            T::ToolExecution,
            "Tool: calculator",
            json!({ "callId": "c1", "toolName": "calculator", "arguments": { "expression": "6*7" }, "status": "success", "output": { "value": 42 } }),
            span(P::Execution, "tool-1", Some("root"), 1_150, Some(1_200)),
        ),
        obs(
            "o9",
            1_300,
            T::ToolExecution,
            "Tool: calculator",
            json!({ "callId": "c2", "toolName": "calculator", "arguments": { "expression": format!("key {secret}") }, "status": "error", "error": "Authorization: Bearer abcdefghijklmnop was rejected" }),
            span(P::Execution, "tool-2", Some("root"), 1_250, Some(1_300)),
        ),
        obs(
            "o10",
            8_000,
            T::Synthesis,
            "Synthesis",
            json!({ "length": 12 }),
            span(P::Synthesis, "synth", Some("root"), 1_400, Some(8_000)),
        ),
        obs(
            "o11",
            9_000,
            T::FinalResponse,
            "Final response",
            json!({ "messageId": "m3", "metadata": { "usage": { "inputTokens": 60, "outputTokens": 35, "thinkingTokens": 0 } } }),
            span(P::Run, "root", None, 0, Some(9_000)),
        ),
    ];
    art.observations.restore(&observations).await.unwrap();
    "run-1".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_transcript_matches_the_golden_file() {
    let dir = tempfile::tempdir().unwrap();
    let art = empty_instance(dir.path());
    fixed_thread(&art, "no secret here").await;
    let redactor = Redactor::new(Vec::new());
    let options = Options {
        include_thinking: true,
        ..Options::default()
    };
    let scope = Scope::Thread("thread-1".into());
    let text = export_to_string(&art, &scope, Format::Markdown, options, &redactor).await;
    let text = text.replace(art::VERSION, "VERSION");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/framework/golden/transcript.md");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("golden file (UPDATE_GOLDEN=1 writes it)");
    assert_eq!(text, want);
    // Without the option, no thinking.
    let plain = export_to_string(
        &art,
        &scope,
        Format::Markdown,
        Options::default(),
        &redactor,
    )
    .await;
    assert!(!plain.contains("one will fail"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_redacted_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let art = empty_instance(dir.path());
    fixed_thread(&art, SENTINEL).await;
    let redactor = Redactor::new([SENTINEL.to_owned()]);
    let content = Options {
        include_content: true,
        include_thinking: true,
    };
    for format in Format::ALL {
        let text = export_to_string(&art, &Scope::All, format, content, &redactor).await;
        assert!(!text.contains(SENTINEL), "{format:?} leaks the key");
        assert!(
            !text.contains("abcdefghijklmnop"),
            "{format:?} leaks the bearer token"
        );
        assert!(text.contains(export::REDACTED), "{format:?}");
    }
    // Even a redactor that was told nothing catches the key by its shape.
    let blind = Redactor::new(Vec::new());
    let text = export_to_string(&art, &Scope::All, Format::Jsonl, content, &blind).await;
    assert!(!text.contains(SENTINEL));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_import_says_which_line_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let art = empty_instance(dir.path());
    fixed_thread(&art, "none").await;
    let redactor = Redactor::new(Vec::new());
    let good = export_to_string(
        &art,
        &Scope::All,
        Format::Jsonl,
        Options::default(),
        &redactor,
    )
    .await;
    let lines: Vec<&str> = good.lines().collect();
    let target = tempfile::tempdir().unwrap();
    let copy = empty_instance(target.path());
    let attempt = |name: &str, text: String| {
        let path = target.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cases = [
        (
            "truncated.jsonl",
            lines[..lines.len() - 1].join("\n"),
            "cut short",
        ),
        (
            "garbage.jsonl",
            {
                let mut l = lines.clone();
                l[3] = "{\"type\":\"message\",\"message\":";
                l.join("\n")
            },
            "line 4",
        ),
        ("headless.jsonl", lines[1..].join("\n"), "line 1"),
        (
            "orphan.jsonl",
            {
                let mut l = lines.clone();
                l.remove(1);
                l.join("\n")
            },
            "not declared",
        ),
        ("binary.jsonl", "\u{0}\u{1}garbage".into(), "line 1"),
    ];
    for (name, text, want) in cases {
        let err = export::jsonl::import(&copy, &attempt(name, text))
            .await
            .unwrap_err();
        assert!(err.to_string().contains(want), "{name}: {err}");
        assert!(
            copy.conversation.list_threads().await.unwrap().is_empty(),
            "{name} wrote"
        );
    }
    // A thread already there is refused too.
    let err = export::jsonl::import(&art, &attempt("again.jsonl", good.clone()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("already in this database"),
        "{err}"
    );
    // The good file goes in.
    export::jsonl::import(&copy, &attempt("good.jsonl", good))
        .await
        .unwrap();
    assert_eq!(copy.conversation.list_threads().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_scopes_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let art = empty_instance(dir.path());
    let redactor = Redactor::new(Vec::new());
    for scope in [Scope::Thread("nope".into()), Scope::Trace("nope".into())] {
        let mut out = Vec::new();
        let err = export::export(
            &art,
            &scope,
            Format::Jsonl,
            Options::default(),
            &redactor,
            &mut out,
            &mut |_| {},
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }
}

/// Many threads with more observations than one read batch: `--all` exports each
/// thread's observations whole, in time order, under that thread (the next thread's
/// observations are read ahead while one is written), and OTLP has one line per run.
#[tokio::test]
async fn all_threads_export_whole_and_in_order() {
    use art::observation::NewObservation;
    let dir = tempfile::tempdir().unwrap();
    let art = empty_instance(dir.path());
    const THREADS: usize = 4;
    const RUNS: usize = 3;
    const PER_RUN: usize = 1_000; // 3,000 a thread: more than a read batch (2,048)
    let mut threads = Vec::new();
    for t in 0..THREADS {
        let title = format!("Thread {t}");
        let thread = art.conversation.create_thread(Some(&title)).await.unwrap();
        let mut batch = Vec::new();
        for r in 0..RUNS {
            for n in 0..PER_RUN {
                let trace = format!("{}-run-{r}", thread.thread_id);
                let content = json!({ "n": n, "run": r });
                batch.push(NewObservation::new(
                    &thread.thread_id,
                    &trace,
                    ObservationType::Thoughts,
                    content,
                ));
            }
        }
        art.observations.record_all(batch).await.unwrap();
        threads.push(thread.thread_id);
    }
    let redactor = Redactor::new(Vec::new());
    let jsonl = export_to_string(
        &art,
        &Scope::All,
        Format::Jsonl,
        Options::default(),
        &redactor,
    )
    .await;
    let mut seen: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    let mut order = Vec::new();
    for line in jsonl.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "observation" {
            let o = &v["observation"];
            let thread = o["threadId"].as_str().unwrap().to_owned();
            if order.last() != Some(&thread) {
                order.push(thread.clone());
            }
            let key = (
                o["content"]["run"].as_i64().unwrap(),
                o["content"]["n"].as_i64().unwrap(),
            );
            seen.entry(thread).or_default().push(key);
        }
    }
    assert_eq!(
        order.len(),
        THREADS,
        "each thread's observations come together"
    );
    for thread in &threads {
        let keys = &seen[thread];
        assert_eq!(keys.len(), RUNS * PER_RUN, "{thread}");
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, &sorted, "in the order they were recorded");
    }
    let otlp = export_to_string(
        &art,
        &Scope::All,
        Format::Otlp,
        Options::default(),
        &redactor,
    )
    .await;
    assert_eq!(
        otlp.lines().count(),
        THREADS * RUNS,
        "one TracesData per run"
    );
    for line in otlp.lines() {
        let data: TracesData = serde_json::from_str(line).unwrap();
        let spans = &data.resource_spans[0].scope_spans[0].spans;
        assert_eq!(
            spans.len(),
            1,
            "observations without spans hang on a made-up root"
        );
        assert_eq!(spans[0].events.len(), PER_RUN);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_protobuf_file_holds_the_same_spans_as_the_json_lines() {
    use prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let (art, _thread, _trace) = known_run(dir.path()).await;
    let redactor = Redactor::new(Vec::new());
    let with = Options {
        include_content: true,
        ..Options::default()
    };
    let json = export_to_string(&art, &Scope::All, Format::Otlp, with, &redactor).await;
    let mut pb = Vec::new();
    export::export(
        &art,
        &Scope::All,
        Format::OtlpProto,
        with,
        &redactor,
        &mut pb,
        &mut |_| {},
    )
    .await
    .unwrap();
    // The collector's file exporter's proto form: each message after its length as 4
    // bytes, big-endian.
    let mut messages = Vec::new();
    let mut rest = pb.as_slice();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        messages.push(TracesData::decode(&rest[4..4 + len]).unwrap());
        rest = &rest[4 + len..];
    }
    let lines: Vec<TracesData> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(messages.len(), lines.len(), "one TracesData per run");
    assert_eq!(messages, lines, "the same spans, attributes and events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_queued_as_it_ends_is_its_protobuf_export() {
    use prost::Message;
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let redactor = Redactor::new(Vec::new());
    for include_content in [false, true] {
        let with = Options {
            include_content,
            ..Options::default()
        };
        let mut pb = Vec::new();
        let scope = Scope::Trace(trace.clone());
        export::export(
            &art,
            &scope,
            Format::OtlpProto,
            with,
            &redactor,
            &mut pb,
            &mut |_| {},
        )
        .await
        .unwrap();
        // Read back from storage, and from what the run kept as it recorded (still
        // watched: taken again for the next pass).
        let kept = art.observations.tap().take(&trace, true);
        assert!(
            kept.as_ref().is_some_and(|k| k.observations.len() > 6),
            "the run was kept"
        );
        // Its messages too (question and answer, placed in the thread as stored), so
        // nothing is read back: the bytes below are the same as from storage.
        let stored = art
            .conversation
            .messages_of_run(&thread, &trace)
            .await
            .unwrap();
        let kept_messages = &kept.as_ref().unwrap().messages;
        assert!(stored.len() >= 2, "{stored:?}");
        assert_eq!(
            serde_json::to_value(kept_messages).unwrap(),
            serde_json::to_value(&stored).unwrap()
        );
        let (spans, entries) =
            export::run_as_protobuf(&art, &thread, &trace, None, include_content, &redactor)
                .await
                .unwrap();
        let from_kept =
            export::run_as_protobuf(&art, &thread, &trace, kept, include_content, &redactor)
                .await
                .unwrap();
        // The file's one message, without its 4-byte length.
        assert_eq!(entries, pb[4..], "the same bytes as the .pb export");
        assert_eq!(
            from_kept,
            (spans, entries.clone()),
            "the same from what was kept"
        );
        let data = TracesData::decode(entries.as_slice()).unwrap();
        let counted: usize = data
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        assert_eq!(spans, counted as u64);
        assert!(spans >= 6, "run, plan, steps, calls: {spans}");
    }
    // Named with another thread, the run has nothing there.
    let other = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let (spans, entries) = export::run_as_protobuf(&art, &other, &trace, None, true, &redactor)
        .await
        .unwrap();
    assert_eq!((spans, entries.len()), (0, 0));
}
