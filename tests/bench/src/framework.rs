//! Framework budgets (DESIGN §8): batched observation inserts, a per-thread/type query
//! among 1,000,000 observations, the last 100 messages of a 5,000-message thread with 50
//! branches, the usage page over 1,000,000 runs (`ledger.rs`), and
//! the agent + socket overhead per streamed token, per step and per tool call. Each is timed over several runs after
//! a warm-up; the figures go to the results file BENCHMARKS.md is made from.
//! Run: `cargo xtask bench framework` (or `art-bench framework`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::observation::{NewObservation, ObservationManager, ObservationQuery};
use art::sockets::{Sockets, StreamFilter};
use art::storage::sqlite::SqliteStorage;
use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::framework::scripted::{Script, ScriptedSource, plan_json, steps_json};
use art_types::{
    AgentProps, ConversationMessage, MessageRole, MessageStatus, ObservationType, StreamEventKind,
    TokenType,
};
use serde_json::{Value, json};

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Observation `i` of a batch for `thread`: runs of 20 observations, each run a new
/// trace id (as in the app: a thread keeps its id, every run gets a fresh one).
fn observation(thread: usize, i: usize, runs: &[String]) -> NewObservation {
    // The first 14 types (ART's), so the mix stays that of the recorded figures when
    // types are added.
    let kinds = &ObservationType::ALL[..14];
    let kind = kinds[i % kinds.len()];
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

/// Time `work` on what `setup` makes, `runs` times after one warm-up (setup untimed).
pub(crate) fn timed<T>(
    runs: usize,
    mut setup: impl FnMut() -> T,
    mut work: impl FnMut(T),
) -> Vec<Duration> {
    let mut once = || {
        let input = setup();
        let start = Instant::now();
        work(input);
        start.elapsed()
    };
    once();
    (0..runs).map(|_| once()).collect()
}

/// Per-second rates of `count` items from durations.
fn rates(count: usize, times: &[Duration]) -> Vec<f64> {
    times
        .iter()
        .map(|t| count as f64 / t.as_secs_f64())
        .collect()
}

/// Milliseconds from durations.
pub(crate) fn ms(times: &[Duration]) -> Vec<f64> {
    times.iter().map(|t| t.as_secs_f64() * 1e3).collect()
}

fn insert_batched(results: &mut Results) {
    let rt = runtime();
    let record = |manager: &ObservationManager, batches: Vec<Vec<NewObservation>>| {
        rt.block_on(async {
            for news in batches {
                manager.record_all(news).await.unwrap();
            }
        });
    };
    // The app's case: a database in use, growing by 10,000 per run.
    let dir = tempfile::tempdir().unwrap();
    let manager = manager_at(&dir.path().join("b.sqlite3"));
    let times = timed(9, ten_batches, |batches| record(&manager, batches));
    results.add(
        Figure::new(
            "storage/insert_in_use",
            "Observations inserted in batches of 1,000 (database in use)",
            "obs/s",
            rates(10_000, &times),
        )
        .budget(Budget::AtLeast(200_000.0)),
    );
    // First use: a brand-new file (the WAL and the database grow from nothing).
    let mut kept = Vec::new();
    let times = timed(
        9,
        || {
            let dir = tempfile::tempdir().unwrap();
            let manager = manager_at(&dir.path().join("b.sqlite3"));
            (dir, manager, ten_batches())
        },
        |(dir, manager, batches)| {
            record(&manager, batches);
            // Closing (final checkpoint) happens outside the timed section.
            kept.push((dir, manager));
        },
    );
    drop(kept);
    results.add(Figure::new(
        "storage/insert_new_file",
        "Observations inserted in batches of 1,000 (new file)",
        "obs/s",
        rates(10_000, &times),
    ));
}

fn query_among_a_million(results: &mut Results) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("q.sqlite3")).unwrap());
    let manager = ObservationManager::new(storage, Arc::new(Sockets::default()));
    eprintln!("  seeding 1,000,000 observations…");
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
    let times = timed(
        21,
        || (),
        |()| {
            let found = rt.block_on(manager.query(&query)).unwrap();
            assert_eq!(found.len(), 215);
        },
    );
    results.add(
        Figure::new(
            "storage/query_thread_types",
            "One thread's observations of 3 types among 1,000,000",
            "ms",
            ms(&times),
        )
        .budget(Budget::AtMost(5.0)),
    );
}

