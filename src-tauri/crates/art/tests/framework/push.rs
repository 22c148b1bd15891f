//! "Send traces to": finished runs pushed to an OTLP/HTTP receiver over real TCP (the
//! testkit's, which decodes with `opentelemetry-proto`), from a real SQLite queue, with
//! the collector's faults: down at start, a closed connection, a slow answer, 429 with
//! `Retry-After`, 500, 413 for a batch too large; a full queue; a restart with a queue;
//! a kill while runs wait in memory, and a quit.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use art::agent::CancellationToken;
use art::export::{Format, Options, Redactor, Scope};
use art::push::{TracePush, outbox};
use art_testkit::otlp::{Fault, OtlpReceiver};
use art_types::push::{PushEncoding, PushSettings, PushState, PushStatus};
use opentelemetry_proto::tonic::trace::v1::TracesData;

use crate::export::{attr_str, export_to_string, known_run};

/// Long enough for a few tries with backoff on a slow machine.
const PATIENCE: Duration = Duration::from_secs(30);

fn settings(url: &str) -> PushSettings {
    PushSettings {
        enabled: true,
        endpoint: url.to_owned(),
        ..PushSettings::default()
    }
}

/// The push over `dir`'s queue, configured with `settings`, sending until `stop`.
fn start(dir: &Path, settings: &PushSettings, stop: &CancellationToken) -> Arc<TracePush> {
    let push = TracePush::open(&dir.join(outbox::FILE)).unwrap();
    let headers = [(
        "x-api-key".to_owned(),
        "sk-push-header-0123456789".to_owned(),
    )];
    push.configure(settings, &headers).unwrap();
    tokio::spawn(Arc::clone(&push).run(stop.clone()));
    push
}

/// Wait until the status satisfies `done`.
async fn status_until(push: &TracePush, done: impl Fn(&PushStatus) -> bool) -> PushStatus {
    let mut status = push.status();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let now = status.borrow_and_update().clone();
        if done(&now) {
            return now;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        assert!(!left.is_zero(), "the status stayed {now:?}");
        let _ = tokio::time::timeout(left, status.changed()).await;
    }
}

/// The span ids a file export of `trace` has, with their names.
async fn exported(art: &art::ArtInstance, trace: &str) -> HashMap<Vec<u8>, String> {
    let text = export_to_string(
        art,
        &Scope::Trace(trace.to_owned()),
        Format::Otlp,
        Options::default(),
        &Redactor::new(Vec::new()),
    )
    .await;
    let data: TracesData = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    data.resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .map(|s| (s.span_id, s.name))
        .collect()
}

