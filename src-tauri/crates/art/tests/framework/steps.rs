//! The agent working in steps, through the real provider stack over HTTP: each step a
//! loop of native tool calls (in every wire protocol) or calls written as JSON, a step
//! using what an earlier one found, limits, and a step that changes the plan.

use art_testkit::framework::scripted::steps_json;

use std::time::Duration;

use art::observation::ObservationQuery;
use art_testkit::fake::Reply;
use art_testkit::fake::scripts::{text_reply, tool_call_reply};
use art_types::record::StepStatus;
use art_types::{MessageRole, ObservationType, RunLimits, RunStatus, ToolCalling};

use super::stepped::{Stepped, WIRES, statuses};
use serde_json::{Value, json};

/// Three steps: multiply, add to what the first found, and say it (reasoning, done by
/// the answer).
fn three_steps() -> String {
    steps_json(
        "Sums",
        &[
            ("1", "Multiply 6 by 7", &["calculator"]),
            ("2", "Add 100 to that", &["calculator"]),
            ("3", "Say the result", &[]),
        ],
        &[],
    )
}

fn calc(id: &'static str, expression: &str) -> (&'static str, &'static str, Value) {
    (id, "calculator", json!({ "expression": expression }))
}

#[tokio::test]
async fn a_step_uses_what_the_step_before_found_with_native_tool_calls_in_every_wire() {
    for wire_format in WIRES {
        let (name, protocol, _) = wire_format;
        let replies = vec![
            text_reply(protocol, &three_steps(), 9),
            tool_call_reply(protocol, &[calc("c1", "6*7")]),
            text_reply(protocol, "6 times 7 is 42.", 5),
            tool_call_reply(protocol, &[calc("c2", "42 + 100")]),
            text_reply(protocol, "42 plus 100 is 142.", 5),
            text_reply(protocol, "The answer is 142.", 5),
        ];
        let run = Stepped::start(wire_format, replies, |_| {}).await;
        let out = run.ask("What is 6*7, plus 100?").await;
        assert_eq!(
            (out.metadata.status, out.response.content.as_str()),
            (RunStatus::Success, "The answer is 142."),
            "{name}: {:?}",
            out.metadata.error
        );
        assert_eq!(
            (out.metadata.llm_calls, out.metadata.tool_calls),
            (6, 2),
            "{name}"
        );
        let calls = run.calls();
        assert_eq!(calls.len(), 6, "{name}");
        // Each step offers the calculator and update_plan natively.
        for step_call in &calls[1..5] {
            assert!(step_call.body.contains("update_plan"), "{name}");
            assert!(step_call.body.contains("calculator"), "{name}");
        }
        assert!(
            !calls[0].body.contains("update_plan"),
            "{name}: planning offers no tools"
        );
        // Step 2 is asked with step 1's tool result and its output in front of it.
        let step_two = &calls[3].body;
        assert!(step_two.contains("6 times 7 is 42."), "{name}: {step_two}");
        assert!(
            step_two.contains("Now do step 2: Add 100 to that"),
            "{name}"
        );
        assert!(step_two.contains("42"), "{name}");
        // The answer is written from what every step produced.
        assert!(calls[5].body.contains("42 plus 100 is 142."), "{name}");

        let view = run.view(&out).await;
        assert_eq!(
            statuses(&view),
            [
                ("Multiply 6 by 7".to_owned(), StepStatus::Done),
                ("Add 100 to that".to_owned(), StepStatus::Done),
                ("Say the result".to_owned(), StepStatus::Done)
            ],
            "{name}"
        );
        let steps_of_tools: Vec<_> = view.tools.iter().map(|t| t.step_id.clone()).collect();
        assert_eq!(
            steps_of_tools,
            [Some("1".to_owned()), Some("2".to_owned())],
            "{name}"
        );
        let outputs: Vec<_> = view
            .tools
            .iter()
            .map(|t| t.output.as_ref().map(|o| o["result"].clone()))
            .collect();
        assert_eq!(outputs, [Some(json!(42.0)), Some(json!(142.0))], "{name}");
        // Both tool results stay in the thread's history for later questions.
        let history = run
            .art
            .conversation
            .messages(&run.thread, Default::default())
            .await
            .unwrap();
        let roles: Vec<_> = history.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                MessageRole::User,
                MessageRole::Tool,
                MessageRole::Tool,
                MessageRole::Ai
            ],
            "{name}"
        );
    }
}

