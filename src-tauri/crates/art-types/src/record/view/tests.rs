use serde_json::json;

use super::*;
use crate::SpanInfo;

fn obs(kind: ObservationType, content: Value) -> Observation {
    Observation {
        id: "o".into(),
        thread_id: "t".into(),
        trace_id: "r".into(),
        timestamp: 1,
        kind,
        title: "title".into(),
        content,
        metadata: Value::Null,
        span: None,
    }
}

fn steps(run: &RunView) -> Vec<(&str, StepStatus)> {
    let plan = run.plan.as_ref().expect("a plan");
    plan.steps
        .iter()
        .map(|s| (s.description.as_str(), s.status))
        .collect()
}

#[test]
fn an_mcp_call_names_its_server_and_keeps_its_whole_result() {
    let mut run = RunView::new("t", "r");
    let mut done = obs(
        ObservationType::ToolExecution,
        json!({ "callId": "c1", "toolName": "everything__get-tiny-image", "status": "success",
                "output": "[image: image/png, 9 bytes]",
                "result": { "content": [{ "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=" }] } }),
    );
    done.metadata = json!({ "durationMs": 5, "mcp": { "server": "everything", "transport": "stdio", "tool": "get-tiny-image" } });
    assert_eq!(run.apply_observation(&done), Change::Tool(0));
    let card = &run.tools[0];
    assert_eq!(
        card.mcp.as_ref().map(|m| m.server.as_str()),
        Some("everything")
    );
    assert_eq!(card.result.as_ref().unwrap()["content"][0]["type"], "image");
    assert_eq!(card.output, Some(json!("[image: image/png, 9 bytes]")));
}

#[test]
fn progress_says_what_the_run_waits_for() {
    let mut run = RunView::new("t", "r");
    assert!(
        run.progress().starts_with("Waiting for the model"),
        "{}",
        run.progress()
    );
    run.apply_stream(&[StreamEventKind::Token {
        text: "{\"plan".into(),
        token_type: TokenType::AgentThoughtLlmResponse,
    }]);
    assert_eq!(run.progress(), "Planning…");
    run.apply_observation(&obs(
        ObservationType::Plan,
        json!({ "plan": ["add"], "steps": [{ "id": "1", "description": "add", "tools": ["calculator"] }] }),
    ));
    run.apply_observation(&obs(
        ObservationType::Step,
        json!({ "stepId": "1", "status": "in_progress" }),
    ));
    assert_eq!(run.progress(), "Step 1: add…");
    run.apply_observation(&obs(
        ObservationType::ToolCall,
        json!({ "callId": "c1", "toolName": "calculator", "arguments": {}, "stepId": "1" }),
    ));
    assert_eq!(run.progress(), "Running the calculator tool…");
    run.apply_observation(&obs(
        ObservationType::ToolExecution,
        json!({ "callId": "c1", "toolName": "calculator", "status": "success", "output": 4 }),
    ));
    assert_eq!(
        run.tools[0].step_id.as_deref(),
        Some("1"),
        "kept from the call"
    );
    run.apply_observation(&obs(
        ObservationType::Step,
        json!({ "stepId": "1", "status": "done", "output": "4" }),
    ));
    assert_eq!(run.progress(), "Writing the answer…");
}

