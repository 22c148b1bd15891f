//! Full Plan-Execute-Synthesize runs: a scripted provider (the adapter trait is the
//! seam), real SQLite in a temp dir, real tools.

use art_testkit::framework::scripted;

use std::sync::Arc;
use std::time::Duration;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::{MessageOptions, StateSavingStrategy};
use art::observation::ObservationQuery;
use art::sockets::{All, StreamFilter};
use art::storage::sqlite::{SqliteStorage, integrity_check};
use art::tools::{ExecutionContext, ToolError, ToolExecutor};
use art_types::{
    AgentProps, ErrorClass, FailureCode, MessageRole, MessageStatus, ObservationType, PromptRole,
    RunStatus, StreamEventKind, ThreadConfig, TokenType, ToolSchema,
};
use scripted::{Script, ScriptedSource, plan_json};
use serde_json::{Value, json};

struct Harness {
    art: ArtInstance,
    source: Arc<ScriptedSource>,
    thread: String,
    _dir: Option<tempfile::TempDir>,
}

struct SlowTool(ToolSchema);

#[async_trait::async_trait]
impl ToolExecutor for SlowTool {
    fn schema(&self) -> &ToolSchema {
        &self.0
    }
    fn timeout(&self) -> Duration {
        Duration::from_millis(100)
    }
    async fn execute(&self, _: &Value, _: &ExecutionContext) -> Result<Value, ToolError> {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(json!("never"))
    }
}

fn slow_tool() -> Arc<SlowTool> {
    Arc::new(SlowTool(ToolSchema {
        name: "slow_lookup".into(),
        description: "Takes forever.".into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        examples: vec![],
    }))
}

/// A tool that keeps a note in the agent state and asks that it be saved (ART's
/// explicit `setAgentState`).
struct NoteTool(ToolSchema);

#[async_trait::async_trait]
impl ToolExecutor for NoteTool {
    fn schema(&self) -> &ToolSchema {
        &self.0
    }
    async fn execute(&self, _: &Value, context: &ExecutionContext) -> Result<Value, ToolError> {
        context
            .state
            .lock()
            .await
            .data
            .insert("note".into(), json!("kept"));
        context.save_state();
        Ok(json!("noted"))
    }
}

fn note_tool() -> Arc<NoteTool> {
    Arc::new(NoteTool(ToolSchema {
        name: "note".into(),
        description: "Keeps a note.".into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        examples: vec![],
    }))
}

async fn open(
    dir: &std::path::Path,
    source: Arc<ScriptedSource>,
    strategy: StateSavingStrategy,
) -> ArtInstance {
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, source)
        .tool(slow_tool())
        .tool(note_tool())
        .state_saving(strategy)
        .build()
        .unwrap()
}

async fn harness(scripts: Vec<Script>, enabled: &[&str]) -> Harness {
    harness_with(scripts, enabled, StateSavingStrategy::Explicit).await
}

async fn harness_with(
    scripts: Vec<Script>,
    enabled: &[&str],
    strategy: StateSavingStrategy,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(ScriptedSource::new(scripts));
    let art = open(dir.path(), Arc::clone(&source), strategy).await;
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let config = ThreadConfig {
        system_prompt: Some("Thread prompt.".into()),
        ..scripted::thread_config("test-model", enabled)
    };
    art.state.set_thread_config(&thread, &config).await.unwrap();
    Harness {
        art,
        source,
        thread,
        _dir: Some(dir),
    }
}

fn props(h: &Harness, query: &str) -> AgentProps {
    AgentProps {
        query: query.into(),
        thread_id: h.thread.clone(),
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    }
}

async fn kinds(h: &Harness, trace: &str) -> Vec<ObservationType> {
    h.art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![trace.into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.kind)
        .collect()
}

