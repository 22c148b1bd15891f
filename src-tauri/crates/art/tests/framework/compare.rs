//! Comparisons through the whole stack (provider manager → adapters → HTTP → the fake
//! server; real SQLite): one question to several models at once, each column a run on
//! its own branch that reads only its own branch; one column failing or stopped leaves
//! the others to finish; local models take turns instead of being refused; a bad
//! comparison is refused before anything is stored.

use art_testkit::framework::adapters as wire;

use std::sync::Arc;
use std::time::Duration;

use art::agent::pes::Column;
use art::agent::{AgentError, CancellationToken};
use art::context::MessageOptions;
use art_testkit::fake::scripts::{Protocol, router, text_reply};
use art_testkit::fake::{FakeServer, Recorded, Reply, Router};
use art_types::message::COMPARISON;

use crate::concurrency::instance;
use art_types::{MessageRole, ProviderConfig, RunStatus};
use opentelemetry_proto::tonic::trace::v1::TracesData;

fn model_of(request: &Recorded) -> String {
    request.json()["model"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Every OpenAI call answered "Answer from MODEL", a word every 10 ms; `gpt-broken`
/// refused as an unknown model; `gpt-slow` answering for seconds.
fn openai_models() -> Router {
    Box::new(|request| {
        if !request.request_line.starts_with("POST") {
            return None;
        }
        let model = model_of(request);
        Some(match model.as_str() {
            "gpt-broken" => Reply::error(
                404,
                r#"{"error":{"message":"The model `gpt-broken` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
            ),
            "gpt-slow" => text_reply(Protocol::OpenAi, &"slow ".repeat(400), 5)
                .delayed(Duration::from_millis(10)),
            _ => text_reply(Protocol::OpenAi, &format!("Answer from {model}"), 4)
                .delayed(Duration::from_millis(10)),
        })
    })
}

/// A fake OpenAI-compatible server answering by `router`, an instance in a fresh data
/// directory (kept by the returned guard), and a thread on the OpenAI entry reaching
/// the server, with `tools` enabled.
async fn on_fake_openai(
    router: Router,
    tools: &[&str],
) -> (FakeServer, tempfile::TempDir, art::ArtInstance, String) {
    let server = FakeServer::start_at(0, Some(router), Vec::new())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let art = instance(&dir);
    let base_url = format!("{}/v1", server.url());
    let thread = wire::thread_at(&art, "openai", "gpt-thread", &base_url, tools).await;
    (server, dir, art, thread)
}

fn column(provider: &str, model: &str) -> Column {
    Column {
        trace_id: art::clock::new_id(),
        provider: ProviderConfig {
            provider_name: provider.into(),
            model_id: model.into(),
            ..ProviderConfig::default()
        },
        cancel: CancellationToken::new(),
        can_ask: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_models_answer_on_their_own_branches_and_a_failing_one_fails_alone() {
    let (server, _dir, art, thread) = on_fake_openai(openai_models(), &[]).await;
    let first = art
        .process(wire::ask(&thread, "Hello there"), CancellationToken::new())
        .await
        .unwrap();
    let branch_point = first.response.message_id.clone();

    let columns = vec![
        column("openai", "gpt-a"),
        column("openai", "gpt-broken"),
        column("openai", "gpt-c"),
    ];
    let traces: Vec<String> = columns.iter().map(|c| c.trace_id.clone()).collect();
    let mut props = wire::ask(&thread, "Which is the tallest mountain?");
    props.trace_id = Some(art::clock::new_id());
    let comparison = props.trace_id.clone().unwrap();
    // Each column's end is heard once, as it comes, as it is returned.
    let heard = std::sync::Mutex::new(Vec::new());
    let ended = art
        .compare(props, columns, &|place, out| {
            heard.lock().unwrap().push((place, out.is_ok()));
        })
        .await
        .unwrap();

    assert_eq!(ended.len(), 3);
    let mut heard = heard.into_inner().unwrap();
    heard.sort();
    let returned: Vec<(usize, bool)> = ended.iter().map(|e| e.is_ok()).enumerate().collect();
    assert_eq!(heard, returned);
    let a = ended[0].as_ref().unwrap();
    assert_eq!(
        a.metadata.status,
        RunStatus::Success,
        "{:?}",
        a.metadata.error
    );
    assert_eq!(a.response.content, "Answer from gpt-a");
    assert_eq!(a.metadata.trace_id, traces[0]);
    let broken = ended[1].as_ref().unwrap();
    assert_eq!(broken.metadata.status, RunStatus::Error);
    let why = broken.metadata.error.as_ref().unwrap();
    assert!(
        why.message.contains("gpt-broken"),
        "says why: {}",
        why.message
    );
    let c = ended[2].as_ref().unwrap();
    assert_eq!(c.response.content, "Answer from gpt-c");

    // Three copies of the question beside each other, below what the thread showed,
    // each marked with the comparison; each answer below its own question.
    let all = art
        .conversation
        .messages(&thread, MessageOptions::default())
        .await
        .unwrap();
    let questions: Vec<_> = all
        .iter()
        .filter(|m| m.role == MessageRole::User && m.content.contains("tallest"))
        .collect();
    assert_eq!(questions.len(), 3);
    for (question, trace) in questions.iter().zip(&traces) {
        assert_eq!(question.parent_id.as_deref(), Some(branch_point.as_str()));
        assert_eq!(question.metadata[COMPARISON], comparison.as_str());
        assert_eq!(question.trace_id(), Some(trace.as_str()));
    }
    for answer in [a, c] {
        let stored = all
            .iter()
            .find(|m| m.message_id == answer.response.message_id)
            .unwrap();
        let question = questions
            .iter()
            .find(|q| q.trace_id() == Some(answer.metadata.trace_id.as_str()))
            .unwrap();
        assert_eq!(
            stored.parent_id.as_deref(),
            Some(question.message_id.as_str())
        );
    }
    // None of the thread's writes was lost to another column's.
    let summary = art.conversation.thread(&thread).await.unwrap();
    assert_eq!(summary.message_count, all.len() as u64);
    // The thread shows the first column's branch.
    let shown = art
        .conversation
        .path(&thread, MessageOptions::default())
        .await
        .unwrap();
    let shown: Vec<&str> = shown.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        shown,
        [
            "Hello there",
            "Answer from gpt-thread",
            "Which is the tallest mountain?",
            "Answer from gpt-a"
        ]
    );
    // Each model read its own branch: the question once, no other column's.
    for request in server.requests() {
        let model = model_of(&request);
        if model.starts_with("gpt-") && model != "gpt-thread" {
            assert_eq!(
                request.body.matches("tallest").count(),
                1,
                "{model} read one question"
            );
            for other in ["gpt-a", "gpt-broken", "gpt-c"] {
                if other != model {
                    let answer = format!("Answer from {other}");
                    assert!(!request.body.contains(&answer), "{model} read {other}'s");
                }
            }
            assert!(
                request.body.contains("Hello there"),
                "{model}: the history before"
            );
        }
    }
    // Each column's figures, as a diff or the comparison's table reads them.
    let (view, question) = art::compare::run(&art, &traces[0]).await.unwrap();
    let figures = art_types::record::diff::RunFigures::of(&view);
    assert_eq!(question.as_deref(), Some("Which is the tallest mountain?"));
    assert_eq!(figures.model.as_deref(), Some("gpt-a"));
    let first_token = figures.first_token_ms.expect("the answer's first token");
    assert!(first_token <= figures.duration_ms.unwrap(), "{figures:?}");
    // Exported, each column is a trace of its own, whole (one TracesData, one root)
    // though the columns' records interleave, its root naming the comparison.
    let redactor = art::export::Redactor::new(Vec::new());
    let scope = art::export::Scope::Thread(thread.clone());
    let options = art::export::Options::default();
    let text = crate::export::export_to_string(
        &art,
        &scope,
        art::export::Format::Otlp,
        options,
        &redactor,
    )
    .await;
    let runs: Vec<TracesData> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(runs.len(), 4, "the first run and three columns");
    let mut traces = std::collections::HashSet::new();
    for data in &runs {
        let spans: Vec<_> = data
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .collect();
        let ids: std::collections::HashSet<&[u8]> =
            spans.iter().map(|s| s.trace_id.as_slice()).collect();
        assert_eq!(ids.len(), 1, "one trace a TracesData");
        assert!(
            traces.insert(spans[0].trace_id.clone()),
            "a trace written once"
        );
        let roots: Vec<_> = spans
            .iter()
            .filter(|s| s.parent_span_id.is_empty())
            .collect();
        assert_eq!(roots.len(), 1, "one root a run");
        let named = crate::export::attr_str(roots[0], "art.comparison.id");
        if crate::export::attr_str(roots[0], "art.message.parent_id")
            .is_some_and(|p| p == branch_point)
        {
            assert_eq!(named, Some(comparison.as_str()));
        } else {
            assert_eq!(named, None, "the first run is no column");
        }
    }
    // The thread is free again.
    art.ready(&thread).await.unwrap();
}

/// Whoever hears of the last column's end may ask again in the thread at once (the app
/// keeps a column then): the comparison has given the thread back before that end is
/// told. Each end is taken outside the callback, beside the comparison in one task, and
/// the thread tried there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_column_is_told_of_once_the_thread_is_free() {
    let (_server, _dir, art, thread) = on_fake_openai(openai_models(), &[]).await;
    let columns = vec![column("openai", "gpt-a"), column("openai", "gpt-c")];
    let (told, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let tell = |place, _: &Result<_, _>| {
        let _ = told.send(place);
    };
    let compared = art.compare(wire::ask(&thread, "Hello"), columns, &tell);
    let free_when_told = async {
        let mut free = Vec::new();
        while free.len() < 2 {
            let place = heard.recv().await.expect("every end told");
            free.push((place, art.idle(&thread).await.is_ok()));
        }
        free
    };
    let (ended, free) = tokio::join!(compared, free_when_told);
    assert!(ended.unwrap().iter().all(Result::is_ok));
    let free: Vec<bool> = free.iter().map(|(_, free)| *free).collect();
    assert_eq!(
        free,
        [false, true],
        "busy while a column runs, free at the last's end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_column_ends_stopped_and_the_others_finish() {
    let (server, _dir, art, thread) = on_fake_openai(openai_models(), &[]).await;
    let art = Arc::new(art);
    let columns = vec![column("openai", "gpt-slow"), column("openai", "gpt-b")];
    let stop = columns[0].cancel.clone();
    let comparing = {
        let (art, props) = (Arc::clone(&art), wire::ask(&thread, "Tell me a long story"));
        tokio::spawn(async move { art.compare(props, columns, &|_, _| {}).await })
    };
    // Stop the slow column while its first call streams (for 4 s).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !server.requests().iter().any(|r| model_of(r) == "gpt-slow") {
        assert!(tokio::time::Instant::now() < deadline, "never asked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.cancel();
    let ended = comparing.await.unwrap().unwrap();
    let slow = ended[0].as_ref().unwrap();
    assert_eq!(slow.metadata.status, RunStatus::Error);
    assert_eq!(
        slow.metadata.error.as_ref().map(|e| e.code.clone()),
        Some(art_types::FailureCode::Cancelled),
        "{:?}",
        slow.metadata.error
    );
    let b = ended[1].as_ref().unwrap();
    assert_eq!(b.metadata.status, RunStatus::Success);
    assert_eq!(b.response.content, "Answer from gpt-b");
    art.ready(&thread).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_models_take_turns_instead_of_being_refused() {
    let base = router(Protocol::Ollama);
    let models: Router = Box::new(move |request| {
        if let Some(reply) = base(request) {
            return Some(reply);
        }
        if !request.request_line.starts_with("POST /api/chat") {
            return None;
        }
        let body = request.json();
        let model = body["model"].as_str().unwrap_or_default().to_owned();
        if body["messages"].as_array().is_some_and(Vec::is_empty) {
            // Unloading the model before another is loaded.
            return Some(Reply::json(
                &serde_json::json!({"model": model, "done": true, "done_reason": "unload"})
                    .to_string(),
            ));
        }
        Some(
            text_reply(Protocol::Ollama, &format!("Answer from {model}"), 4)
                .delayed(Duration::from_millis(10)),
        )
    });
    let server = FakeServer::start_at(0, Some(models), Vec::new())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let art = instance(&dir);
    let thread = wire::thread_at(&art, "ollama", "llama3.2", &server.url(), &[]).await;
    let columns = vec![
        column("ollama", "llama3.2"),
        column("ollama", "qwen3"),
        column("ollama", "gemma3"),
    ];
    let ended = art
        .compare(wire::ask(&thread, "Name a colour"), columns, &|_, _| {})
        .await
        .unwrap();
    for (out, model) in ended.iter().zip(["llama3.2", "qwen3", "gemma3"]) {
        let out = out.as_ref().unwrap();
        assert_eq!(
            out.metadata.status,
            RunStatus::Success,
            "{model}: {:?}",
            out.metadata.error
        );
        assert_eq!(out.response.content, format!("Answer from {model}"));
    }
    // In turn, in column order: each model's calls all come before the next model's.
    // (Had two been asked at once, the local singleton would have refused one: each
    // answered, as checked above.)
    let order: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.request_line.starts_with("POST /api/chat"))
        .filter(|r| {
            r.json()["messages"]
                .as_array()
                .is_some_and(|m| !m.is_empty())
        })
        .map(model_of)
        .collect();
    let mut turns = order.clone();
    turns.dedup();
    assert_eq!(turns, ["llama3.2", "qwen3", "gemma3"], "{order:?}");
    // Asked first in the thread, the three questions are beside each other at its start
    // (not one below another), and the thread shows the first column's answer.
    let all = art
        .conversation
        .messages(&thread, MessageOptions::default())
        .await
        .unwrap();
    let questions: Vec<_> = all.iter().filter(|m| m.role == MessageRole::User).collect();
    assert_eq!(questions.len(), 3);
    assert!(
        questions.iter().all(|q| q.parent_id.is_none()),
        "{questions:?}"
    );
    let head = art.conversation.shown_head_of(&thread).await.unwrap();
    let shown = all.iter().find(|m| Some(&m.message_id) == head.as_ref());
    assert_eq!(
        shown.map(|m| m.content.as_str()),
        Some("Answer from llama3.2")
    );
    let points = art.conversation.branches(&thread).await.unwrap();
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].alternatives.len(), 3);
}

#[tokio::test]
async fn a_bad_comparison_is_refused_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let art = instance(&dir);
    let thread = wire::thread_at(&art, "openai", "gpt-thread", "http://127.0.0.1:9/v1", &[]).await;
    let ask = || wire::ask(&thread, "Which?");
    let refusals = [
        art.compare(ask(), vec![column("openai", "gpt-a")], &|_, _| {})
            .await,
        art.compare(
            ask(),
            (0..5).map(|_| column("openai", "gpt-a")).collect(),
            &|_, _| {},
        )
        .await,
        art.compare(
            ask(),
            vec![column("openai", "gpt-a"), column("openai", " ")],
            &|_, _| {},
        )
        .await,
        art.compare(
            wire::ask(&thread, "   "),
            vec![column("openai", "gpt-a"), column("openai", "gpt-b")],
            &|_, _| {},
        )
        .await,
        art.compare(
            wire::ask("no-such-thread", "Which?"),
            vec![column("openai", "gpt-a"), column("openai", "gpt-b")],
            &|_, _| {},
        )
        .await,
    ];
    for (i, refused) in refusals.into_iter().enumerate() {
        match refused {
            Err(AgentError::InvalidInput(_) | AgentError::Context(_)) => {}
            other => panic!("case {i}: {:?}", other.map(|v| v.len())),
        }
    }
    let summary = art.conversation.thread(&thread).await.unwrap();
    assert_eq!(summary.message_count, 0);
    art.ready(&thread).await.unwrap();
}

/// `gpt-tool…` models plan one step, call the calculator (6*7) in it, end the step and
/// answer "Answer from MODEL" — each call of a model the next of its script; any other
/// model answers every call "Answer from MODEL".
fn calling_models() -> Router {
    let calls = std::sync::Mutex::new(std::collections::HashMap::<String, usize>::new());
    Box::new(move |request| {
        if !request.request_line.starts_with("POST") {
            return None;
        }
        let model = model_of(request);
        let answer = text_reply(Protocol::OpenAi, &format!("Answer from {model}"), 4);
        if !model.starts_with("gpt-tool") {
            return Some(answer);
        }
        let n = {
            let mut calls = calls.lock().unwrap();
            let n = calls.entry(model.clone()).or_default();
            *n += 1;
            *n
        };
        Some(match n {
            1 => text_reply(
                Protocol::OpenAi,
                &art_testkit::framework::scripted::steps_json(
                    "Sum",
                    &[("1", "Multiply 6 by 7", &["calculator"])],
                    &[],
                ),
                9,
            ),
            2 => art_testkit::fake::scripts::tool_call_reply(
                Protocol::OpenAi,
                &[(
                    "c1",
                    "calculator",
                    serde_json::json!({ "expression": "6*7" }),
                )],
            ),
            3 => text_reply(Protocol::OpenAi, "6 times 7 is 42.", 5),
            _ => answer,
        })
    })
}

/// [`on_fake_openai`] answering by [`calling_models`], the thread with the calculator,
/// which asks first.
async fn asking_thread() -> (FakeServer, tempfile::TempDir, art::ArtInstance, String) {
    let (server, dir, art, thread) = on_fake_openai(calling_models(), &["calculator"]).await;
    let mut config = art.state.load_thread_context(&thread).await.unwrap().config;
    config
        .tool_policies
        .insert("calculator".into(), art_types::approval::ToolPolicy::Ask);
    art.state.set_thread_config(&thread, &config).await.unwrap();
    (server, dir, art, thread)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_that_asks_first_waits_in_its_column_while_the_others_answer() {
    use art_types::approval::ApprovalDecision;
    let (server, _dir, art, thread) = asking_thread().await;
    let art = Arc::new(art);
    let columns = vec![
        column("openai", "gpt-tool-a"),
        column("openai", "gpt-tool-b"),
        column("openai", "gpt-c"),
    ];
    let traces: Vec<String> = columns.iter().map(|c| c.trace_id.clone()).collect();
    let stop_b = columns[1].cancel.clone();
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let comparing = {
        let (art, heard) = (Arc::clone(&art), Arc::clone(&heard));
        let props = wire::ask(&thread, "What is 6*7?");
        tokio::spawn(async move {
            art.compare(props, columns, &|place, _| {
                heard.lock().unwrap().push(place)
            })
            .await
        })
    };
    let approve = |arguments: Option<serde_json::Value>| ApprovalDecision::Approve {
        arguments,
        always: false,
    };
    // Both calling columns come to wait: arguments that do not fit the calculator are
    // refused then (and the column keeps waiting); before, nothing waits.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    for trace in &traces[..2] {
        loop {
            let bad = approve(Some(serde_json::json!({ "expression": 5 })));
            match art.decide_column(&thread, trace, bad) {
                Err(AgentError::InvalidInput(_)) => break,
                Err(AgentError::NothingWaiting(_)) => {}
                other => panic!("{other:?}"),
            }
            assert!(tokio::time::Instant::now() < deadline, "never waited");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Meanwhile the third answered; the thread stays the comparison's while two wait.
    while !heard.lock().unwrap().contains(&2) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the third never ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(matches!(art.ready(&thread).await, Err(AgentError::Busy(_))));
    // Stopped while it waits, b ends stopped; a, approved, runs the calculator and
    // answers. A decision for another thread, or for a column that ended, finds nothing.
    assert!(matches!(
        art.decide_column("another-thread", &traces[0], approve(None)),
        Err(AgentError::NothingWaiting(_))
    ));
    stop_b.cancel();
    while heard.lock().unwrap().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "b never stopped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(matches!(
        art.decide_column(&thread, &traces[1], approve(None)),
        Err(AgentError::NothingWaiting(_))
    ));
    art.decide_column(&thread, &traces[0], approve(None))
        .unwrap();
    let ended = comparing.await.unwrap().unwrap();
    let a = ended[0].as_ref().unwrap();
    assert_eq!(
        a.metadata.status,
        RunStatus::Success,
        "{:?}",
        a.metadata.error
    );
    assert_eq!(a.response.content, "Answer from gpt-tool-a");
    assert_eq!(a.metadata.tool_calls, 1);
    let b = ended[1].as_ref().unwrap();
    assert_eq!(
        b.metadata.error.as_ref().map(|e| e.code.clone()),
        Some(art_types::FailureCode::Cancelled)
    );
    assert_eq!(b.metadata.tool_calls, 0);
    assert_eq!(
        ended[2].as_ref().unwrap().response.content,
        "Answer from gpt-c"
    );
    assert_eq!(*heard.lock().unwrap(), [2, 1, 0]);
    // a's record: the call waited, the user approved it, the calculator's 42 went back
    // to the model.
    let (view, _) = art::compare::run(&art, &traces[0]).await.unwrap();
    let approval = view.tools[0].approval.as_ref().unwrap();
    assert!(approval.approved);
    assert_eq!(approval.decided_by, art_types::approval::Decider::User);
    let told = server
        .requests()
        .iter()
        .filter(|r| model_of(r) == "gpt-tool-a")
        .any(|r| r.body.contains("42"));
    assert!(told, "the tool's result reached the model");
    art.ready(&thread).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_no_one_can_be_asked_a_column_s_call_that_asks_first_is_refused() {
    use art_types::approval::Decider;
    let (server, _dir, art, thread) = asking_thread().await;
    // As `art compare` asks: nobody to decide while the columns run.
    let columns: Vec<Column> = ["gpt-tool-a", "gpt-c"]
        .into_iter()
        .map(|model| Column {
            can_ask: false,
            ..column("openai", model)
        })
        .collect();
    let trace = columns[0].trace_id.clone();
    let ended = art
        .compare(wire::ask(&thread, "What is 6*7?"), columns, &|_, _| {})
        .await
        .unwrap();
    // Answered, the refused call counted as a tool failure.
    let a = ended[0].as_ref().unwrap();
    assert_eq!(
        a.metadata.status,
        RunStatus::Partial,
        "{:?}",
        a.metadata.error
    );
    assert_eq!(a.response.content, "Answer from gpt-tool-a");
    assert_eq!(a.metadata.tool_calls, 0, "nothing ran");
    let (view, _) = art::compare::run(&art, &trace).await.unwrap();
    let refusal = view.tools[0].approval.as_ref().unwrap();
    assert!(!refusal.approved);
    assert_eq!(refusal.decided_by, Decider::Policy);
    let told = server
        .requests()
        .iter()
        .filter(|r| model_of(r) == "gpt-tool-a")
        .any(|r| r.body.contains("no one can be asked"));
    assert!(told, "the model read why");
    art.ready(&thread).await.unwrap();
}