/// A step's call written as JSON, the way the text form asks for it.
fn written(id: &str, expression: &str) -> String {
    json!({ "toolCalls": [{ "callId": id, "toolName": "calculator", "arguments": { "expression": expression } }] })
        .to_string()
}

#[tokio::test]
async fn a_thread_that_asks_in_text_gets_the_same_steps_without_native_tools() {
    for wire_format in WIRES {
        let (name, protocol, _) = wire_format;
        let replies = vec![
            text_reply(protocol, &three_steps(), 9),
            text_reply(protocol, &written("c1", "6*7"), 9),
            text_reply(protocol, "6 times 7 is 42.", 5),
            text_reply(protocol, &written("c2", "42 + 100"), 9),
            text_reply(protocol, "42 plus 100 is 142.", 5),
            text_reply(protocol, "The answer is 142.", 5),
        ];
        let run =
            Stepped::start(wire_format, replies, |c| c.tool_calling = ToolCalling::Text).await;
        let out = run.ask("What is 6*7, plus 100?").await;
        assert_eq!(
            (out.metadata.status, out.response.content.as_str()),
            (RunStatus::Success, "The answer is 142."),
            "{name}: {:?}",
            out.metadata.error
        );
        let calls = run.calls();
        for step_call in &calls[1..5] {
            assert!(
                !step_call.body.contains("update_plan\",\"description"),
                "{name}"
            );
            assert!(
                step_call.body.contains("toolCalls"),
                "{name}: the format is explained"
            );
        }
        // No native tools in any request: no `tools` (OpenAI, Anthropic, Ollama) and no
        // `functionDeclarations` (Gemini).
        assert!(
            calls.iter().all(|c| c.json().get("tools").is_none()),
            "{name}: no native tools"
        );
        // Step 1's result comes back as a message the model reads, and step 2 is asked
        // with it.
        assert!(
            calls[2].body.contains("Results of your tool calls"),
            "{name}"
        );
        let step_two = &calls[3].body;
        assert!(step_two.contains("6 times 7 is 42."), "{name}: {step_two}");
        assert!(step_two.contains("\\\"result\\\":42"), "{name}: {step_two}");
        let view = run.view(&out).await;
        assert!(
            statuses(&view).iter().all(|(_, s)| *s == StepStatus::Done),
            "{name}"
        );
        assert_eq!(view.tools.len(), 2, "{name}");
    }
}

#[tokio::test]
async fn a_model_whose_server_refuses_tools_is_asked_in_text() {
    let wire_format = WIRES[3];
    let protocol = wire_format.1;
    let refusal =
        json!({ "error": "registry.ollama.ai/library/fake-model does not support tools" });
    let plan = steps_json("Sum", &[("1", "Multiply 6 by 7", &["calculator"])], &[]);
    let replies = vec![
        text_reply(protocol, &plan, 9),
        Reply::error(400, &refusal.to_string()),
        text_reply(protocol, &written("c1", "6*7"), 9),
        text_reply(protocol, "It is 42.", 5),
        text_reply(protocol, "42.", 5),
    ];
    let run = Stepped::start(wire_format, replies, |_| {}).await;
    let out = run.ask("6*7?").await;
    assert_eq!(
        out.metadata.status,
        RunStatus::Success,
        "{:?}",
        out.metadata.error
    );
    assert_eq!(out.metadata.tool_calls, 1);
    let calls = run.calls();
    assert!(
        calls[1].json().get("tools").is_some(),
        "asked natively first"
    );
    assert!(calls[2].json().get("tools").is_none(), "then in text");
    assert!(
        calls[3].json().get("tools").is_none(),
        "for the rest of the run"
    );
}

