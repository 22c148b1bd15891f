//! Approval before a tool runs, through the real provider stack over HTTP: a call whose
//! policy is `ask` suspends the run; approve, edit, deny and "always" continue it; a
//! `deny` policy refuses without asking; a run that waits survives a restart (the
//! database reopened) and can be stopped. Every decision is an APPROVAL observation.

use art_testkit::framework::scripted::steps_json;

use art::agent::{AgentError, CancellationToken};
use art::export::{Format, Options, Redactor, Scope};
use art::observation::ObservationQuery;
use art_testkit::fake::scripts::{text_reply, tool_call_reply};
use art_types::approval::{ApprovalContent, ApprovalDecision, Decider, ToolPolicy};
use art_types::record::StepStatus;
use art_types::{ObservationType, RunStatus};
use serde_json::{Value, json};

use super::stepped::{Stepped, WIRES, statuses};

fn calc(id: &'static str, expression: &str) -> (&'static str, &'static str, Value) {
    (id, "calculator", json!({ "expression": expression }))
}

fn one_step() -> String {
    steps_json("Sum", &[("1", "Multiply 6 by 7", &["calculator"])], &[])
}

/// A thread that asks before the calculator runs, the model calling it once (6*7),
/// then ending its step and answering with `after`.
async fn asking(after: &[&str]) -> Stepped {
    let protocol = WIRES[0].1;
    let mut replies = vec![
        text_reply(protocol, &one_step(), 9),
        tool_call_reply(protocol, &[calc("c1", "6*7")]),
    ];
    replies.extend(after.iter().map(|t| text_reply(protocol, t, 5)));
    Stepped::start(WIRES[0], replies, |c| {
        c.tool_policies.insert("calculator".into(), ToolPolicy::Ask);
    })
    .await
}

async fn decisions(run: &Stepped, trace: &str) -> Vec<ApprovalContent> {
    run.art
        .observations
        .query(&ObservationQuery {
            trace_ids: vec![trace.to_owned()],
            types: vec![ObservationType::Approval],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| serde_json::from_value(o.content).unwrap())
        .collect()
}

fn approve(arguments: Option<Value>, always: bool) -> ApprovalDecision {
    ApprovalDecision::Approve { arguments, always }
}

#[tokio::test]
async fn ask_suspends_before_the_call_and_approving_runs_it_and_goes_on() {
    let run = asking(&["It is 42.", "6*7 = 42."]).await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Suspended);
    assert_eq!(out.metadata.tool_calls, 0, "nothing ran yet");
    let waiting = run.art.waiting(&run.thread).await.unwrap().unwrap();
    assert_eq!(waiting.trace_id, out.metadata.trace_id);
    let waiting = waiting.call;
    assert_eq!(
        (waiting.tool_name.as_str(), &waiting.arguments),
        ("calculator", &json!({ "expression": "6*7" }))
    );
    assert!(waiting.input_schema["properties"]["expression"].is_object());
    // The card waits, with its step at work, whatever the view folds.
    let view = run.view(&out).await;
    assert_eq!(view.waiting.as_ref().unwrap().call_id, waiting.call_id);
    assert_eq!(statuses(&view)[0].1, StepStatus::InProgress);
    // A new question must wait for the decision (the app asks `ready` first).
    let not_yet = run.art.ready(&run.thread).await;
    assert!(
        matches!(not_yet, Err(AgentError::AwaitingApproval(_))),
        "{not_yet:?}"
    );
    let props = art_testkit::framework::adapters::ask(&run.thread, "another?");
    let refused = run.art.process(props, CancellationToken::new()).await;
    assert!(matches!(refused, Err(AgentError::AwaitingApproval(t)) if t == "calculator"));
    // Nor may its branch move: the run adds to the branch it started on.
    let question = run
        .art
        .conversation
        .last_question(&run.thread)
        .await
        .unwrap()
        .unwrap();
    let moved = run
        .art
        .switch_branch(&run.thread, &question.message_id)
        .await;
    assert!(
        matches!(moved, Err(AgentError::AwaitingApproval(_))),
        "{moved:?}"
    );

    let done = run
        .art
        .resume(&run.thread, approve(None, false), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        done.metadata.status,
        RunStatus::Success,
        "{:?}",
        done.metadata.error
    );
    assert_eq!(
        done.metadata.trace_id, out.metadata.trace_id,
        "the same run"
    );
    assert_eq!(done.response.content, "6*7 = 42.");
    assert_eq!(done.metadata.tool_calls, 1);
    assert_eq!(done.metadata.llm_calls, 4, "plan, two step calls, answer");
    assert!(run.art.waiting(&run.thread).await.unwrap().is_none());
    run.art.ready(&run.thread).await.unwrap();
    // A thread without a provider and model cannot start a run.
    let bare = run.art.conversation.create_thread(None).await.unwrap();
    let refused = run.art.ready(&bare.thread_id).await;
    assert!(
        matches!(refused, Err(AgentError::NotConfigured)),
        "{refused:?}"
    );
    let trail = decisions(&run, &out.metadata.trace_id).await;
    assert_eq!(trail.len(), 1);
    assert!(trail[0].approved && !trail[0].edited());
    assert_eq!(trail[0].decided_by, Decider::User);
    let view = run.view(&done).await;
    assert_eq!(
        statuses(&view),
        [("Multiply 6 by 7".to_owned(), StepStatus::Done)]
    );
    assert!(view.tools[0].approval.as_ref().unwrap().approved);
    // Resuming twice is a clear error, not a second run.
    let again = run
        .art
        .resume(&run.thread, approve(None, false), CancellationToken::new())
        .await;
    assert!(matches!(again, Err(AgentError::NothingWaiting(_))));
}

