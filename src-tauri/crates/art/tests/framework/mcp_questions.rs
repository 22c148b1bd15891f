//! A server's question in the middle of a tool call (MCP elicitation), answered the way
//! the app answers it: the reference server `@modelcontextprotocol/server-everything`
//! (npm) asks its form during `trigger-elicitation-request`; the question is recorded on
//! the run (ELICITATION), waits on the call for [`Answers::answer`] — values that do not
//! fit are refused and it keeps waiting — while the call's time limit stands still; the
//! server gets the answer, and the run records what became of it (ELICITATION_ANSWER).
//! A run stopped while its question waits ends the question, recorded as such.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::export::{self, Format, Options, Redactor, Scope};
use art::observation::ObservationQuery;
use art::storage::sqlite::SqliteStorage;
use art::tools::mcp::{AnswerError, Answers};
use art_testkit::framework::scripted::{self, Script, ScriptedSource, plan_json};
use art_testkit::mcp::{self as servers, marker, settle};
use art_types::mcp::elicit::ElicitAnswer;
use art_types::mcp::question::{AnsweredContent, QuestionContent, QuestionOutcome};
use art_types::{AgentProps, ObservationType, RunStatus};
use serde_json::{Map, Value, json};

const TOOL: &str = "everything__trigger-elicitation-request";

/// The data directory, the instance, its questions, the thread and the servers' marker.
type Asking = (
    tempfile::TempDir,
    Arc<ArtInstance>,
    Arc<Answers>,
    String,
    String,
);

/// An instance whose model, in each of `runs` runs, plans one call of the asking tool
/// and then answers; the server's calls may take `timeout_secs`; questions go to the
/// returned [`Answers`].
async fn asking_run(timeout_secs: u32, runs: usize) -> Asking {
    asking_runs(timeout_secs, &vec![(TOOL, json!({})); runs]).await
}

/// An instance whose model, in one run per entry of `calls`, calls that tool with those
/// arguments and then answers.
async fn asking_runs(timeout_secs: u32, calls: &[(&str, Value)]) -> Asking {
    let mark = marker();
    asking_runs_on(
        servers::everything("everything", &mark),
        mark,
        timeout_secs,
        calls,
    )
    .await
}