#[test]
fn a_single_pass_run_folds_into_plan_tools_thinking_and_answer() {
    let mut run = RunView::new("t", "r");
    run.apply_observation(&obs(ObservationType::Title, json!({ "title": "Sum" })));
    run.apply_observation(&obs(
        ObservationType::Plan,
        json!({ "intent": "add", "plan": "1. calculate\n2) answer" }),
    ));
    run.apply_observation(&obs(
        ObservationType::ToolCall,
        json!({ "callId": "c1", "toolName": "calculator", "arguments": { "expression": "2+2" } }),
    ));
    assert_eq!(run.tools[0].state, ToolState::Running);
    let mut done = obs(
        ObservationType::ToolExecution,
        json!({ "callId": "c1", "toolName": "calculator", "status": "success", "output": { "result": 4 } }),
    );
    done.span = Some(SpanInfo {
        phase: crate::Phase::Execution,
        span_id: "s".into(),
        parent_span_id: None,
        start_ms: 10,
        end_ms: Some(13),
    });
    run.apply_observation(&done);
    run.apply_stream(&[
        StreamEventKind::Token {
            text: "{\"plan\"".into(),
            token_type: TokenType::AgentThoughtLlmResponse,
        },
        StreamEventKind::Token {
            text: "hmm".into(),
            token_type: TokenType::FinalSynthesisLlmThinking,
        },
        StreamEventKind::Token {
            text: "It is ".into(),
            token_type: TokenType::FinalSynthesisLlmResponse,
        },
        StreamEventKind::Token {
            text: "4.".into(),
            token_type: TokenType::FinalSynthesisLlmResponse,
        },
    ]);
    run.finish(None);
    let plan = run.plan.clone().unwrap();
    assert_eq!(
        (plan.title.as_deref(), plan.intent.as_deref()),
        (Some("Sum"), Some("add"))
    );
    assert_eq!(
        steps(&run),
        [
            ("calculate", StepStatus::Done),
            ("answer", StepStatus::Done)
        ],
        "a run recorded before steps existed ran its whole plan"
    );
    assert_eq!(
        (run.tools[0].state, run.tools[0].duration_ms),
        (ToolState::Ok, Some(3))
    );
    assert_eq!(run.tools[0].output, Some(json!({ "result": 4 })));
    assert_eq!(
        (run.thinking.as_str(), run.answer.as_str()),
        ("hmm", "It is 4.")
    );
}

#[test]
fn steps_move_on_a_plan_update_replaces_the_list_and_the_end_closes_the_rest() {
    let mut run = RunView::new("t", "r");
    run.apply_observation(&obs(
        ObservationType::Plan,
        json!({ "steps": [
            { "id": "1", "description": "list", "tools": ["ls"] },
            { "id": "2", "description": "read", "tools": ["cat"] },
            { "id": "3", "description": "sum" }
        ] }),
    ));
    let step = |id: &str, status: &str| {
        obs(
            ObservationType::Step,
            json!({ "stepId": id, "status": status }),
        )
    };
    assert_eq!(
        run.apply_observation(&step("1", "in_progress")),
        Change::Step(0)
    );
    assert_eq!(run.apply_observation(&step("1", "done")), Change::Step(0));
    assert_eq!(run.apply_observation(&step("9", "done")), Change::Nothing);
    let update = obs(
        ObservationType::PlanUpdate,
        json!({ "steps": [
            { "id": "1", "description": "list", "status": "done" },
            { "id": "2", "description": "read both", "status": "in_progress" },
            { "id": "4", "description": "compare" }
        ], "added": ["4"], "changed": ["2"], "removed": ["3"], "stepId": "2" }),
    );
    assert_eq!(run.apply_observation(&update), Change::PlanUpdate);
    let plan = run.plan.clone().unwrap();
    assert_eq!(plan.update.as_ref().unwrap().removed, ["3"]);
    run.finish(None);
    assert_eq!(
        steps(&run),
        [
            ("list", StepStatus::Done),
            ("read both", StepStatus::Failed),
            ("compare", StepStatus::Skipped)
        ]
    );
}

#[test]
fn history_left_out_is_read_from_the_final_response() {
    let mut run = RunView::new("t", "r");
    run.apply_observation(&obs(
        ObservationType::FinalResponse,
        json!({ "messageId": "m", "metadata": { "historyLeftOut": 6 } }),
    ));
    assert_eq!(run.history_left_out, 6);
}

#[test]
fn a_recorded_runs_figures_come_from_its_final_response_and_a_live_end_wins() {
    let figures = |model: &str, tokens: u64| {
        json!({
            "threadId": "t", "traceId": "r", "status": "success", "totalDurationMs": 1500,
            "llmCalls": 2, "toolCalls": 1, "model": model,
            "usage": { "inputTokens": tokens, "outputTokens": 5, "thinkingTokens": 0 }
        })
    };
    let end = obs(
        ObservationType::FinalResponse,
        json!({ "messageId": "m", "metadata": figures("m1", 40) }),
    );
    // Read back: the figures recorded, kept when the fold ends without any.
    let read_back = RunView::of("t", "r", std::slice::from_ref(&end));
    let m = read_back.metadata.as_ref().expect("the recorded figures");
    assert_eq!(
        (m.model.as_deref(), m.usage.input_tokens, m.llm_calls),
        (Some("m1"), 40, 2)
    );
    // Live: the end the agent returned is what the card shows.
    let mut live = RunView::new("t", "r");
    live.apply_observation(&end);
    let returned: ExecutionMetadata = serde_json::from_value(figures("m2", 41)).unwrap();
    live.finish(Some(returned));
    assert_eq!(live.metadata.unwrap().usage.input_tokens, 41);
}