/// Branches in the long thread of `last_100_messages` (edits along the way).
const BRANCHES: usize = 50;

fn last_100_messages(results: &mut Results) {
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
                parent_id: None,
                attachments: Vec::new(),
            })
            .collect();
        art.conversation.add_messages(&t, &messages).await.unwrap();
        // 50 edits along the way, each a branch of a question and its answer; then the
        // first branch shown again (the long one).
        for k in 0..BRANCHES {
            let question = format!("m{}", k * 100);
            art.conversation.branch_beside(&t, &question).await.unwrap();
            let edited: Vec<_> = [MessageRole::User, MessageRole::Ai]
                .into_iter()
                .enumerate()
                .map(|(j, role)| ConversationMessage {
                    message_id: format!("b{k}-{j}"),
                    role,
                    timestamp: 1_700_000_010_000 + (2 * k + j) as i64,
                    ..messages[0].clone()
                })
                .collect();
            art.conversation.add_messages(&t, &edited).await.unwrap();
        }
        art.conversation.switch_to(&t, "m4999").await.unwrap();
        t
    });
    let times = timed(
        21,
        || (),
        |()| {
            let page = rt
                .block_on(art.conversation.path(
                    &thread,
                    MessageOptions {
                        limit: Some(100),
                        before: None,
                    },
                ))
                .unwrap();
            assert_eq!(page.len(), 100);
        },
    );
    results.add(
        Figure::new(
            "storage/last_100_messages",
            "Last 100 messages of a 5,000-message thread with 50 branches (its active one)",
            "ms",
            ms(&times),
        )
        .budget(Budget::AtMost(10.0)),
    );
}

const TOKENS: usize = 20_000;

fn agent_per_token(results: &mut Results) {
    let rt = runtime();
    let times = timed(
        7,
        || {
            let mut tokens: Vec<StreamEventKind> = (0..TOKENS)
                .map(|i| StreamEventKind::Token {
                    text: format!("w{i} "),
                    token_type: TokenType::LlmResponse,
                })
                .collect();
            tokens.push(StreamEventKind::End);
            // No tools: the run is the answer's one call.
            scripted_thread(&rt, vec![Script::events(tokens)], &[])
        },
        |(_dir, art, thread)| {
            rt.block_on(async {
                // A live subscriber, as the desktop bridge would be.
                let mut sub = art.sockets.stream.subscribe(StreamFilter::default());
                let props = AgentProps {
                    query: "go".into(),
                    thread_id: thread,
                    trace_id: None,
                    options: Default::default(),
                    attachments: Vec::new(),
                };
                let out = art.process(props, CancellationToken::new()).await.unwrap();
                assert!(out.response.content.ends_with(&format!("w{}", TOKENS - 1)));
                while sub.try_recv().is_some() {}
            });
        },
    );
    results.add(Figure::new(
        "agent/in_process_tokens_per_s",
        "PES run streaming 20,000 tokens from an in-process provider (SQLite, sockets, checkpoints)",
        "tokens/s",
        rates(TOKENS, &times),
    ));
}

/// Steps (and tool calls) in the step-agent runs.
const STEPS: usize = 20;

/// An instance over a fresh SQLite file with `scripts` and a thread with `tools`.
fn scripted_thread(
    rt: &tokio::runtime::Runtime,
    scripts: Vec<Script>,
    tools: &[&str],
) -> (tempfile::TempDir, ArtInstance, String) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("a.sqlite3")).unwrap());
    let art = ArtInstance::builder(storage, Arc::new(ScriptedSource::new(scripts)))
        .build()
        .unwrap();
    let thread = rt.block_on(async {
        let t = art
            .conversation
            .create_thread(None)
            .await
            .unwrap()
            .thread_id;
        let config = art_testkit::framework::scripted::thread_config("m", tools);
        art.state.set_thread_config(&t, &config).await.unwrap();
        t
    });
    (dir, art, thread)
}