/// [`asking_runs`] with `config`'s server (marked `mark`).
async fn asking_runs_on(
    mut config: art_types::mcp::McpServerConfig,
    mark: String,
    timeout_secs: u32,
    calls: &[(&str, Value)],
) -> Asking {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let scripts = calls
        .iter()
        .flat_map(|(tool, arguments)| {
            let plan = plan_json("Ask", &[("c1", tool, arguments.clone())]);
            [Script::text(&plan), Script::text("Thanks.")]
        })
        .collect();
    let source = Arc::new(ScriptedSource::new(scripts));
    let art = Arc::new(ArtInstance::builder(storage, source).build().unwrap());
    let answers = Arc::new(Answers::default());
    art.mcp.set_elicitor(Arc::clone(&answers) as _);
    config.timeout_secs = timeout_secs;
    art.mcp
        .store()
        .save(&config, &BTreeMap::new())
        .await
        .unwrap();
    art.mcp.start(&config.name).await.unwrap();
    // The server adds the tools once it knows the client takes questions.
    let tools: Vec<&str> = calls.iter().map(|(tool, _)| *tool).collect();
    for _ in 0..100 {
        if tools.iter().all(|t| art.tools.contains(t)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        tools.iter().all(|t| art.tools.contains(t)),
        "the asking tools are offered"
    );
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let mut thread_config = scripted::thread_config("m", &tools);
    for tool in &tools {
        thread_config
            .tool_policies
            .insert((*tool).into(), art_types::approval::ToolPolicy::Auto);
    }
    art.state
        .set_thread_config(&thread, &thread_config)
        .await
        .unwrap();
    (dir, art, answers, thread, mark)
}

fn props(thread: &str) -> AgentProps {
    AgentProps {
        query: "Ask me".into(),
        thread_id: thread.to_owned(),
        trace_id: Some(format!("run-{}", marker())),
        options: Default::default(),
        attachments: Vec::new(),
    }
}

/// The question that waits, once it does.
async fn waiting_question(answers: &Answers) -> String {
    for _ in 0..200 {
        if let Some(id) = answers.waiting().pop() {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no question came");
}

async fn observed(art: &ArtInstance, trace: &str, kind: ObservationType) -> Vec<Value> {
    for _ in 0..100 {
        let found = art
            .observations
            .query(&ObservationQuery {
                trace_ids: vec![trace.to_owned()],
                types: vec![kind],
                ..Default::default()
            })
            .await
            .unwrap();
        if !found.is_empty() {
            return found.into_iter().map(|o| o.content).collect();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Vec::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_waits_on_its_call_is_answered_and_recorded_on_the_run() {
    // A 1 s limit: the answer comes after it, which the user's time does not count.
    let (_dir, art, answers, thread, mark) = asking_run(1, 1).await;
    let props = props(&thread);
    let trace = props.trace_id.clone().unwrap();
    let run = {
        let art = Arc::clone(&art);
        tokio::spawn(async move { art.process(props, CancellationToken::new()).await })
    };
    let id = waiting_question(&answers).await;
    let asked: QuestionContent = serde_json::from_value(
        observed(&art, &trace, ObservationType::Elicitation).await[0].clone(),
    )
    .unwrap();
    assert_eq!(asked.question_id, id);
    assert_eq!(
        (asked.call_id.as_str(), asked.tool_name.as_str()),
        ("c1", TOOL)
    );
    assert_eq!(asked.question.server, "everything");
    let name = asked
        .question
        .fields
        .iter()
        .find(|f| f.name == "name")
        .unwrap();
    assert!(name.required);
    assert!(
        asked.question.fields.len() >= 10,
        "{:?}",
        asked.question.fields
    );

    // Values that do not fit: refused, and it still waits.
    let mut values = Map::new();
    let refused = answers.answer(&id, ElicitAnswer::Accept(values.clone()));
    assert!(
        matches!(&refused, Err(AnswerError::Invalid(why)) if why.contains("required")),
        "{refused:?}"
    );
    values.insert("name".into(), json!("Ada Lovelace"));
    values.insert("integer".into(), json!(500));
    let refused = answers.answer(&id, ElicitAnswer::Accept(values.clone()));
    assert!(
        matches!(&refused, Err(AnswerError::Invalid(why)) if why.contains("between")),
        "{refused:?}"
    );
    assert_eq!(answers.waiting(), vec![id.clone()]);

    // Past the call's limit, the user answers: the call goes on.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    values.insert("integer".into(), json!(7));
    answers.answer(&id, ElicitAnswer::Accept(values)).unwrap();
    assert_eq!(
        answers.answer(&id, ElicitAnswer::Decline),
        Err(AnswerError::NotWaiting)
    );
    let out = run.await.unwrap().unwrap();
    assert_eq!(
        out.metadata.status,
        RunStatus::Success,
        "{:?}",
        out.metadata.error
    );
    let executed = observed(&art, &trace, ObservationType::ToolExecution).await;
    assert_eq!(executed[0]["status"], "success", "{}", executed[0]);
    let said = executed[0]["output"].as_str().unwrap();
    assert!(
        said.contains("Name: Ada Lovelace") && said.contains("Favorite Integer: 7"),
        "{said}"
    );
    // Defaults the form showed went with the answer.
    assert!(said.contains(r#""legacyTitledEnum": "pet-1""#), "{said}");
    let answered: AnsweredContent = serde_json::from_value(
        observed(&art, &trace, ObservationType::ElicitationAnswer).await[0].clone(),
    )
    .unwrap();
    assert_eq!(answered.question_id, id);
    let QuestionOutcome::Answered {
        answer: ElicitAnswer::Accept(sent),
    } = answered.outcome
    else {
        panic!("{answered:?}");
    };
    assert_eq!(sent["name"], "Ada Lovelace");
    // In the exports: the question and its answer on the call (Markdown), as events
    // naming the call (OTLP).
    let exported = |format| {
        let art = Arc::clone(&art);
        let trace = trace.clone();
        async move {
            let mut bytes = Vec::new();
            export::export(
                &art,
                &Scope::Trace(trace),
                format,
                Options::default(),
                &Redactor::new(Vec::new()),
                &mut bytes,
                &mut |_| {},
            )
            .await
            .unwrap();
            String::from_utf8(bytes).unwrap()
        }
    };
    let markdown = exported(Format::Markdown).await;
    assert!(
        markdown.contains("> MCP server `everything` asked the user: Please provide inputs")
            && markdown.contains("> You answered — ")
            && markdown.contains("name: Ada Lovelace"),
        "{markdown}"
    );
    let otlp = exported(Format::Otlp).await;
    for event in ["ELICITATION", "ELICITATION_ANSWER"] {
        assert!(
            otlp.contains(&format!(r#""name":"{event}""#)),
            "{event} in {otlp}"
        );
    }
    assert!(otlp.contains(r#""key":"gen_ai.tool.call.id","value":{"stringValue":"c1"}"#));
    art.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_question_and_a_stopped_run_are_recorded_as_such() {
    let (_dir, art, answers, thread, mark) = asking_run(60, 2).await;
    // Declined: the server hears it and says so in its result.
    let declined = props(&thread);
    let trace = declined.trace_id.clone().unwrap();
    let run = {
        let art = Arc::clone(&art);
        tokio::spawn(async move { art.process(declined, CancellationToken::new()).await })
    };
    let id = waiting_question(&answers).await;
    answers.answer(&id, ElicitAnswer::Decline).unwrap();
    let out = run.await.unwrap().unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);
    let executed = observed(&art, &trace, ObservationType::ToolExecution).await;
    assert!(
        executed[0]["output"].as_str().unwrap().contains("declined"),
        "{}",
        executed[0]
    );

    // Stopped while it waits: the question ends with the call, and says why.
    let source_run = props(&thread);
    let stopped_trace = source_run.trace_id.clone().unwrap();
    let cancel = CancellationToken::new();
    let run = {
        let (art, cancel) = (Arc::clone(&art), cancel.clone());
        tokio::spawn(async move { art.process(source_run, cancel).await })
    };
    waiting_question(&answers).await;
    cancel.cancel();
    let _ = run.await.unwrap();
    let ended: AnsweredContent = serde_json::from_value(
        observed(&art, &stopped_trace, ObservationType::ElicitationAnswer).await[0].clone(),
    )
    .unwrap();
    assert!(
        matches!(&ended.outcome, QuestionOutcome::Ended { why } if why.contains("call ended")),
        "{ended:?}"
    );
    assert!(answers.waiting().is_empty(), "nothing left waiting");
    art.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_to_open_is_offered_whole_and_a_page_not_on_the_web_is_declined() {
    const PAGE: &str = "everything__trigger-url-elicitation";
    let verify = "https://example.com/verify?session=42";
    let (_dir, art, answers, thread, mark) = asking_runs(
        60,
        &[
            (
                PAGE,
                json!({ "url": verify, "message": "Confirm your account" }),
            ),
            (PAGE, json!({ "url": "file:///etc/passwd" })),
        ],
    )
    .await;
    let opening = props(&thread);
    let trace = opening.trace_id.clone().unwrap();
    let run = {
        let art = Arc::clone(&art);
        tokio::spawn(async move { art.process(opening, CancellationToken::new()).await })
    };
    let id = waiting_question(&answers).await;
    let asked: QuestionContent = serde_json::from_value(
        observed(&art, &trace, ObservationType::Elicitation).await[0].clone(),
    )
    .unwrap();
    assert_eq!(asked.question.url.as_deref(), Some(verify));
    assert_eq!(asked.question.message, "Confirm your account");
    assert!(asked.question.fields.is_empty());
    // Accepting is agreeing to open it: the page comes back for the caller to open.
    let open = answers
        .answer(&id, ElicitAnswer::Accept(Map::new()))
        .unwrap();
    assert_eq!(open.as_deref(), Some(verify));
    run.await.unwrap().unwrap();
    let executed = observed(&art, &trace, ObservationType::ToolExecution).await;
    let said = executed[0]["output"].as_str().unwrap();
    assert!(
        said.contains("User completed the URL elicitation flow"),
        "{said}"
    );

    // A page that is not on the web is declined without asking anyone.
    let local = props(&thread);
    let trace = local.trace_id.clone().unwrap();
    art.process(local, CancellationToken::new()).await.unwrap();
    let executed = observed(&art, &trace, ObservationType::ToolExecution).await;
    let said = executed[0]["output"].as_str().unwrap();
    assert!(said.contains("User declined to open the URL"), "{said}");
    assert!(
        observed(&art, &trace, ObservationType::Elicitation)
            .await
            .is_empty()
    );
    art.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_asks_for_input_is_answered_and_the_call_sent_again() {
    // The 2026-07-28 revision's form: the question comes in the call's result, and the
    // call goes again with the answer and the server's `requestState`.
    const ECHO: &str = "fault__echo";
    let mark = marker();
    let calls = [
        (ECHO, json!({ "message": "hi" })),
        (ECHO, json!({ "message": "hi" })),
    ];
    let config = servers::fault("fault", "input-required", &mark);
    let (_dir, art, answers, thread, mark) = asking_runs_on(config, mark, 60, &calls).await;
    let answered = props(&thread);
    let trace = answered.trace_id.clone().unwrap();
    let run = {
        let art = Arc::clone(&art);
        tokio::spawn(async move { art.process(answered, CancellationToken::new()).await })
    };
    let id = waiting_question(&answers).await;
    let asked: QuestionContent = serde_json::from_value(
        observed(&art, &trace, ObservationType::Elicitation).await[0].clone(),
    )
    .unwrap();
    assert_eq!(
        (asked.call_id.as_str(), asked.tool_name.as_str()),
        ("c1", ECHO)
    );
    assert_eq!(asked.question.message, "Who is asking?");
    let refused = answers.answer(&id, ElicitAnswer::Accept(Map::new()));
    assert!(
        matches!(refused, Err(AnswerError::Invalid(_))),
        "{refused:?}"
    );
    let mut values = Map::new();
    values.insert("name".into(), json!("Ada"));
    answers.answer(&id, ElicitAnswer::Accept(values)).unwrap();
    let out = run.await.unwrap().unwrap();
    assert_eq!(
        out.metadata.status,
        RunStatus::Success,
        "{:?}",
        out.metadata.error
    );
    let executed = observed(&art, &trace, ObservationType::ToolExecution).await;
    assert_eq!(executed[0]["output"], "Hello, Ada", "{}", executed[0]);

    // Declined: the server hears it on the second round.
    let declined = props(&thread);
    let trace = declined.trace_id.clone().unwrap();
    let run = {
        let art = Arc::clone(&art);
        tokio::spawn(async move { art.process(declined, CancellationToken::new()).await })
    };
    let id = waiting_question(&answers).await;
    answers.answer(&id, ElicitAnswer::Decline).unwrap();
    run.await.unwrap().unwrap();
    let executed = observed(&art, &trace, ObservationType::ToolExecution).await;
    assert_eq!(
        executed[0]["output"], "No name (decline)",
        "{}",
        executed[0]
    );
    art.mcp.shutdown().await;
    assert_eq!(settle(&mark, 5).await, 0);
}