#[test]
fn a_plain_answer_without_a_plan_is_no_error_but_is_kept() {
    let mut run = RunView::new("t", "r");
    let mut note = obs(
        ObservationType::Error,
        json!({ "code": "PLANNING_OUTPUT_UNPARSEABLE", "problems": ["no plan"] }),
    );
    note.metadata = json!({ "recoverable": true });
    note.title = "Could not read the plan: answering without one".into();
    // The plan card says so (no error card).
    assert_eq!(run.apply_observation(&note), Change::Plan);
    run.finish(None);
    assert_eq!(run.error, None);
    assert_eq!(run.problems.len(), 1);
    assert_eq!(
        run.plan.and_then(|p| p.unread).as_deref(),
        Some("Could not read the plan: answering without one")
    );
}

#[test]
fn a_direct_answer_says_writing_from_its_first_token() {
    let mut run = RunView::new("t", "r");
    run.apply_stream(&[StreamEventKind::Token {
        text: "Paris".into(),
        token_type: TokenType::FinalSynthesisLlmResponse,
    }]);
    assert_eq!(run.progress(), "Writing the answer…");
}

#[test]
fn errors_end_the_run_and_unfinished_tools_are_closed() {
    let mut run = RunView::new("t", "r");
    run.apply_observation(&obs(
        ObservationType::ToolCall,
        json!({ "callId": "c1", "toolName": "calculator" }),
    ));
    let error = obs(
        ObservationType::Error,
        json!({ "code": "OLLAMA_NOT_RUNNING", "message": "Ollama is not reachable" }),
    );
    assert_eq!(run.apply_observation(&error), Change::Error);
    run.finish(None);
    assert_eq!(run.tools[0].state, ToolState::Error);
    let (code, message) = run.error.clone().unwrap();
    assert_eq!(code, FailureCode::OllamaNotRunning);
    assert_eq!(message, "Ollama is not reachable");
}

#[test]
fn a_waiting_run_keeps_its_card_open_until_the_decision() {
    let mut run = RunView::new("t", "r");
    run.apply_observation(&obs(
        ObservationType::Plan,
        json!({ "steps": [{ "id": "1", "description": "fetch", "tools": ["web__fetch"] }] }),
    ));
    run.apply_observation(&obs(
        ObservationType::Step,
        json!({ "stepId": "1", "status": "in_progress" }),
    ));
    run.apply_observation(&obs(
        ObservationType::ToolCall,
        json!({ "callId": "c1", "toolName": "web__fetch", "arguments": { "url": "https://x" }, "stepId": "1" }),
    ));
    let suspension = obs(
        ObservationType::Suspension,
        json!({ "callId": "c1", "toolName": "web__fetch", "arguments": { "url": "https://x" }, "server": "web", "stepId": "1" }),
    );
    assert_eq!(run.apply_observation(&suspension), Change::Waiting);
    run.finish(None);
    assert_eq!(run.progress(), "Waiting for your approval of web__fetch…");
    assert_eq!(
        steps(&run),
        [("fetch", StepStatus::InProgress)],
        "still at work"
    );
    assert_eq!(run.tools[0].state, ToolState::Running);

    let decision = obs(
        ObservationType::Approval,
        json!({ "callId": "c1", "toolName": "web__fetch", "approved": true, "decidedBy": "user",
                "proposed": { "url": "https://x" }, "arguments": { "url": "https://y" } }),
    );
    assert_eq!(run.apply_observation(&decision), Change::Decided(0));
    assert_eq!(run.waiting, None);
    let approval = run.tools[0].approval.clone().unwrap();
    assert!(approval.approved && approval.edited());
    run.finish(None);
    assert_eq!(steps(&run), [("fetch", StepStatus::Failed)]);
}