/// Each span id the receiver took, with how many times.
fn taken_ids(receiver: &OtlpReceiver) -> HashMap<Vec<u8>, usize> {
    let mut ids = HashMap::new();
    for span in receiver.spans() {
        *ids.entry(span.span_id).or_default() += 1;
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_reaches_the_collector_whole_compressed_and_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&receiver.url()), &stop);
    let redactor = Redactor::new(["sk-push-header-0123456789".to_owned()]);
    let queued = push
        .run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    let want = exported(&art, &trace).await;
    assert_eq!(queued, want.len() as u64);
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);

    let requests = receiver.received();
    assert_eq!(requests.len(), 1, "one batch");
    let request = &requests[0];
    assert_eq!(request.content_type, "application/x-protobuf");
    assert_eq!(request.content_encoding.as_deref(), Some("gzip"));
    assert_eq!(
        request.header("x-api-key"),
        Some("sk-push-header-0123456789")
    );
    // The same spans as the file export, once each; content stays home unless chosen.
    let got = taken_ids(&receiver);
    assert_eq!(got.len(), want.len());
    assert!(got.values().all(|n| *n == 1));
    for span in receiver.spans() {
        assert_eq!(want.get(&span.span_id), Some(&span.name));
        assert!(attr_str(&span, "gen_ai.input.messages").is_none());
        assert!(attr_str(&span, "gen_ai.tool.call.arguments").is_none());
    }
    let status = status_until(&push, |s| {
        s.state == PushState::Idle && s.sent_spans == queued
    })
    .await;
    assert_eq!(status.queued_spans, 0);
    assert_eq!(status.line(), format!("Sent {queued} spans"));

    // A thread not chosen is not sent; content is sent when chosen.
    let mut chosen = settings(&receiver.url());
    chosen.scope = art_types::push::PushScope::Threads {
        ids: vec!["another".into()],
    };
    push.configure(&chosen, &[]).unwrap();
    assert_eq!(
        push.run_ended(&art, &redactor, &thread, &trace)
            .await
            .unwrap(),
        0
    );
    let mut content = settings(&receiver.url());
    content.include_content = true;
    push.configure(&content, &[]).unwrap();
    // Redacted like every export: here the question stands in for a secret.
    let secret_question = Redactor::new(["What is 6*7?".to_owned()]);
    push.run_ended(&art, &secret_question, &thread, &trace)
        .await
        .unwrap();
    receiver.wait_for(2 * queued, PATIENCE).await;
    let with = receiver.received().pop().unwrap().request.unwrap();
    let spans: Vec<_> = with.resource_spans[0].scope_spans[0].spans.clone();
    assert!(
        spans
            .iter()
            .any(|s| attr_str(s, "gen_ai.input.messages").is_some())
    );
    assert!(
        spans
            .iter()
            .any(|s| attr_str(s, "output.value") == Some("It is 42."))
    );
    assert!(
        spans
            .iter()
            .any(|s| attr_str(s, "input.value") == Some("[REDACTED]"))
    );
    let body = String::from_utf8_lossy(&receiver.received().pop().unwrap().body).into_owned();
    assert!(!body.contains("What is 6*7?"));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_down_at_start_gets_everything_once_when_it_comes_up() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    // A port nothing listens on (yet).
    let port = OtlpReceiver::start().await.port();
    let url = format!("http://127.0.0.1:{port}");
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&url), &stop);
    let redactor = Redactor::new(Vec::new());
    let queued = push
        .run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    let failing = status_until(&push, |s| s.state == PushState::Failing).await;
    let said = failing.last_error.clone().unwrap();
    assert!(
        said.contains("cannot reach") && said.contains(&port.to_string()),
        "{said}"
    );
    assert!(failing.hint.is_some() && failing.retry_at.is_some());
    assert_eq!(failing.queued_spans, queued);
    assert!(
        failing.line().starts_with("Failing: cannot reach"),
        "{}",
        failing.line()
    );

    let receiver = OtlpReceiver::start_at(port).await.unwrap();
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    let done = status_until(&push, |s| s.state == PushState::Idle && s.queued_spans == 0).await;
    assert_eq!(done.sent_spans, queued);
    assert!(
        done.last_error.is_none(),
        "a batch through clears the failure"
    );
    assert!(taken_ids(&receiver).values().all(|n| *n == 1));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_and_a_slow_answer_lose_nothing_and_send_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    receiver.script([Fault::Close, Fault::Slow(Duration::from_secs(2))]);
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&receiver.url()), &stop);
    let queued = push
        .run_ended(&art, &Redactor::new(Vec::new()), &thread, &trace)
        .await
        .unwrap();
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    status_until(&push, |s| s.queued_spans == 0).await;
    let ids = taken_ids(&receiver);
    assert_eq!(ids.len() as u64, queued);
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_waited_for_and_a_500_is_refused_for_good_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    let slow_down = vec![("Retry-After".to_owned(), "2".to_owned())];
    receiver.script([
        Fault::Status(429, slow_down, "slow down".into()),
        Fault::Status(500, Vec::new(), "the collector broke".into()),
    ]);
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&receiver.url()), &stop);
    let redactor = Redactor::new(Vec::new());
    let started = Instant::now();
    let queued = push
        .run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    let refused = status_until(&push, |s| s.refused_spans > 0).await;
    // The 429 was waited out as asked (the first backoff would have been about 1 s).
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        started.elapsed()
    );
    let statuses: Vec<u16> = receiver.received().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [429, 500],
        "a 500 is not retried (OTLP forbids it)"
    );
    assert_eq!((refused.refused_spans, refused.queued_spans), (queued, 0));
    let said = refused.last_error.clone().unwrap();
    assert!(
        said.contains("HTTP 500") && said.contains("the collector broke"),
        "{said}"
    );
    assert!(
        refused.line().contains(&format!("{queued} refused")),
        "{}",
        refused.line()
    );

    // The next run goes through.
    push.run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_too_large_is_split_until_the_collector_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    let redactor = Redactor::new(Vec::new());
    let (spans, bytes) =
        art::export::run_as_protobuf(&art, &thread, &trace, None, false, &redactor)
            .await
            .unwrap();
    // Two runs in the queue, each of them too large alone: the batch is halved, then
    // each run split, until every part fits.
    receiver.limit(bytes.len() / 3);
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&receiver.url()), &stop);
    push.run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    push.run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    assert_eq!(receiver.wait_for(2 * spans, PATIENCE).await, 2 * spans);
    let statuses: Vec<u16> = receiver.received().iter().map(|r| r.status).collect();
    assert!(statuses.contains(&413), "{statuses:?}");
    let ids = taken_ids(&receiver);
    assert_eq!(ids.len() as u64, spans);
    assert!(
        ids.values().all(|n| *n == 2),
        "each run's spans once per run: {ids:?}"
    );
    let done = status_until(&push, |s| s.queued_spans == 0).await;
    assert_eq!((done.sent_spans, done.refused_spans), (2 * spans, 0));

    // A single span larger than the collector takes is refused and counted.
    receiver.limit(10);
    push.run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    let refused = status_until(&push, |s| s.queued_spans == 0 && s.refused_spans > 0).await;
    assert_eq!(
        refused.refused_spans, spans,
        "every span alone is too large"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_drops_the_oldest_and_a_restart_sends_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let port = OtlpReceiver::start().await.port();
    let mut limited = settings(&format!("http://127.0.0.1:{port}"));
    let redactor = Redactor::new(Vec::new());
    let (spans, _) = art::export::run_as_protobuf(&art, &thread, &trace, None, false, &redactor)
        .await
        .unwrap();
    limited.queue_limit = 2 * spans;
    let stop = CancellationToken::new();
    let push = start(dir.path(), &limited, &stop);
    push.run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    // Runs that end while the collector fails on what waits in the file join it there
    // (and its limit) at the next failed try, rather than wait in memory behind it.
    status_until(&push, |s| s.state == PushState::Failing).await;
    for _ in 0..2 {
        push.run_ended(&art, &redactor, &thread, &trace)
            .await
            .unwrap();
    }
    let full = status_until(&push, |s| s.dropped_spans > 0).await;
    assert_eq!((full.queued_spans, full.dropped_spans), (2 * spans, spans));
    assert!(
        full.line()
            .contains(&format!("{spans} dropped (the queue was full)"))
    );
    // The app quits with a queue…
    stop.cancel();
    drop(push);
    // …and the next start sends it, to the collector now up.
    let receiver = OtlpReceiver::start_at(port).await.unwrap();
    let stop = CancellationToken::new();
    let push = start(dir.path(), &limited, &stop);
    assert_eq!(receiver.wait_for(2 * spans, PATIENCE).await, 2 * spans);
    let done = status_until(&push, |s| s.queued_spans == 0).await;
    assert_eq!((done.sent_spans, done.dropped_spans), (2 * spans, spans));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_in_memory_when_the_app_is_killed_is_sent_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    let mut with_content = settings(&receiver.url());
    with_content.include_content = true;
    let redactor = Redactor::new(Vec::new());
    // The run ends; before the sender's turn comes, the app is killed: nothing moves
    // the run to the queue's file (no sender runs here, and dropping is all a kill
    // leaves behind).
    let push = TracePush::open(&dir.path().join(outbox::FILE)).unwrap();
    push.configure(&with_content, &[]).unwrap();
    let queued = push
        .run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    assert!(queued > 0);
    assert_eq!(
        push.status().borrow().queued_spans,
        queued,
        "counted while in memory"
    );
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(log, format!("{trace}\t{thread}\t1\n"), "named in the log");
    drop(push);

    // The next start finds it named, queues it again from the database as it was
    // (content and all), and sends it once.
    let stop = CancellationToken::new();
    let push = start(dir.path(), &with_content, &stop);
    assert_eq!(push.left_unsent(), 1);
    assert_eq!(push.recover(&art, &redactor).await.unwrap(), queued);
    assert_eq!(push.left_unsent(), 0);
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    let done = status_until(&push, |s| s.queued_spans == 0 && s.sent_spans == queued).await;
    assert_eq!(done.dropped_spans, 0);
    assert!(taken_ids(&receiver).values().all(|n| *n == 1));
    assert!(
        receiver
            .spans()
            .iter()
            .any(|s| attr_str(s, "output.value") == Some("It is 42.")),
        "the content chosen when it ended"
    );
    // Nothing is named any more: a third start has nothing to recover.
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(log, "");
    stop.cancel();
    drop(push);
    let again = TracePush::open(&dir.path().join(outbox::FILE)).unwrap();
    assert_eq!(again.left_unsent(), 0);
}