#[tokio::test]
async fn no_tool_calls_skips_execution_and_streams_the_answer() {
    let h = harness(
        vec![
            Script::text(&plan_json("greet", &[])),
            Script::text("Hello there!"),
        ],
        &["calculator"],
    )
    .await;
    let mut tokens = h.art.sockets.stream.subscribe(StreamFilter {
        thread_id: Some(h.thread.clone()),
        trace_id: None,
    });
    let out = h
        .art
        .process(props(&h, "hi"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.response.content, "Hello there!");
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert_eq!(out.metadata.llm_calls, 2);
    assert_eq!(out.metadata.tool_calls, 0);
    let ks = kinds(&h, &out.metadata.trace_id).await;
    assert!(ks.contains(&ObservationType::Intent) && ks.contains(&ObservationType::Plan));
    assert!(!ks.contains(&ObservationType::ToolExecution));
    assert_eq!(ks.last(), Some(&ObservationType::FinalResponse));
    // Answer tokens reached the stream socket, typed as synthesis output.
    let mut answer = String::new();
    while let Some(ev) = tokens.try_recv() {
        if let StreamEventKind::Token {
            text,
            token_type: TokenType::FinalSynthesisLlmResponse,
        } = ev.kind
        {
            answer.push_str(&text);
        }
    }
    assert_eq!(answer, "Hello there!");
    // History: user then AI, both complete; the thread is titled from the question
    // (the planner's "greet" names nothing that was asked).
    let msgs = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap();
    let roles: Vec<_> = msgs.iter().map(|m| (m.role, m.status)).collect();
    assert_eq!(
        roles,
        [
            (MessageRole::User, MessageStatus::Complete),
            (MessageRole::Ai, MessageStatus::Complete)
        ]
    );
    assert_eq!(
        h.art.conversation.thread(&h.thread).await.unwrap().title,
        "hi"
    );
    // Prompt hierarchy: base + thread prompt (no call-level override).
    let planning_prompt = &h.source.prompts()[0];
    assert_eq!(planning_prompt[0].role, PromptRole::System);
    assert!(planning_prompt[0].content.contains("Thread prompt."));
    assert_eq!(h.source.active_leases(), 0);
}

#[tokio::test]
async fn call_level_system_prompt_wins() {
    let h = harness(vec![Script::text("ok")], &[]).await;
    let mut p = props(&h, "hi");
    p.options.system_prompt = Some("Call prompt.".into());
    h.art.process(p, CancellationToken::new()).await.unwrap();
    let system = &h.source.prompts()[0][0].content;
    assert!(
        system.contains("Call prompt.") && !system.contains("Thread prompt."),
        "{system}"
    );
}

#[tokio::test]
async fn one_tool_then_two_in_order_with_results_in_history() {
    let calls = [
        ("c1", "calculator", json!({"expression": "6*7"})),
        ("c2", "calculator", json!({"expression": "ans+8"})),
    ];
    let h = harness(
        vec![
            Script::text(&plan_json("maths", &calls)),
            Script::text("It is 50."),
        ],
        &["calculator"],
    )
    .await;
    let out = h
        .art
        .process(props(&h, "6*7+8?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert_eq!(out.metadata.tool_calls, 2);
    let ks = kinds(&h, &out.metadata.trace_id).await;
    for expected in [
        ObservationType::Title,
        ObservationType::Intent,
        ObservationType::Plan,
        ObservationType::ToolCall,
        ObservationType::ToolExecution,
        ObservationType::StateUpdate,
        ObservationType::Synthesis,
        ObservationType::FinalResponse,
        ObservationType::LlmStreamStart,
        ObservationType::LlmStreamMetadata,
        ObservationType::LlmStreamEnd,
    ] {
        assert!(ks.contains(&expected), "{expected:?} missing from {ks:?}");
    }
    assert_eq!(
        out.metadata.usage.input_tokens, 20,
        "usage summed over both calls"
    );
    // Every observation of the run sits in one span tree under the FINAL_RESPONSE root.
    let all = h
        .art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![out.metadata.trace_id.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    let root = all
        .iter()
        .find(|o| o.kind == ObservationType::FinalResponse)
        .unwrap()
        .span
        .clone()
        .unwrap();
    assert!(root.parent_span_id.is_none() && root.end_ms.is_some());
    let tool_span = all
        .iter()
        .find(|o| o.kind == ObservationType::ToolExecution)
        .unwrap()
        .span
        .clone()
        .unwrap();
    // A tool runs inside its step's span, which sits under the root.
    let step_span = all
        .iter()
        .filter(|o| o.kind == ObservationType::Step)
        .filter_map(|o| o.span.clone())
        .find(|s| Some(s.span_id.as_str()) == tool_span.parent_span_id.as_deref())
        .expect("the tool's parent is a step");
    assert_eq!(
        step_span.parent_span_id.as_deref(),
        Some(root.span_id.as_str())
    );
    let tools: Vec<_> = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.role == MessageRole::Tool)
        .collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].metadata["toolCallId"], "c1");
    assert_eq!(tools[1].metadata["toolName"], "calculator");
    assert!(tools[1].content.contains("50"), "{}", tools[1].content);
    // The synthesis prompt carries the calls and their results, linked by id.
    let synthesis = &h.source.prompts()[1];
    let result_ids: Vec<_> = synthesis
        .iter()
        .filter(|m| m.role == PromptRole::ToolResult)
        .map(|m| m.tool_call_id.clone().unwrap())
        .collect();
    assert_eq!(result_ids, ["c1", "c2"]);
    assert!(
        synthesis
            .iter()
            .any(|m| m.tool_calls.iter().any(|c| c.id == "c2"))
    );
}

#[tokio::test]
async fn invalid_arguments_disabled_tool_and_timeout_make_a_partial_run() {
    let calls = [
        ("bad", "calculator", json!({"expr": "1"})),
        ("off", "current_time", json!({})),
        ("slow", "slow_lookup", json!({})),
    ];
    let h = harness(
        vec![
            Script::text(&plan_json("x", &calls)),
            Script::text("None of them worked."),
            Script::text("Partly done."),
        ],
        &["calculator", "slow_lookup"],
    )
    .await;
    let out = h
        .art
        .process(props(&h, "do things"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Partial);
    assert_eq!(out.response.content, "Partly done.");
    let executions = h
        .art
        .observations
        .query(&ObservationQuery {
            types: vec![ObservationType::ToolExecution],
            ..Default::default()
        })
        .await
        .unwrap();
    let codes: Vec<_> = executions
        .iter()
        .map(|o| o.metadata["errorCode"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        codes,
        ["INVALID_TOOL_ARGUMENTS", "TOOL_DISABLED", "TOOL_TIMEOUT"]
    );
    // The planned calls failed, so the step asked the model, which saw every error.
    let step = &h.source.prompts()[1];
    let errors = step
        .iter()
        .filter(|m| m.role == PromptRole::ToolResult && m.content.starts_with("Error:"))
        .count();
    assert_eq!(errors, 3, "{step:#?}");
}

#[tokio::test]
async fn unparseable_planning_output_is_recorded_and_the_run_goes_on() {
    let h = harness(
        vec![Script::text("I will just answer."), Script::text("Answer.")],
        &["calculator"],
    )
    .await;
    let out = h
        .art
        .process(props(&h, "hi"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    let errors = h
        .art
        .observations
        .query(&ObservationQuery {
            types: vec![ObservationType::Error],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].content["code"], "PLANNING_OUTPUT_UNPARSEABLE");
}

#[tokio::test]
async fn planning_failure_is_an_error_response_with_the_user_message_kept() {
    let h = harness(
        vec![Script::fail_start(ErrorClass::Auth, "invalid API key")],
        &[],
    )
    .await;
    let out = h
        .art
        .process(props(&h, "hello?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    assert!(
        out.metadata
            .error
            .as_ref()
            .unwrap()
            .message
            .contains("invalid API key")
    );
    let msgs = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].content, "hello?");
    let ks = kinds(&h, &out.metadata.trace_id).await;
    assert!(ks.contains(&ObservationType::LlmStreamError) && ks.contains(&ObservationType::Error));
    assert_eq!(
        h.source.active_leases(),
        0,
        "lease released after a failed start"
    );
}

#[tokio::test]
async fn a_question_that_failed_is_kept_marked_and_left_out_of_later_prompts() {
    let h = harness(
        vec![
            Script::fail_start(
                ErrorClass::Permanent,
                "request exceeds the available context size",
            ),
            Script::text("Hello!"),
        ],
        &[],
    )
    .await;
    let failed = h
        .art
        .process(props(&h, "a question too long"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(failed.metadata.status, RunStatus::Error);
    let msgs = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].status, MessageStatus::Failed);
    assert!(
        msgs[0].metadata["error"]["message"]
            .as_str()
            .unwrap()
            .contains("context size"),
        "{}",
        msgs[0].metadata
    );
    // The next question works: the failed one is not sent again.
    let next = h
        .art
        .process(props(&h, "hello"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(next.metadata.status, RunStatus::Success);
    let prompts = h.source.prompts();
    for prompt in &prompts[1..] {
        assert!(
            prompt.iter().all(|m| !m.content.contains("too long")),
            "{prompt:?}"
        );
        assert!(prompt.iter().any(|m| m.content == "hello"));
    }
    // It stays in the thread, failed, before the answered question.
    let msgs = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(msgs[0].status, MessageStatus::Failed);
    assert_eq!(msgs.last().unwrap().content, "Hello!");
    // Removing its run leaves the rest.
    let trace = msgs[0].metadata["traceId"].as_str().unwrap().to_owned();
    let removed = h.art.conversation.remove_run(&h.thread, &trace).await;
    assert_eq!(removed.unwrap(), 1);
    let left = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(left.len(), msgs.len() - 1);
    let thread = h.art.conversation.thread(&h.thread).await.unwrap();
    assert_eq!(thread.message_count as usize, left.len());
}

#[tokio::test]
async fn history_that_does_not_fit_the_context_window_is_left_out_and_the_run_says_so() {
    let long = "word ".repeat(600);
    let h = harness(vec![Script::text(&long), Script::text("Short.")], &[]).await;
    let first = h
        .art
        .process(
            props(&h, &format!("First: {long}")),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(first.metadata.history_left_out, 0);
    let mut config = h
        .art
        .state
        .load_thread_context(&h.thread)
        .await
        .unwrap()
        .config;
    config.context_window = Some(1_024);
    h.art
        .state
        .set_thread_config(&h.thread, &config)
        .await
        .unwrap();

    let out = h
        .art
        .process(props(&h, "And now?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert_eq!(
        out.metadata.history_left_out, 2,
        "the first question and its answer"
    );
    let prompts = h.source.prompts();
    for prompt in &prompts[1..] {
        assert!(
            prompt.iter().all(|m| !m.content.starts_with("First:")),
            "{prompt:?}"
        );
        assert!(prompt.iter().any(|m| m.content == "And now?"));
    }
    // The trace keeps it: the FINAL_RESPONSE of the run says how many went.
    let finals = h
        .art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![out.metadata.trace_id.clone()],
            types: vec![ObservationType::FinalResponse],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(finals[0].content["metadata"]["historyLeftOut"], 2);
}

#[tokio::test]
async fn tokens_that_arrive_together_reach_the_socket_merged_by_type_in_order() {
    let token = |text: &str, token_type| StreamEventKind::Token {
        text: text.into(),
        token_type,
    };
    let answer = Script::events(vec![
        token("Let me ", TokenType::LlmThinking),
        token("see.", TokenType::LlmThinking),
        token("Four", TokenType::LlmResponse),
        token(" is ", TokenType::LlmResponse),
        token("the answer.", TokenType::LlmResponse),
        token(" Really.", TokenType::LlmThinking),
    ]);
    let h = harness(vec![answer], &[]).await;
    let mut events = h.art.sockets.stream.subscribe(StreamFilter {
        thread_id: Some(h.thread.clone()),
        trace_id: None,
    });
    let out = h
        .art
        .process(props(&h, "2+2?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.response.content, "Four is the answer.");
    let mut synthesis = Vec::new();
    while let Some(ev) = events.try_recv() {
        if let StreamEventKind::Token { text, token_type } = ev.kind
            && matches!(
                token_type,
                TokenType::FinalSynthesisLlmThinking | TokenType::FinalSynthesisLlmResponse
            )
        {
            synthesis.push((token_type, text));
        }
    }
    // The scripted stream hands every token over at once: one event per run of a type.
    assert_eq!(
        synthesis,
        vec![
            (
                TokenType::FinalSynthesisLlmThinking,
                "Let me see.".to_owned()
            ),
            (
                TokenType::FinalSynthesisLlmResponse,
                "Four is the answer.".to_owned()
            ),
            (TokenType::FinalSynthesisLlmThinking, " Really.".to_owned()),
        ]
    );
}

#[tokio::test]
async fn synthesis_failure_mid_stream_keeps_the_partial_answer_interrupted() {
    let failing = Script::events(vec![
        StreamEventKind::Token {
            text: "Half an ".into(),
            token_type: TokenType::LlmResponse,
        },
        StreamEventKind::Token {
            text: "answer".into(),
            token_type: TokenType::LlmResponse,
        },
        StreamEventKind::Error(art_types::StreamError {
            class: ErrorClass::Transient,
            code: FailureCode::LlmProviderError,
            message: "connection reset".into(),
        }),
    ]);
    let h = harness(vec![failing], &[]).await;
    let out = h
        .art
        .process(props(&h, "tell me"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    assert_eq!(out.response.status, MessageStatus::Interrupted);
    assert_eq!(out.response.content, "Half an answer");
    let msgs = h
        .art
        .conversation
        .messages(&h.thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(msgs.last().unwrap().status, MessageStatus::Interrupted);
    assert_eq!(msgs.last().unwrap().content, "Half an answer");
    assert_eq!(
        h.source.active_leases(),
        0,
        "lease released after a stream error"
    );
}

#[tokio::test]
async fn cancellation_mid_stream_stops_checkpoints_and_leaves_the_thread_usable() {
    let slow = Script::slow_text("word ", 200, Duration::from_millis(10));
    let h = harness(vec![slow, Script::text("Fresh answer.")], &[]).await;
    let cancel = CancellationToken::new();
    let mut messages = h.art.sockets.messages.subscribe(All);
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        stopper.cancel();
    });
    let out = h
        .art
        .process(props(&h, "long story"), cancel)
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    assert_eq!(
        out.metadata.error.as_ref().unwrap().code,
        FailureCode::Cancelled
    );
    assert_eq!(out.response.status, MessageStatus::Interrupted);
    let words = out.response.content.matches("word").count();
    assert!(
        words > 0 && words < 200,
        "stopped midway, got {words} words"
    );
    // Checkpoints were saved while streaming (more than just the final save).
    let mut streaming_saves = 0;
    while let Some(m) = messages.try_recv() {
        if m.status == MessageStatus::Streaming {
            streaming_saves += 1;
        }
    }
    assert!(streaming_saves >= 2, "{streaming_saves} checkpoints");
    assert_eq!(
        h.source.active_leases(),
        0,
        "lease released when the stream was dropped"
    );
    let ks = kinds(&h, &out.metadata.trace_id).await;
    assert!(ks.contains(&ObservationType::Error));
    // The thread accepts the next message.
    let next = h
        .art
        .process(props(&h, "again"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(next.response.content, "Fresh answer.");
}

#[tokio::test]
async fn ans_survives_a_second_run_and_a_restart_when_saved_implicitly() {
    let dir = tempfile::tempdir().unwrap();
    let source = Arc::new(ScriptedSource::new(vec![
        Script::text(&plan_json(
            "a",
            &[("c1", "calculator", json!({"expression": "20 + 1"}))],
        )),
        Script::text("21"),
        Script::text(&plan_json(
            "b",
            &[("c2", "calculator", json!({"expression": "ans * 2"}))],
        )),
        Script::text("42"),
        Script::text(&plan_json(
            "c",
            &[("c3", "calculator", json!({"expression": "ans + 1"}))],
        )),
        Script::text("43"),
    ]));
    let thread;
    {
        let art = open(
            dir.path(),
            Arc::clone(&source),
            StateSavingStrategy::Implicit,
        )
        .await;
        thread = art
            .conversation
            .create_thread(Some("maths"))
            .await
            .unwrap()
            .thread_id;
        let config = scripted::thread_config("m", &["calculator"]);
        art.state.set_thread_config(&thread, &config).await.unwrap();
        for q in ["21?", "double it"] {
            let p = AgentProps {
                query: q.into(),
                thread_id: thread.clone(),
                trace_id: None,
                options: Default::default(),
                attachments: Vec::new(),
            };
            art.process(p, CancellationToken::new()).await.unwrap();
        }
        let state = art.state.load_thread_context(&thread).await.unwrap().state;
        assert_eq!(state.data["ans"], 42.0);
    }
    integrity_check(&dir.path().join("art.sqlite3")).unwrap();
    let art = open(
        dir.path(),
        Arc::clone(&source),
        StateSavingStrategy::Implicit,
    )
    .await;
    let p = AgentProps {
        query: "plus one".into(),
        thread_id: thread.clone(),
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    art.process(p, CancellationToken::new()).await.unwrap();
    let tool = art
        .conversation
        .messages(&thread, MessageOptions::default())
        .await
        .unwrap()
        .into_iter()
        .rfind(|m| m.role == MessageRole::Tool)
        .unwrap();
    assert!(tool.content.contains("43"), "{}", tool.content);
}

/// ART's strategies: `explicit` keeps a change only when a tool asks (the calculator
/// does not, so its `ans` lives for the run alone); `implicit` keeps every change. The
/// change is observed either way, saying whether it was saved.
#[tokio::test]
async fn the_saving_strategy_decides_what_outlives_a_run() {
    let saved = async |strategy, tool: &str, arguments: Value| {
        let calls = [("c1", tool, arguments)];
        let scripts = vec![Script::text(&plan_json("x", &calls)), Script::text("done")];
        let h = harness_with(scripts, &[tool], strategy).await;
        let out = h
            .art
            .process(props(&h, "go"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(out.metadata.status, RunStatus::Success);
        let updates = h
            .art
            .observations
            .query(&ObservationQuery {
                trace_ids: vec![out.metadata.trace_id.clone()],
                types: vec![ObservationType::StateUpdate],
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(updates.len(), 1, "the change is observed");
        let (_, state) = h.art.state.saved(&h.thread).await.unwrap();
        let kept = state.is_some_and(|s| !s.data.is_empty());
        assert_eq!(
            updates[0].content["saved"], kept,
            "{:?}",
            updates[0].content
        );
        kept
    };
    let sum = || json!({"expression": "2+2"});
    assert!(!saved(StateSavingStrategy::Explicit, "calculator", sum()).await);
    assert!(saved(StateSavingStrategy::Implicit, "calculator", sum()).await);
    assert!(saved(StateSavingStrategy::Explicit, "note", json!({})).await);
    assert!(saved(StateSavingStrategy::Implicit, "note", json!({})).await);
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_written() {
    let h = harness(vec![], &[]).await;
    assert!(
        h.art
            .process(props(&h, "   "), CancellationToken::new())
            .await
            .is_err()
    );
    let mut missing = props(&h, "hi");
    missing.thread_id = "no-such-thread".into();
    assert!(
        h.art
            .process(missing, CancellationToken::new())
            .await
            .is_err()
    );
    assert!(
        h.art
            .conversation
            .messages(&h.thread, MessageOptions::default())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn thinking_is_recorded_in_coalesced_chunks_not_per_token() {
    // 2,000 thinking tokens, some native and some inside <think> tags split across chunks.
    let mut events: Vec<StreamEventKind> = (0..1_000)
        .map(|i| StreamEventKind::Token {
            text: format!("t{i} "),
            token_type: TokenType::LlmThinking,
        })
        .collect();
    events.push(StreamEventKind::Token {
        text: "<thi".into(),
        token_type: TokenType::LlmResponse,
    });
    events.push(StreamEventKind::Token {
        text: "nk>".into(),
        token_type: TokenType::LlmResponse,
    });
    events.extend((0..1_000).map(|i| StreamEventKind::Token {
        text: format!("u{i} "),
        token_type: TokenType::LlmResponse,
    }));
    events.push(StreamEventKind::Token {
        text: "</think>".into(),
        token_type: TokenType::LlmResponse,
    });
    events.push(StreamEventKind::Token {
        text: plan_json("x", &[]),
        token_type: TokenType::LlmResponse,
    });
    events.push(StreamEventKind::End);
    let h = harness(vec![Script::events(events), Script::text("done")], &[]).await;
    // The planner's thinking is what is counted: the thread plans although it has no tools.
    let mut config = h
        .art
        .state
        .load_thread_context(&h.thread)
        .await
        .unwrap()
        .config;
    config.plan_first = true;
    h.art
        .state
        .set_thread_config(&h.thread, &config)
        .await
        .unwrap();
    let mut thinking_tokens = h.art.sockets.stream.subscribe(StreamFilter::default());
    h.art
        .process(props(&h, "think hard"), CancellationToken::new())
        .await
        .unwrap();
    let thoughts = h
        .art
        .observations
        .query(&ObservationQuery {
            types: vec![ObservationType::Thoughts],
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        !thoughts.is_empty() && thoughts.len() <= 20,
        "{} THOUGHTS rows for 2,000 tokens",
        thoughts.len()
    );
    let recorded: String = thoughts
        .iter()
        .map(|o| o.content["text"].as_str().unwrap())
        .collect();
    assert!(recorded.starts_with("t0 t1 ") && recorded.ends_with("u999 "));
    assert_eq!(recorded.matches(' ').count(), 2_000);
    // Live, every thinking token still reached the stream socket, in order, typed as
    // planning thinking (tokens that arrived together travel as one event).
    let mut live = String::new();
    while let Some(ev) = thinking_tokens.try_recv() {
        if let StreamEventKind::Token {
            text,
            token_type: TokenType::AgentThoughtLlmThinking,
        } = ev.kind
        {
            live.push_str(&text);
        }
    }
    assert_eq!(live, recorded);
}

#[tokio::test]
async fn a_library_prompt_applies_unless_the_thread_has_its_own() {
    let h = harness(
        vec![Script::text("ok"), Script::text("ok"), Script::text("ok")],
        &[],
    )
    .await;
    let picked = h
        .art
        .library
        .save(None, "Pirate", "Talk like a pirate.")
        .await
        .unwrap();
    let mut config = h
        .art
        .state
        .load_thread_context(&h.thread)
        .await
        .unwrap()
        .config;
    config.prompt_id = Some(picked.prompt_id.clone());
    // The thread's own text wins over the library prompt it picked.
    h.art
        .state
        .set_thread_config(&h.thread, &config)
        .await
        .unwrap();
    h.art
        .process(props(&h, "one"), CancellationToken::new())
        .await
        .unwrap();
    // Without its own text, the library prompt applies.
    config.system_prompt = None;
    h.art
        .state
        .set_thread_config(&h.thread, &config)
        .await
        .unwrap();
    h.art
        .process(props(&h, "two"), CancellationToken::new())
        .await
        .unwrap();
    // A deleted library prompt is skipped.
    h.art.library.delete(&picked.prompt_id).await.unwrap();
    h.art
        .process(props(&h, "three"), CancellationToken::new())
        .await
        .unwrap();

    let systems: Vec<String> = h
        .source
        .prompts()
        .iter()
        .map(|p| p[0].content.clone())
        .collect();
    assert!(
        systems[0].contains("Thread prompt.") && !systems[0].contains("pirate"),
        "{}",
        systems[0]
    );
    assert!(
        systems[1].contains("Talk like a pirate.") && !systems[1].contains("Thread prompt."),
        "{}",
        systems[1]
    );
    assert!(
        !systems[2].contains("pirate") && !systems[2].contains("Thread prompt."),
        "{}",
        systems[2]
    );
}

/// A thread that offers no tools answers in one streamed call: no planning call, no
/// plan recorded, the run's figures say so, the prompt speaks of no plan or tools, and
/// the untitled thread is titled from the question. With "plan first" on, the same
/// thread plans as before.
#[tokio::test]
async fn a_thread_without_tools_answers_in_one_call_unless_it_plans_first() {
    let h = harness(vec![Script::text("The capital of France is Paris.")], &[]).await;
    let mut tokens = h.art.sockets.stream.subscribe(StreamFilter {
        thread_id: Some(h.thread.clone()),
        trace_id: None,
    });
    let out = h
        .art
        .process(
            props(&h, "What is the capital of France?"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.response.content, "The capital of France is Paris.");
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert!(out.metadata.direct);
    assert_eq!(out.metadata.llm_calls, 1);
    assert_eq!(out.metadata.planning_duration_ms, None);
    let ks = kinds(&h, &out.metadata.trace_id).await;
    for planned in [
        ObservationType::Title,
        ObservationType::Intent,
        ObservationType::Plan,
    ] {
        assert!(!ks.contains(&planned), "{planned:?} in {ks:?}");
    }
    assert_eq!(ks.last(), Some(&ObservationType::FinalResponse));
    // Every token streamed was the answer's.
    let mut answer = String::new();
    while let Some(ev) = tokens.try_recv() {
        if let StreamEventKind::Token { text, token_type } = ev.kind {
            assert_eq!(token_type, TokenType::FinalSynthesisLlmResponse);
            answer.push_str(&text);
        }
    }
    assert_eq!(answer, out.response.content);
    // One prompt: the thread's own words, nothing of plans or tools.
    let prompts = h.source.prompts();
    assert_eq!(prompts.len(), 1);
    let system = &prompts[0][0].content;
    assert!(system.contains("Thread prompt."), "{system}");
    for word in ["plan", "tool", "steps"] {
        assert!(!system.to_lowercase().contains(word), "{word}: {system}");
    }
    assert_eq!(
        h.art.conversation.thread(&h.thread).await.unwrap().title,
        "What is the capital of France?"
    );
    // The record reads back as a direct answer (the run card's note, the printer).
    let recorded = h
        .art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![out.metadata.trace_id.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    let view = art_types::record::view::RunView::of(&h.thread, &out.metadata.trace_id, &recorded);
    assert!(view.direct() && view.plan.is_none(), "{view:?}");

    // Plan first: the planning call comes back.
    let h = harness(
        vec![
            Script::text(&plan_json("Capitals", &[])),
            Script::text("Paris."),
        ],
        &[],
    )
    .await;
    let mut config = h
        .art
        .state
        .load_thread_context(&h.thread)
        .await
        .unwrap()
        .config;
    config.plan_first = true;
    h.art
        .state
        .set_thread_config(&h.thread, &config)
        .await
        .unwrap();
    let out = h
        .art
        .process(props(&h, "And of Spain?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.response.content, "Paris.");
    assert!(!out.metadata.direct);
    assert_eq!(out.metadata.llm_calls, 2);
    assert!(
        kinds(&h, &out.metadata.trace_id)
            .await
            .contains(&ObservationType::Plan)
    );
}

/// A small model out of tokens mid-plan: its cut-off JSON is not shown or used as a
/// plan. The card says the plan could not be read; the run works with the thread's
/// tools in one step instead (the calculator still runs), the answer is told none of
/// the fragments, and the thread is titled from the question, not from "2,3,4".
#[tokio::test]
async fn a_plan_cut_off_mid_json_gives_one_step_with_the_tools_and_says_so() {
    let cut_off = r#"{"title": "2,3,4", "intent": "x", "steps": [{"id": "1", "description": "The secret word is PINEAPPLE", "tools": []}, {"id": "2", "description": "The secret word is PINEAPPLE", "to"#;
    let planning = Script::events(vec![
        StreamEventKind::Token {
            text: cut_off.into(),
            token_type: TokenType::LlmResponse,
        },
        StreamEventKind::Metadata(art_types::LlmMetadata {
            output_tokens: Some(1536),
            stop_reason: Some("length".into()),
            ..Default::default()
        }),
        StreamEventKind::End,
    ]);
    let h = harness(
        vec![
            planning,
            Script::tool_calls(&[("c1", "calculator", json!({ "expression": "2+3+4" }))]),
            Script::text("The sum is 9."),
            Script::text("2 + 3 + 4 = 9."),
        ],
        &["calculator"],
    )
    .await;
    let out = h
        .art
        .process(props(&h, "What is 2+3+4?"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    assert_eq!(out.response.content, "2 + 3 + 4 = 9.");
    assert_eq!(out.metadata.tool_calls, 1);
    let recorded = h
        .art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![out.metadata.trace_id.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    let view = art_types::record::view::RunView::of(&h.thread, &out.metadata.trace_id, &recorded);
    let plan = view.plan.clone().unwrap();
    assert_eq!(
        plan.unread.as_deref(),
        Some("Could not read the plan: one step with the thread's tools instead")
    );
    assert_eq!(plan.title, None);
    assert_eq!(plan.steps.len(), 1, "{:?}", plan.steps);
    assert_eq!(plan.steps[0].tools, ["calculator"]);
    assert_eq!(plan.steps[0].status, art_types::record::StepStatus::Done);
    assert!(view.error.is_none(), "{:?}", view.error);
    // No fragment of the cut-off plan reached a later call.
    for prompt in &h.source.prompts()[1..] {
        assert!(
            prompt.iter().all(|m| !m.content.contains("PINEAPPLE")),
            "{prompt:#?}"
        );
    }
    assert_eq!(
        h.art.conversation.thread(&h.thread).await.unwrap().title,
        "What is 2+3+4?"
    );
}

/// A step that named a tool and called none did not do its work: it is skipped with
/// why, never ticked as done.
#[tokio::test]
async fn a_step_that_named_a_tool_and_called_none_is_not_done() {
    let plan = scripted::steps_json("Sum", &[("1", "Add the numbers", &["calculator"])], &[]);
    let h = harness(
        vec![
            Script::text(&plan),
            Script::text("It is 9, I think."),
            Script::text("9."),
        ],
        &["calculator"],
    )
    .await;
    let out = h
        .art
        .process(
            props(&h, "What is the sum of 2+3+4?"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.metadata.tool_calls, 0);
    let recorded = h
        .art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![out.metadata.trace_id.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    let view = art_types::record::view::RunView::of(&h.thread, &out.metadata.trace_id, &recorded);
    let plan = view.plan.unwrap();
    assert_eq!(plan.steps[0].status, art_types::record::StepStatus::Skipped);
    let outcome = &plan.outcomes["1"];
    assert_eq!(
        outcome.reason.as_deref(),
        Some("the model called no tool (the step named calculator)")
    );
    // "Sum" names what was asked: the plan's title is kept.
    assert_eq!(
        h.art.conversation.thread(&h.thread).await.unwrap().title,
        "Sum"
    );
}
