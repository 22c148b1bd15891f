//! Framework budgets (DESIGN §8): batched observation inserts, a per-thread/type query
//! among 1,000,000 observations, the last 100 messages of a 5,000-message thread, and
//! the agent + socket overhead per streamed token. Run: `cargo bench -p art --bench framework`.

#[path = "../tests/scripted/mod.rs"]
#[allow(dead_code)]
mod scripted;

use std::sync::Arc;
use std::time::Duration;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::observation::{NewObservation, ObservationManager, ObservationQuery};
use art::sockets::{Sockets, StreamFilter};
use art::storage::sqlite::SqliteStorage;
use art_types::{
    AgentProps, ConversationMessage, MessageRole, MessageStatus, ObservationType, StreamEventKind,
    TokenType,
};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use scripted::{Script, ScriptedSource, plan_json};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Observation `i` of a batch for `thread`: runs of 20 observations, each run a new
/// trace id (as in the app: a thread keeps its id, every run gets a fresh one).
fn observation(thread: usize, i: usize, runs: &[String]) -> NewObservation {
    let kind = ObservationType::ALL[i % ObservationType::ALL.len()];
    NewObservation::new(
        &format!("thread-{thread}"),
        &runs[i / 20],
        kind,
        json!({ "i": i, "text": "some observation content" }),
    )
}

/// Ten batches of 1,000 observations for one thread each (built outside the timing).
fn ten_batches() -> Vec<Vec<NewObservation>> {
    (0..10)
        .map(|batch| {
            let runs: Vec<String> = (0..50).map(|_| art::clock::new_id()).collect();
            (0..1_000).map(|i| observation(batch, i, &runs)).collect()
        })
        .collect()
}

fn manager_at(path: &std::path::Path) -> ObservationManager {
    let storage = Arc::new(SqliteStorage::open(path).unwrap());
    ObservationManager::new(storage, Arc::new(Sockets::default()))
}

fn insert_batched(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("observations");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(10_000));
    let record = |manager: &ObservationManager, batches: Vec<Vec<NewObservation>>| {
        rt.block_on(async {
            for news in batches {
                manager.record_all(news).await.unwrap();
            }
        });
    };
    // The app's case: a database in use, growing by 10,000 per iteration.
    let dir = tempfile::tempdir().unwrap();
    let manager = manager_at(&dir.path().join("b.sqlite3"));
    group.bench_function("insert 10k in batches of 1k", |b| {
        b.iter_batched(
            ten_batches,
            |batches| record(&manager, batches),
            BatchSize::PerIteration,
        );
    });
    // First use: a brand-new file (the WAL and the database grow from nothing).
    group.bench_function("insert 10k in batches of 1k, new file", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap();
                let manager = manager_at(&dir.path().join("b.sqlite3"));
                (dir, manager, ten_batches())
            },
            |(dir, manager, batches)| {
                record(&manager, batches);
                // Closing (final checkpoint) happens outside the timed section.
                (dir, manager)
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn query_among_a_million(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("q.sqlite3")).unwrap());
    let manager = ObservationManager::new(storage, Arc::new(Sockets::default()));
    rt.block_on(async {
        // 1,000 threads × 1,000 observations.
        for thread in 0..1_000 {
            let runs: Vec<String> = (0..50).map(|_| art::clock::new_id()).collect();
            let news = (0..1_000).map(|i| observation(thread, i, &runs)).collect();
            manager.record_all(news).await.unwrap();
        }
    });
    let query = ObservationQuery {
        thread_id: Some("thread-500".into()),
        types: vec![
            ObservationType::Plan,
            ObservationType::ToolExecution,
            ObservationType::Error,
        ],
        ..Default::default()
    };
    c.bench_function("observations/query one thread's 3 types among 1M", |b| {
        b.iter(|| {
            let found = rt.block_on(manager.query(&query)).unwrap();
            assert_eq!(found.len(), 215);
        });
    });
}

fn last_100_messages(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("m.sqlite3")).unwrap());
    let source = Arc::new(ScriptedSource::new(vec![]));
    let art = ArtInstance::builder(storage, source).build().unwrap();
    let thread = rt.block_on(async {
        let t = art
            .conversation
            .create_thread(None)
            .await
            .unwrap()
            .thread_id;
        let messages: Vec<_> = (0..5_000)
            .map(|i| ConversationMessage {
                message_id: format!("m{i}"),
                thread_id: t.clone(),
                role: if i % 2 == 0 {
                    MessageRole::User
                } else {
                    MessageRole::Ai
                },
                content: format!(
                    "message {i} with a few words of text in it, like a real answer would have"
                ),
                timestamp: 1_700_000_000_000 + i,
                status: MessageStatus::Complete,
                metadata: serde_json::Value::Null,
            })
            .collect();
        art.conversation.add_messages(&t, &messages).await.unwrap();
        t
    });
    c.bench_function("messages/last 100 of a 5,000-message thread", |b| {
        b.iter(|| {
            let page = rt
                .block_on(art.conversation.messages(
                    &thread,
                    MessageOptions {
                        limit: Some(100),
                        before: None,
                    },
                ))
                .unwrap();
            assert_eq!(page.len(), 100);
        });
    });
}

const TOKENS: usize = 20_000;

fn agent_per_token(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("agent");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function(
        "PES run streaming 20k tokens (SQLite, sockets, checkpoints)",
        |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().unwrap();
                    let storage =
                        Arc::new(SqliteStorage::open(dir.path().join("a.sqlite3")).unwrap());
                    let mut tokens: Vec<StreamEventKind> = (0..TOKENS)
                        .map(|i| StreamEventKind::Token {
                            text: format!("w{i} "),
                            token_type: TokenType::LlmResponse,
                        })
                        .collect();
                    tokens.push(StreamEventKind::End);
                    let source = Arc::new(ScriptedSource::new(vec![
                        Script::text(&plan_json("bench", &[])),
                        Script::events(tokens),
                    ]));
                    let art = ArtInstance::builder(storage, source).build().unwrap();
                    let thread = rt.block_on(async {
                        let t = art
                            .conversation
                            .create_thread(None)
                            .await
                            .unwrap()
                            .thread_id;
                        let config = scripted::thread_config("m", &[]);
                        art.state.set_thread_config(&t, &config).await.unwrap();
                        t
                    });
                    (dir, art, thread)
                },
                |(dir, art, thread)| {
                    rt.block_on(async {
                        // A live subscriber, as the desktop bridge would be.
                        let mut sub = art.sockets.stream.subscribe(StreamFilter::default());
                        let props = AgentProps {
                            query: "go".into(),
                            thread_id: thread,
                            trace_id: None,
                            options: Default::default(),
                        };
                        let out = art.process(props, CancellationToken::new()).await.unwrap();
                        assert!(
                            out.response
                                .content
                                .ends_with(&format!("w{} ", TOKENS - 1).trim_end().to_owned())
                        );
                        while sub.try_recv().is_some() {}
                    });
                    dir
                },
                BatchSize::PerIteration,
            );
        },
    );
    group.finish();
}

criterion_group!(
    benches,
    insert_batched,
    query_among_a_million,
    last_100_messages,
    agent_per_token
);
criterion_main!(benches);