/// Ask in the thread; the run must end with `tool_calls` calls made.
fn ask(rt: &tokio::runtime::Runtime, art: &ArtInstance, thread: String, tool_calls: usize) {
    rt.block_on(async {
        let props = AgentProps {
            query: "go".into(),
            thread_id: thread,
            trace_id: None,
            options: Default::default(),
            attachments: Vec::new(),
        };
        let out = art.process(props, CancellationToken::new()).await.unwrap();
        assert_eq!(out.metadata.tool_calls as usize, tool_calls, "{out:?}");
    });
}

/// The agent's own cost of a step and of a tool call, the provider in-process and
/// answering at once: a run of 20 steps that each call the calculator natively and end
/// (two LLM calls and one tool call a step), and a run whose plan already holds 20 calls
/// (the single pass of before: no LLM call between them).
fn agent_per_step(results: &mut Results) {
    let rt = runtime();
    let steps: Vec<(String, String, Vec<&str>)> = (1..=STEPS)
        .map(|i| (i.to_string(), format!("step {i}"), vec!["calculator"]))
        .collect();
    let listed: Vec<(&str, &str, &[&str])> = steps
        .iter()
        .map(|(id, d, t)| (id.as_str(), d.as_str(), t.as_slice()))
        .collect();
    let plan = steps_json("bench", &listed, &[]);
    let per_step = timed(
        7,
        || {
            let mut scripts = vec![Script::text(&plan)];
            for i in 0..STEPS {
                let id = format!("c{i}");
                let args = json!({ "expression": format!("{i} + 1") });
                scripts.push(Script::tool_calls(&[(id.as_str(), "calculator", args)]));
                scripts.push(Script::text("done"));
            }
            scripts.push(Script::text("All done."));
            scripted_thread(&rt, scripts, &["calculator"])
        },
        |(_dir, art, thread)| ask(&rt, &art, thread, STEPS),
    );
    let calls: Vec<(String, Value)> = (0..STEPS)
        .map(|i| (format!("c{i}"), json!({ "expression": format!("{i} + 1") })))
        .collect();
    let planned: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "calculator", args.clone()))
        .collect();
    let single = plan_json("bench", &planned);
    let per_call = timed(
        7,
        || {
            let scripts = vec![Script::text(&single), Script::text("All done.")];
            scripted_thread(&rt, scripts, &["calculator"])
        },
        |(_dir, art, thread)| ask(&rt, &art, thread, STEPS),
    );
    let each = |times: &[Duration]| -> Vec<f64> {
        times
            .iter()
            .map(|t| t.as_secs_f64() * 1_000.0 / STEPS as f64)
            .collect()
    };
    results.add(Figure::new(
        "agent/per_step_ms",
        "A step that acts (two LLM calls, one tool call, its observations and messages), in a run of 20 steps",
        "ms",
        each(&per_step),
    ));
    results.add(Figure::new(
        "agent/per_planned_call_ms",
        "A tool call the plan already held (the single pass of before), in a run of 20",
        "ms",
        each(&per_call),
    ));
}

/// Run every framework bench; the figures go to `framework.json`.
pub fn run() -> Result<(), String> {
    let mut results = Results::new("framework", "cargo xtask bench framework");
    results.note(
        "SQLite in WAL mode in a temp dir on this machine's disk; the query benches run \
         against a warm page cache (the realistic case for an open app). Median of 9 runs \
         (inserts), 21 (queries) or 7 (agent) after a warm-up.",
    );
    eprintln!("framework: inserts");
    insert_batched(&mut results);
    eprintln!("framework: query among 1,000,000");
    query_among_a_million(&mut results);
    eprintln!("framework: last 100 messages");
    last_100_messages(&mut results);
    eprintln!("framework: usage among 1,000,000 runs");
    crate::ledger::usage_among_a_million(&mut results);
    eprintln!("framework: agent per token");
    agent_per_token(&mut results);
    eprintln!("framework: agent per step and per tool call");
    agent_per_step(&mut results);
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}