/// llama.cpp's server without `--jinja` answers a request with tools with HTTP 500:
/// recognised as a refusal at once (no retries of a 500 that will not change), the step
/// is asked in text, and no request after it replays calls natively — neither this
/// run's nor the earlier run's in the thread's history (`tool_calls`, `role: tool`).
#[tokio::test]
async fn llama_cpp_without_jinja_is_asked_in_text_and_gets_no_native_calls_back() {
    let wire_format = WIRES[0];
    let protocol = wire_format.1;
    let plan = steps_json("Sum", &[("1", "Multiply 6 by 7", &["calculator"])], &[]);
    let refusal = json!({ "error": { "code": 500, "message": "tools param requires --jinja flag", "type": "server_error" } });
    let replies = vec![
        // An earlier run, when the server still took tools: a native call in the history.
        text_reply(protocol, &plan, 9),
        tool_call_reply(protocol, &[calc("call_t1", "6*7")]),
        text_reply(protocol, "It is 42.", 5),
        text_reply(protocol, "42.", 5),
        // Now the server refuses tools.
        text_reply(protocol, &plan, 9),
        Reply::error(500, &refusal.to_string()),
        text_reply(protocol, &written("c1", "6*7"), 9),
        text_reply(protocol, "It is 42 again.", 5),
        text_reply(protocol, "42 again.", 5),
    ];
    let run = Stepped::start(wire_format, replies, |_| {}).await;
    let first = run.ask("6*7?").await;
    assert_eq!(first.metadata.status, RunStatus::Success);
    let out = run.ask("And again?").await;
    assert_eq!(
        (out.metadata.status, out.response.content.as_str()),
        (RunStatus::Success, "42 again."),
        "{:?}",
        out.metadata.error
    );
    let calls = run.calls();
    assert_eq!(calls.len(), 9, "the refusal was not retried");
    assert!(
        calls[5].json().get("tools").is_some(),
        "asked natively first"
    );
    for later in &calls[6..] {
        let body = later.json();
        assert!(body.get("tools").is_none());
        let messages = body["messages"].as_array().unwrap();
        assert!(
            messages
                .iter()
                .all(|m| m.get("tool_calls").is_none() && m["role"] != "tool"),
            "{body}"
        );
    }
    // The earlier call went as text the model can read.
    assert!(calls[6].body.contains("call_t1"), "{}", calls[6].body);
}

/// A streamed call cut off by the token limit (`finish_reason: length` with the
/// arguments at `{"`) is reported as cut off, with what to do — not as arguments that
/// fail the schema — and is neither run nor asked about.
#[tokio::test]
async fn a_call_cut_off_by_the_token_limit_says_so() {
    let wire_format = WIRES[0];
    let protocol = wire_format.1;
    let plan = steps_json("Sum", &[("1", "Multiply 6 by 7", &["calculator"])], &[]);
    let chunk = |delta: Value, finish: Value| {
        let choice = json!({ "index": 0, "delta": delta, "finish_reason": finish });
        format!(
            "data: {}\n\n",
            json!({ "id": "c", "object": "chat.completion.chunk", "choices": [choice] })
        )
    };
    let cut = [
        chunk(
            json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_cut", "type": "function", "function": { "name": "calculator", "arguments": "" } }] }),
            Value::Null,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"" } }] }),
            Value::Null,
        ),
        chunk(json!({}), json!("length")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let replies = vec![
        text_reply(protocol, &plan, 9),
        Reply::sse(&cut, 64),
        text_reply(protocol, "I could not finish the call.", 5),
        text_reply(protocol, "Sorry, I was cut off.", 5),
    ];
    let run = Stepped::start(wire_format, replies, |_| {}).await;
    let out = run.ask("6*7?").await;
    let view = run.view(&out).await;
    assert_eq!(view.tools.len(), 1, "{:?}", view.tools);
    let error = view.tools[0].error.clone().unwrap_or_default();
    assert!(error.contains("the call was cut off"), "{error}");
    assert!(error.contains("Max tokens"), "{error}");
    // The model read why, in the step's next request.
    assert!(run.calls()[2].body.contains("the call was cut off"));
}