/// A run is named as it starts: the app killed mid-run (mid-stream) leaves it named, and
/// the next start exports it from the database as far as it got and sends it; a quit in
/// good order with a run under way names nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_under_way_when_the_app_is_killed_is_sent_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    let redactor = Redactor::new(Vec::new());
    let push = TracePush::open(&dir.path().join(outbox::FILE)).unwrap();
    push.configure(&settings(&receiver.url()), &[]).unwrap();
    // The run starts (what it recorded is in the database as it goes); the app is
    // killed before it ends: nothing but the start's line is left.
    push.watch(&art, &thread, &trace);
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(
        log,
        format!("{trace}\t{thread}\t0\n"),
        "named as it started"
    );
    drop(push);

    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&receiver.url()), &stop);
    assert_eq!(push.left_unsent(), 1);
    let queued = push.recover(&art, &redactor).await.unwrap();
    assert!(queued > 0);
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    status_until(&push, |s| s.queued_spans == 0 && s.sent_spans == queued).await;

    // Under way at a quit in good order: not a crash, nothing named.
    push.watch(&art, &thread, "01a2530c-0000-7000-8000-000000000001");
    push.keep_unsent().unwrap();
    stop.cancel();
    drop(push);
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(log, "", "nothing to recover after a quit");
    // A run that ends is no longer named either.
    let push = TracePush::open(&dir.path().join(outbox::FILE)).unwrap();
    push.configure(&settings(&receiver.url()), &[]).unwrap();
    push.watch(&art, &thread, &trace);
    push.run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(log.lines().count(), 2, "its start and its end: {log}");
    push.keep_unsent().unwrap();
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(log, "", "in the queue's file now: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_in_memory_when_the_app_quits_are_kept_in_the_queue_file() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let port = OtlpReceiver::start().await.port();
    let url = format!("http://127.0.0.1:{port}");
    let redactor = Redactor::new(Vec::new());
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&url), &stop);
    let queued = push
        .run_ended(&art, &redactor, &thread, &trace)
        .await
        .unwrap();
    // The app quits before the sender's first try (it waits `LINGER` for more runs).
    push.keep_unsent().unwrap();
    stop.cancel();
    let status = push.status().borrow().clone();
    assert_eq!(status.queued_spans, queued);
    drop(push);
    let log = std::fs::read_to_string(dir.path().join("trace-outbox.pending")).unwrap();
    assert_eq!(log, "", "in the file now: nothing to recover");

    let receiver = OtlpReceiver::start_at(port).await.unwrap();
    let stop = CancellationToken::new();
    let push = start(dir.path(), &settings(&url), &stop);
    assert_eq!(push.left_unsent(), 0);
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    status_until(&push, |s| s.queued_spans == 0 && s.sent_spans == queued).await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_is_sent_as_otlp_json_when_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let (art, thread, trace) = known_run(dir.path()).await;
    let receiver = OtlpReceiver::start().await;
    let mut json = settings(&format!("{}/v1/traces", receiver.url()));
    json.encoding = PushEncoding::Json;
    let stop = CancellationToken::new();
    let push = start(dir.path(), &json, &stop);
    let queued = push
        .run_ended(&art, &Redactor::new(Vec::new()), &thread, &trace)
        .await
        .unwrap();
    assert_eq!(receiver.wait_for(queued, PATIENCE).await, queued);
    let request = &receiver.received()[0];
    assert_eq!(request.content_type, "application/json");
    // OTLP/JSON as the specification writes it: hex ids, 64-bit integers as strings.
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    let span = &body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert_eq!(span["traceId"].as_str().unwrap().len(), 32, "{span}");
    assert!(span["startTimeUnixNano"].is_string(), "{span}");
    let want = exported(&art, &trace).await;
    assert!(
        receiver
            .spans()
            .iter()
            .all(|s| want.contains_key(&s.span_id))
    );
    stop.cancel();
}