#[test]
fn a_run_that_ends_suspended_before_its_suspension_arrives_stays_open() {
    let mut run = RunView::new("t", "r");
    run.apply_observation(&obs(
        ObservationType::Plan,
        json!({ "steps": [{ "id": "1", "description": "fetch", "tools": ["web__fetch"] }] }),
    ));
    run.apply_observation(&obs(
        ObservationType::Step,
        json!({ "stepId": "1", "status": "in_progress" }),
    ));
    let metadata: ExecutionMetadata = serde_json::from_value(json!({
        "threadId": "t", "traceId": "r", "status": "suspended", "totalDurationMs": 5,
        "llmCalls": 1, "toolCalls": 0, "usage": { "inputTokens": 0, "outputTokens": 0, "thinkingTokens": 0 }
    }))
    .unwrap();
    run.finish(Some(metadata));
    assert_eq!(steps(&run), [("fetch", StepStatus::InProgress)]);
}

#[test]
fn a_plan_in_review_waits_and_the_users_word_is_kept() {
    let mut run = RunView::new("t", "r");
    let review = obs(
        ObservationType::PlanReview,
        json!({ "steps": [{ "id": "1", "description": "fetch", "tools": ["web__fetch"] }] }),
    );
    assert_eq!(run.apply_observation(&review), Change::Review);
    run.finish(None);
    assert!(run.waits_for_review());
    assert_eq!(run.progress(), "Waiting for your word on the plan…");
    assert_eq!(
        steps(&run),
        [("fetch", StepStatus::Pending)],
        "still to run"
    );
    let word = obs(
        ObservationType::Approval,
        json!({ "callId": "plan", "toolName": "plan", "approved": true, "decidedBy": "user",
                "proposed": { "steps": ["fetch"] }, "arguments": { "steps": ["fetch twice"] } }),
    );
    assert_eq!(run.apply_observation(&word), Change::Review);
    assert!(!run.waits_for_review());
    assert!(run.tools.is_empty(), "the plan is no tool");
    assert!(run.plan.unwrap().review.unwrap().edited());
}

#[test]
fn a_servers_question_sits_on_its_call_card_until_it_is_answered() {
    let mut run = RunView::new("t", "r");
    let call = obs(
        ObservationType::ToolCall,
        json!({ "callId": "c1", "toolName": "everything__ask", "arguments": {} }),
    );
    run.apply_observation(&call);
    let asked = obs(
        ObservationType::Elicitation,
        json!({ "questionId": "q1", "callId": "c1", "toolName": "everything__ask",
                "question": { "server": "everything", "message": "Your name?",
                              "fields": [{ "name": "name", "required": true, "kind": { "type": "text" } }] } }),
    );
    assert_eq!(run.apply_observation(&asked), Change::Tool(0));
    let card = run.tools[0]
        .question
        .as_ref()
        .expect("the question on the card");
    assert_eq!(card.asked.question.message, "Your name?");
    assert!(card.outcome.is_none());
    assert_eq!(
        run.progress(),
        "The everything server asks you something (on the everything__ask card)…"
    );
    // An answer to another question changes nothing; this one's is kept.
    let other = obs(
        ObservationType::ElicitationAnswer,
        json!({ "questionId": "q0", "callId": "c1", "outcome": { "kind": "answered", "answer": { "action": "decline" } } }),
    );
    assert_eq!(run.apply_observation(&other), Change::Nothing);
    let answered = obs(
        ObservationType::ElicitationAnswer,
        json!({ "questionId": "q1", "callId": "c1",
                "outcome": { "kind": "answered", "answer": { "action": "accept", "values": { "name": "Ada" } } } }),
    );
    assert_eq!(run.apply_observation(&answered), Change::Tool(0));
    let outcome = run.tools[0].question.as_ref().unwrap().outcome.clone();
    let Some(crate::mcp::question::QuestionOutcome::Answered {
        answer: crate::mcp::elicit::ElicitAnswer::Accept(values),
    }) = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!(values["name"], "Ada");
    assert_eq!(run.progress(), "Running the everything__ask tool…");
}