/// A model that numbers its calls the same way in every run (`call_t1`): Anthropic's
/// API refuses a request holding one `tool_use` id twice, so the ids of a thread's
/// requests stay unique — the new run's call gets another id, and a failed result goes
/// with `is_error`.
#[tokio::test]
async fn tool_ids_stay_unique_across_runs_in_anthropic_requests() {
    let wire_format = WIRES[1];
    let protocol = wire_format.1;
    let plan = steps_json("Sum", &[("1", "Multiply 6 by 7", &["calculator"])], &[]);
    let mut replies = Vec::new();
    for _ in 0..2 {
        replies.extend([
            text_reply(protocol, &plan, 9),
            tool_call_reply(protocol, &[calc("call_t1", "6*")]),
            tool_call_reply(protocol, &[calc("call_t1", "6*7")]),
            text_reply(protocol, "It is 42.", 5),
            text_reply(protocol, "42.", 5),
        ]);
    }
    let run = Stepped::start(wire_format, replies, |_| {}).await;
    for question in ["6*7?", "Again?"] {
        // A failed call makes the run partial; it still answers.
        let out = run.ask(question).await;
        assert_eq!(
            out.metadata.status,
            RunStatus::Partial,
            "{:?}",
            out.metadata.error
        );
        assert_eq!(out.response.content, "42.");
    }
    for call in run.calls() {
        let body = call.json();
        let mut ids = Vec::new();
        for turn in body["messages"].as_array().unwrap() {
            for block in turn["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_use" {
                    ids.push(block["id"].as_str().unwrap().to_owned());
                }
            }
        }
        let unique: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "repeated tool_use ids: {ids:?}");
        // Every result answers a call of the same request.
        for turn in body["messages"].as_array().unwrap() {
            for block in turn["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    let id = block["tool_use_id"].as_str().unwrap().to_owned();
                    assert!(ids.contains(&id), "{id} answers no call: {body}");
                }
            }
        }
    }
    // The step's next request (it offers tools) sends the failed result marked.
    let next = run.calls()[2].json().to_string();
    assert!(
        next.contains(r#""is_error":true"#),
        "the failed call is marked: {next}"
    );
    // The synthesis offers no tools: the calls go as text there, which the API takes.
    let last = run.calls().last().unwrap().json().to_string();
    assert!(
        !last.contains("tool_use") && last.contains("call_t1_3"),
        "{last}"
    );
}

#[tokio::test]
async fn a_step_that_never_ends_fails_at_its_limit_and_the_answer_is_still_written() {
    let wire_format = WIRES[0];
    let protocol = wire_format.1;
    let plan = steps_json(
        "Loop",
        &[
            ("1", "Keep computing", &["calculator"]),
            ("2", "Compute once more", &["calculator"]),
        ],
        &[],
    );
    let replies = vec![
        text_reply(protocol, &plan, 9),
        tool_call_reply(protocol, &[calc("a", "1+1")]),
        tool_call_reply(protocol, &[calc("b", "2+2")]),
        // Step 2 still runs: the limit is per step.
        tool_call_reply(protocol, &[calc("c", "3+3")]),
        text_reply(protocol, "6.", 5),
        text_reply(protocol, "Step one never finished; step two found 6.", 5),
    ];
    let run = Stepped::start(wire_format, replies, |c| {
        c.limits = RunLimits {
            step_iterations: 2,
            ..RunLimits::default()
        };
    })
    .await;
    let out = run.ask("loop").await;
    assert_eq!(out.metadata.status, RunStatus::Partial);
    assert_eq!(
        out.response.content,
        "Step one never finished; step two found 6."
    );
    let view = run.view(&out).await;
    assert_eq!(
        statuses(&view),
        [
            ("Keep computing".to_owned(), StepStatus::Failed),
            ("Compute once more".to_owned(), StepStatus::Done)
        ]
    );
    let plan = view.plan.unwrap();
    let reason = plan.outcomes["1"].reason.clone().unwrap();
    assert_eq!(reason, "the step did not finish within 2 LLM calls");
    assert_eq!(plan.outcomes["1"].iterations, 2);
    // The last call's tool was not run: the step had ended.
    assert_eq!(out.metadata.tool_calls, 2);
    assert!(
        run.calls()[5]
            .body
            .contains("did not finish within 2 LLM calls")
    );
}

#[tokio::test]
async fn the_tool_call_limit_fails_the_step_at_work_and_skips_the_rest() {
    let wire_format = WIRES[0];
    let protocol = wire_format.1;
    let plan = steps_json(
        "Many",
        &[
            ("1", "Compute two things", &["calculator"]),
            ("2", "Compute a third", &["calculator"]),
        ],
        &[calc("a", "1+1"), calc("b", "2+2")],
    );
    let replies = vec![
        text_reply(protocol, &plan, 9),
        text_reply(protocol, "Only 2 was computed.", 5),
    ];
    let run = Stepped::start(wire_format, replies, |c| {
        c.limits = RunLimits {
            tool_calls: 1,
            ..RunLimits::default()
        };
    })
    .await;
    let out = run.ask("many").await;
    assert_eq!(out.metadata.status, RunStatus::Partial);
    assert_eq!(out.metadata.tool_calls, 1, "the second call was not run");
    assert_eq!(out.response.content, "Only 2 was computed.");
    let view = run.view(&out).await;
    assert_eq!(
        statuses(&view),
        [
            ("Compute two things".to_owned(), StepStatus::Failed),
            ("Compute a third".to_owned(), StepStatus::Skipped)
        ]
    );
    let plan = view.plan.unwrap();
    assert_eq!(
        plan.outcomes["2"].reason.as_deref(),
        Some("not started: the run reached its limit of 1 tool calls")
    );
}