#[tokio::test]
async fn edited_arguments_are_checked_then_run_and_the_trail_keeps_both() {
    let run = asking(&["It is 49.", "7*7 = 49."]).await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Suspended);
    let wrong = run
        .art
        .resume(
            &run.thread,
            approve(Some(json!({ "expr": 1 })), false),
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(wrong, Err(AgentError::InvalidInput(_))),
        "{wrong:?}"
    );
    assert!(
        run.art.waiting(&run.thread).await.unwrap().is_some(),
        "still waiting"
    );
    let done = run
        .art
        .resume(
            &run.thread,
            approve(Some(json!({ "expression": "7*7" })), false),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(done.metadata.status, RunStatus::Success);
    let view = run.view(&done).await;
    assert_eq!(
        view.tools[0].output.as_ref().unwrap()["result"],
        json!(49.0)
    );
    let trail = decisions(&run, &out.metadata.trace_id).await;
    assert!(trail[0].edited());
    assert_eq!(trail[0].proposed, json!({ "expression": "6*7" }));
    assert_eq!(trail[0].arguments, Some(json!({ "expression": "7*7" })));
    // The model sees the call as it ran.
    assert!(run.calls()[2].body.contains("7*7"));

    // Every export format keeps the decision.
    let scope = Scope::Thread(run.thread.clone());
    let redactor = Redactor::new(Vec::new());
    let text = |format| {
        super::export::export_to_string(&run.art, &scope, format, Options::default(), &redactor)
    };
    let markdown = text(Format::Markdown).await;
    assert!(
        markdown.contains("approved by the user, arguments edited)"),
        "{markdown}"
    );
    // What ran is what is shown, and what was proposed beside it.
    let (ran, proposed) = markdown
        .split_once("Arguments the model proposed:")
        .expect("both argument blocks");
    assert!(ran.contains("Arguments (as edited by the user; these ran):"));
    assert!(ran.rsplit("these ran):").next().unwrap().contains("7*7"));
    assert!(proposed.split("```").nth(1).unwrap().contains("6*7"));
    assert_eq!(view.tools[0].arguments, json!({ "expression": "7*7" }));
    assert!(view.tools[0].edited());
    let otlp = text(Format::Otlp).await;
    assert!(otlp.contains(r#""name":"APPROVAL""#), "{otlp}");
    assert!(otlp.contains(r#"{"key":"art.approval.approved","value":{"boolValue":true}}"#));
    assert!(otlp.contains(r#"{"key":"art.approval.decided_by","value":{"stringValue":"user"}}"#));
    let jsonl = text(Format::Jsonl).await;
    assert!(jsonl.contains(r#""type":"APPROVAL""#) && jsonl.contains(r#""type":"SUSPENSION""#));
}

#[tokio::test]
async fn a_denial_with_a_reason_is_the_tools_result_for_the_model() {
    let run = asking(&["I may not compute it.", "I was not allowed to compute it."]).await;
    run.ask("6*7?").await;
    let reason = "not with this tool";
    let done = run
        .art
        .resume(
            &run.thread,
            ApprovalDecision::Deny {
                reason: Some(reason.into()),
            },
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(done.metadata.status, RunStatus::Partial, "a refused call");
    assert_eq!(done.metadata.tool_calls, 0, "nothing ran");
    let told = &run.calls()[2].body;
    assert!(
        told.contains("the user did not let `calculator` run: not with this tool"),
        "{told}"
    );
    let trail = decisions(&run, &done.metadata.trace_id).await;
    assert!(!trail[0].approved);
    assert_eq!(trail[0].reason.as_deref(), Some(reason));
}

#[tokio::test]
async fn always_allow_lets_the_tool_run_without_asking_from_then_on() {
    let protocol = WIRES[0].1;
    let replies = vec![
        text_reply(protocol, &one_step(), 9),
        tool_call_reply(protocol, &[calc("c1", "6*7")]),
        tool_call_reply(protocol, &[calc("c2", "42+1")]),
        text_reply(protocol, "43.", 5),
        text_reply(protocol, "43.", 5),
    ];
    let run = Stepped::start(WIRES[0], replies, |c| {
        c.tool_policies.insert("calculator".into(), ToolPolicy::Ask);
    })
    .await;
    run.ask("6*7+1?").await;
    let done = run
        .art
        .resume(&run.thread, approve(None, true), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        done.metadata.status,
        RunStatus::Success,
        "{:?}",
        done.metadata.error
    );
    assert_eq!(done.metadata.tool_calls, 2, "the second call did not ask");
    let config = run
        .art
        .state
        .load_thread_context(&run.thread)
        .await
        .unwrap()
        .config;
    assert_eq!(config.tool_policies["calculator"], ToolPolicy::Auto);
    let trail = decisions(&run, &done.metadata.trace_id).await;
    assert_eq!(trail.len(), 1);
    assert!(trail[0].always);
}

#[tokio::test]
async fn a_deny_policy_refuses_without_asking_and_the_model_is_told() {
    let protocol = WIRES[0].1;
    let replies = vec![
        text_reply(protocol, &one_step(), 9),
        tool_call_reply(protocol, &[calc("c1", "6*7")]),
        text_reply(protocol, "The calculator may not run.", 5),
        text_reply(protocol, "I could not compute it.", 5),
    ];
    let run = Stepped::start(WIRES[0], replies, |c| {
        c.tool_policies
            .insert("calculator".into(), ToolPolicy::Deny);
    })
    .await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Partial);
    assert_eq!(out.response.content, "I could not compute it.");
    let view = run.view(&out).await;
    let card = &view.tools[0];
    assert_eq!(
        card.error.as_deref(),
        Some("`calculator` may not run in this thread (its policy is deny)")
    );
    assert_eq!(card.approval.as_ref().unwrap().decided_by, Decider::Policy);
    assert!(run.calls()[2].body.contains("its policy is deny"));
}

#[tokio::test]
async fn a_waiting_run_survives_a_restart_and_goes_on_or_is_stopped() {
    let mut run = asking(&["It is 42.", "6*7 = 42."]).await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Suspended);
    run.reopen(WIRES[0].0);
    let waiting = run.art.waiting(&run.thread).await.unwrap();
    assert_eq!(
        waiting.unwrap().call.tool_name,
        "calculator",
        "still waiting"
    );
    let done = run
        .art
        .resume(&run.thread, approve(None, false), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        done.metadata.status,
        RunStatus::Success,
        "{:?}",
        done.metadata.error
    );
    assert_eq!(done.response.content, "6*7 = 42.");

    // Stopped instead: the run ends as stopped, the thread takes new questions.
    let mut run = asking(&[]).await;
    let out = run.ask("6*7?").await;
    run.reopen(WIRES[0].0);
    let stopped = run.art.stop_waiting(&run.thread).await.unwrap().unwrap();
    assert_eq!(stopped.metadata.status, RunStatus::Error);
    assert_eq!(stopped.metadata.trace_id, out.metadata.trace_id);
    assert!(run.art.waiting(&run.thread).await.unwrap().is_none());
    assert!(run.art.stop_waiting(&run.thread).await.unwrap().is_none());
    let view = run.view(&out).await;
    assert_eq!(view.waiting, None);
    assert_eq!(statuses(&view)[0].1, StepStatus::Failed);
    // Its question got no answer: marked, like a failed one (shown with Retry, left
    // out of later questions).
    let messages = run
        .art
        .conversation
        .messages(&run.thread, art::context::MessageOptions::default())
        .await
        .unwrap();
    let question = messages
        .iter()
        .find(|m| m.role == art_types::MessageRole::User)
        .unwrap();
    assert_eq!(
        question.status,
        art_types::MessageStatus::Failed,
        "{question:?}"
    );
}

#[tokio::test]
async fn the_plan_checkpoint_runs_the_plan_as_edited_or_cancels_the_run() {
    let protocol = WIRES[0].1;
    let plan = steps_json(
        "Sums",
        &[
            ("1", "Multiply 6 by 7", &["calculator"]),
            ("2", "Look it up in a table", &["calculator"]),
        ],
        &[calc("c1", "6*7")],
    );
    let replies = vec![
        text_reply(protocol, &plan, 9),
        // The edited plan: step 2 dropped, a new step first, then step 1.
        tool_call_reply(protocol, &[calc("c2", "7+7+7+7+7+7")]),
        text_reply(protocol, "Adding gives 42.", 5),
        tool_call_reply(protocol, &[calc("c3", "6*7")]),
        text_reply(protocol, "Multiplying gives 42.", 5),
        text_reply(protocol, "42, checked twice.", 5),
    ];
    let run = Stepped::start(WIRES[0], replies, |c| c.plan_checkpoint = true).await;
    let out = run.ask("6*7?").await;
    assert_eq!(out.metadata.status, RunStatus::Suspended);
    assert_eq!(out.metadata.tool_calls, 0, "no step ran before the review");
    let waiting = run.art.waiting(&run.thread).await.unwrap().unwrap().call;
    assert_eq!(waiting.tool_name, "plan");
    assert_eq!(
        waiting.arguments,
        json!({ "steps": ["Multiply 6 by 7", "Look it up in a table"] })
    );
    let view = run.view(&out).await;
    assert!(view.waits_for_review());
    // An empty plan is refused; the run keeps waiting.
    let empty = approve(Some(json!({ "steps": [] })), false);
    let refused = run
        .art
        .resume(&run.thread, empty, CancellationToken::new())
        .await;
    assert!(
        matches!(refused, Err(AgentError::InvalidInput(_))),
        "{refused:?}"
    );
    let edited = json!({ "steps": ["Add 7 six times", "Multiply 6 by 7"] });
    let done = run
        .art
        .resume(
            &run.thread,
            approve(Some(edited.clone()), false),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        done.metadata.status,
        RunStatus::Success,
        "{:?}",
        done.metadata.error
    );
    assert_eq!(done.response.content, "42, checked twice.");
    assert_eq!(done.metadata.tool_calls, 2);
    let view = run.view(&done).await;
    assert_eq!(
        statuses(&view),
        [
            ("Add 7 six times".to_owned(), StepStatus::Done),
            ("Multiply 6 by 7".to_owned(), StepStatus::Done)
        ]
    );
    let card = view.plan.unwrap();
    let review = card.review.unwrap();
    assert!(review.approved && review.edited());
    assert_eq!(review.arguments, Some(edited));
    let update = card.update.unwrap();
    assert_eq!(update.removed, ["2"]);
    assert_eq!(update.added.len(), 1);
    // The planner's call belonged to "Multiply 6 by 7" as the first step: not run
    // without the model once another step comes first.
    assert!(view.tools.iter().all(|t| t.call_id != "c1"));

    // Cancelled: no step runs, the run ends as stopped.
    let run = Stepped::start(WIRES[0], vec![text_reply(protocol, &plan, 9)], |c| {
        c.plan_checkpoint = true
    })
    .await;
    run.ask("6*7?").await;
    let cancel = ApprovalDecision::Deny {
        reason: Some("not now".into()),
    };
    let stopped = run
        .art
        .resume(&run.thread, cancel, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(stopped.metadata.status, RunStatus::Error);
    assert_eq!(stopped.metadata.tool_calls, 0);
    let trail = decisions(&run, &stopped.metadata.trace_id).await;
    assert_eq!(
        (trail[0].tool_name.as_str(), trail[0].approved),
        ("plan", false)
    );
    assert!(run.art.waiting(&run.thread).await.unwrap().is_none());
}

/// Plan review waits for an empty plan too: the user may add the steps the model did
/// not plan, and the run works through them.
#[tokio::test]
async fn an_empty_plan_waits_for_review_and_the_user_may_add_steps() {
    let protocol = WIRES[0].1;
    let empty = steps_json("Answer", &[], &[]);
    let replies = vec![
        text_reply(protocol, &empty, 9),
        // The added step may use the thread's tools: a step call, then the answer.
        text_reply(protocol, "It is 42.", 5),
        text_reply(protocol, "6 times 7 is 42.", 5),
    ];
    let run = Stepped::start(WIRES[0], replies, |c| c.plan_checkpoint = true).await;
    let out = run.ask("6*7?").await;
    assert_eq!(
        out.metadata.status,
        RunStatus::Suspended,
        "{:?}",
        out.metadata.error
    );
    let added = json!({ "steps": ["Say what 6 times 7 is"] });
    let done = run
        .art
        .resume(
            &run.thread,
            approve(Some(added), false),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        done.metadata.status,
        RunStatus::Success,
        "{:?}",
        done.metadata.error
    );
    assert_eq!(done.response.content, "6 times 7 is 42.");
    let view = run.view(&done).await;
    let steps = statuses(&view);
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0].1, StepStatus::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_runs_ended_spans_are_pushed_then_the_rest_once_it_ends() {
    use art::push::{TracePush, outbox};
    use art_testkit::otlp::OtlpReceiver;
    use std::collections::HashMap;
    use std::time::Duration;

    let run = asking(&["It is 42.", "6*7 = 42."]).await;
    let receiver = OtlpReceiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let push = TracePush::open(&dir.path().join(outbox::FILE)).unwrap();
    let settings = art_types::push::PushSettings {
        enabled: true,
        endpoint: receiver.url(),
        ..Default::default()
    };
    push.configure(&settings, &[]).unwrap();
    let stop = CancellationToken::new();
    tokio::spawn(std::sync::Arc::clone(&push).run(stop.clone()));
    let redactor = Redactor::new(Vec::new());

    // Watched from its start, as the app does: queuing it reads nothing back.
    let trace = art::clock::new_id();
    push.watch(&run.art, &run.thread, &trace);
    let mut props = art_testkit::framework::adapters::ask(&run.thread, "6*7?");
    props.trace_id = Some(trace.clone());
    let out = run
        .art
        .process(props, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata.status, RunStatus::Suspended);
    let early = push
        .run_waiting(&run.art, &redactor, &run.thread, &trace)
        .await
        .unwrap();
    assert!(early > 0, "the plan and its model call ended");
    let tap = run.art.observations.tap();
    assert!(
        tap.take(&trace, true).is_some(),
        "still kept while it waits"
    );
    assert_eq!(
        receiver.wait_for(early, Duration::from_secs(30)).await,
        early
    );
    // What is still open — the run, the step waiting on the call — is not sent yet.
    let names: Vec<String> = receiver.spans().into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"plan".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("invoke_agent")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n == "execute"), "{names:?}");

    run.art
        .resume(&run.thread, approve(None, false), CancellationToken::new())
        .await
        .unwrap();
    let rest = push
        .run_ended(&run.art, &redactor, &run.thread, &trace)
        .await
        .unwrap();
    assert!(
        tap.take(&trace, false).is_none(),
        "handed over once it ended"
    );
    assert_eq!(
        receiver
            .wait_for(early + rest, Duration::from_secs(30))
            .await,
        early + rest
    );
    // Together, every span of the run as a file export has it, each once, all ended.
    let text = crate::export::export_to_string(
        &run.art,
        &Scope::Trace(trace),
        Format::Otlp,
        Options::default(),
        &redactor,
    )
    .await;
    let data: opentelemetry_proto::tonic::trace::v1::TracesData =
        serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let whole: Vec<_> = data.resource_spans[0].scope_spans[0].spans.clone();
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
    for span in receiver.spans() {
        assert!(
            !span
                .attributes
                .iter()
                .any(|kv| kv.key == art::export::otlp::OPEN),
            "{} was sent open",
            span.name
        );
        *seen.entry(span.span_id).or_default() += 1;
    }
    assert_eq!(seen.len(), whole.len(), "{seen:?}");
    assert!(seen.values().all(|n| *n == 1), "{seen:?}");
    assert!(whole.iter().all(|s| seen.contains_key(&s.span_id)));
    stop.cancel();
}