#[tokio::test]
async fn token_and_time_budgets_stop_the_steps_but_not_the_answer() {
    let wire_format = WIRES[0];
    let protocol = wire_format.1;
    let plan = || steps_json("Sum", &[("1", "Multiply", &["calculator"])], &[]);
    // Planning alone uses 7 + its words' tokens: more than a budget of 5.
    let run = Stepped::start(
        wire_format,
        vec![
            text_reply(protocol, &plan(), 9),
            text_reply(protocol, "No room to compute.", 5),
        ],
        |c| c.limits.tokens = Some(5),
    )
    .await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Partial);
    assert_eq!(out.response.content, "No room to compute.");
    let view = run.view(&out).await;
    let reason = view.plan.unwrap().outcomes["1"].reason.clone().unwrap();
    assert!(reason.contains("of its budget of 5"), "{reason}");

    // A planner slower than the time budget leaves no time for the step.
    let run = Stepped::start(
        wire_format,
        vec![
            // One piece on the wire, paused before.
            text_reply(protocol, &plan(), 1 << 20).delayed(Duration::from_millis(1_100)),
            text_reply(protocol, "Out of time.", 5),
        ],
        |c| c.limits.seconds = Some(1),
    )
    .await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Partial);
    let view = run.view(&out).await;
    let reason = view.plan.unwrap().outcomes["1"].reason.clone().unwrap();
    assert_eq!(reason, "the run reached its time budget of 1 s");
    assert_eq!(run.calls().len(), 2, "no step call was made");
}

#[tokio::test]
async fn a_step_changes_the_plan_and_the_new_step_runs() {
    let wire_format = WIRES[1];
    let protocol = wire_format.1;
    let plan = steps_json(
        "Check",
        &[
            ("1", "Multiply 6 by 7", &["calculator"]),
            ("2", "Look it up in a table", &["calculator"]),
        ],
        &[],
    );
    let update = json!({
        "steps": [{ "id": "3", "description": "Check by adding 7 six times", "tools": ["calculator"] }],
        "reason": "no table is needed"
    });
    let replies = vec![
        text_reply(protocol, &plan, 9),
        tool_call_reply(protocol, &[calc("c1", "6*7")]),
        tool_call_reply(protocol, &[("u1", "update_plan", update)]),
        text_reply(protocol, "It is 42.", 5),
        tool_call_reply(protocol, &[calc("c2", "7+7+7+7+7+7")]),
        text_reply(protocol, "Checked: 42.", 5),
        text_reply(protocol, "6*7 = 42, checked.", 5),
    ];
    let run = Stepped::start(wire_format, replies, |_| {}).await;
    let out = run.ask("6*7, checked?").await;
    assert_eq!(
        out.metadata.status,
        RunStatus::Success,
        "{:?}",
        out.metadata.error
    );
    assert_eq!(out.metadata.tool_calls, 2, "update_plan is not a tool call");
    let view = run.view(&out).await;
    assert_eq!(
        statuses(&view),
        [
            ("Multiply 6 by 7".to_owned(), StepStatus::Done),
            ("Check by adding 7 six times".to_owned(), StepStatus::Done)
        ]
    );
    let update = view.plan.unwrap().update.unwrap();
    assert_eq!(
        (update.added, update.removed, update.changed.len()),
        (vec!["3".to_owned()], vec!["2".to_owned()], 0)
    );
    assert_eq!(update.reason.as_deref(), Some("no table is needed"));
    assert_eq!(update.step_id.as_deref(), Some("1"));
    // The model was told, as the tool's result, what follows now.
    assert!(run.calls()[3].body.contains("The plan is updated"));
    let kinds: Vec<ObservationType> = run
        .art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![out.metadata.trace_id.clone()],
            types: vec![ObservationType::PlanUpdate],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.kind)
        .collect();
    assert_eq!(kinds, [ObservationType::PlanUpdate]);
}
