//! Pushing traces to an OTLP collector (`art::push`), against its budgets:
//! 1. 1,000,000 spans from the queue to a local receiver — the testkit's, in a process of
//!    its own (`art-bench push-receiver`), gunzipping every request and counting its
//!    spans by walking the wire format (see `OtlpReceiver::counting`) — through the
//!    push's sender (batches read from SQLite, gzip, HTTP, rows removed): ≥ 200,000
//!    spans/s;
//! 2. the CPU a run adds when the push is on (exported and queued as it ends, sent by the
//!    sender beside the next runs), against the same runs with it off: ≤ 2 % for runs
//!    whose model answers over HTTP (the fake server in a process of its own), shown
//!    beside the floor — runs of the scripted provider in this process, which parse
//!    nothing;
//! 3. the time to the first token of those runs, on and off: no change.
//!
//! Run: `cargo xtask bench push` (or `art-bench push`). `art-bench push throughput` or
//! `art-bench push per-run` runs one part alone (to profile it) and prints its figures
//! without writing them.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::export::{self, Format, Options, Redactor, Scope};
use art::push::{Endpoint, Outbox, Sender, Step, TracePush};

use crate::compare::ServerProcess;
use crate::server::Framing;
use art::sockets::StreamFilter;
use art::storage::sqlite::SqliteStorage;
use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::fake::scripts::MODEL;
use art_testkit::framework::scripted::{Script, ScriptedSource, plan_json, thread_config};
use art_types::push::{PushSettings, PushState};
use art_types::{AgentProps, StreamEventKind, TokenType};
use serde_json::json;

/// Threads of 1,000 seeded runs: 167 × 1,000 × 6 spans = 1,002,000 spans.
const THREADS: usize = 167;
/// Sends of the whole queue.
const REPEATS: usize = 3;
/// Runs per batch when comparing the push on and off, and batches of each.
const RUNS: usize = 40;
const ROUNDS: usize = 11;
/// Tokens in each run's answer.
const TOKENS: usize = 300;
/// A pause after a batch's runs, before the push's work on them is measured: longer than
/// the storage's checkpoint interval (250 ms), so the runs' own background writing is
/// done.
const SETTLE: Duration = Duration::from_millis(600);

/// `art-bench push-receiver`: the testkit's OTLP receiver on a free port, counting what
/// it takes; prints its address, then, when its standard input closes, the spans taken.
pub fn receiver() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let receiver = art_testkit::otlp::OtlpReceiver::counting().await;
        println!("{}", receiver.url());
        let _ = std::io::stdout().flush();
        let mut rest = String::new();
        let _ = tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut rest)).await;
        println!("taken {}", receiver.taken());
    });
    Ok(())
}

/// The receiver's process.
struct Receiver {
    child: Child,
    url: String,
}

impl Receiver {
    fn spawn() -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .arg("push-receiver")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("the receiver did not start: {e}"))?;
        let mut url = String::new();
        let stdout = child.stdout.as_mut().ok_or("no receiver output")?;
        BufReader::new(stdout)
            .read_line(&mut url)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            child,
            url: url.trim().to_owned(),
        })
    }

    /// Stop it; the spans it took.
    fn stop(mut self) -> u64 {
        drop(self.child.stdin.take());
        let mut out = String::new();
        if let Some(stdout) = self.child.stdout.as_mut() {
            let _ = BufReader::new(stdout).read_line(&mut out);
        }
        let _ = self.child.wait();
        out.trim()
            .strip_prefix("taken ")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// 1,000,000 spans from the queue to the receiver, `REPEATS` times.
fn throughput(results: &mut Results, url: &str) -> u64 {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("push.sqlite3")).unwrap());
    let art = ArtInstance::builder(storage, Arc::new(ScriptedSource::new(Vec::new())))
        .build()
        .unwrap();
    eprintln!("seeding {} runs…", THREADS * 1_000);
    rt.block_on(crate::export::seed(&art, THREADS));
    // The queue holds what runs export as (with content, as most teams send it).
    let pb = dir.path().join("all.otlp.pb");
    let content = Options {
        include_content: true,
        ..Options::default()
    };
    rt.block_on(export::export_to_file(
        &art,
        &Scope::All,
        Format::OtlpProto,
        content,
        &Redactor::new(Vec::new()),
        &pb,
        &mut |_| {},
    ))
    .unwrap();
    let size = std::fs::metadata(&pb).map(|m| m.len()).unwrap_or(0);
    eprintln!("{:.0} MB of protobuf spans", size as f64 / 1e6);
    let mut rates = Vec::new();
    let mut sent_total = 0;
    let mut spans = 0;
    for repeat in 0..REPEATS {
        let queue = dir.path().join(format!("queue-{repeat}.sqlite"));
        let outbox = Arc::new(Outbox::open(&queue).unwrap());
        art::push::queue_file(&outbox, &pb).unwrap();
        spans = outbox.counts().unwrap().spans;
        let endpoint = Endpoint::new(url, &[], Default::default()).unwrap();
        let mut sender = Sender::new(Arc::clone(&outbox), endpoint);
        let started = Instant::now();
        let sent = rt.block_on(async {
            let mut sent = 0;
            loop {
                match sender.step().await.unwrap() {
                    Step::Empty => break sent,
                    Step::Sent { spans, .. } => sent += spans,
                    other => panic!("the local receiver refused a batch: {other:?}"),
                }
            }
        });
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(sent, spans, "every span sent");
        sent_total += sent;
        eprintln!("{spans} spans in {seconds:.2} s");
        rates.push(spans as f64 / seconds);
    }
    results.add(
        Figure::new(
            "push/queue_spans_per_s",
            &format!("{spans} queued spans sent to a local OTLP receiver (protobuf, gzip, batches of 4 MB)"),
            "spans/s",
            rates,
        )
        .budget(Budget::AtLeast(200_000.0)),
    );
    sent_total
}

/// CPU time of this process so far (user and system, every thread), in seconds (NaN
/// where it is not read).
fn cpu() -> f64 {
    crate::clients::cpu_seconds()
}

/// A run's scripts: a plan with one calculator call (run at once, no call between),
/// then an answer of `TOKENS` tokens.
fn scripts(runs: usize) -> Vec<Script> {
    let plan = plan_json(
        "bench",
        &[("c1", "calculator", json!({ "expression": "19 + 23" }))],
    );
    let mut all = Vec::new();
    for _ in 0..runs {
        all.push(Script::text(&plan));
        let mut tokens: Vec<StreamEventKind> = (0..TOKENS)
            .map(|i| StreamEventKind::Token {
                text: format!("w{i} "),
                token_type: TokenType::LlmResponse,
            })
            .collect();
        tokens.push(StreamEventKind::End);
        all.push(Script::events(tokens));
    }
    all
}

/// Where the runs' model answers from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The scripted provider in this process: a plan with one calculator call, then the
    /// answer — no HTTP, no parsing; the least CPU a run can spend.
    InProcess,
    /// The fake OpenAI-compatible server (`art-bench serve`, a process of its own) over
    /// TCP, streaming the answer as a real server writes it (one SSE event per token, as
    /// fast as it can): the plan answers directly, then the answer.
    OverHttp,
}

impl Source {
    fn key(self) -> &'static str {
        match self {
            Self::InProcess => "in_process",
            Self::OverHttp => "over_http",
        }
    }

    fn said(self) -> String {
        match self {
            Self::InProcess => format!(
                "plan, one tool call, a {TOKENS}-token answer; the scripted provider in this process"
            ),
            Self::OverHttp => format!(
                "plan, a {TOKENS}-token answer; OpenAI's SSE over TCP from the fake server's process"
            ),
        }
    }
}

/// One batch of runs: the runs' own CPU and each first answer token, then (push on) the
/// push's work for them, read once the runs' background writing is done.
struct Batch {
    runs_cpu: f64,
    push_cpu: f64,
    firsts: Vec<f64>,
    queued: u64,
}

/// `runs` runs in `thread`, each its own task's work on the runtime (as the app runs
/// them), then, if `pushing`, each queued as it would be when it ends and the batch sent.
async fn batch(
    art: Arc<ArtInstance>,
    push: Arc<TracePush>,
    thread: String,
    runs: usize,
    pushing: bool,
    tool_calls: u32,
) -> Batch {
    let redactor = Redactor::new(Vec::new());
    let mut firsts = Vec::new();
    let mut traces = Vec::new();
    // The runs' own CPU: each run from its start to its answer.
    let mut runs_cpu = 0.0;
    for _ in 0..runs {
        let mut sub = art.sockets.stream.subscribe(StreamFilter::default());
        // As the app starts a run: with its id, watched when it is sent (`watch` does
        // nothing with the push off).
        let trace = art::clock::new_id();
        let props = AgentProps {
            query: "What is 19 + 23?".into(),
            thread_id: thread.clone(),
            trace_id: Some(trace.clone()),
            options: Default::default(),
            attachments: Vec::new(),
        };
        let at = cpu();
        push.watch(&art, &thread, &trace);
        let started = Instant::now();
        let run = art.process(props, CancellationToken::new());
        tokio::pin!(run);
        // The first token of the answer (the synthesis streams it), taken while the run
        // goes on.
        let (mut first, mut listening) = (None, true);
        let out = loop {
            tokio::select! {
                out = &mut run => break out,
                event = sub.recv(), if listening => match event {
                    Some(e) if first.is_none() && matches!(
                        e.kind,
                        StreamEventKind::Token { token_type: TokenType::FinalSynthesisLlmResponse, .. }
                    ) => first = Some(started.elapsed()),
                    Some(_) => {}
                    None => listening = false,
                },
            }
        };
        runs_cpu += cpu() - at;
        let out = out.unwrap();
        assert_eq!(
            out.metadata.tool_calls, tool_calls,
            "{:?}",
            out.metadata.error
        );
        let first = first.unwrap_or_else(|| started.elapsed());
        firsts.push(first.as_secs_f64() * 1_000.0);
        traces.push(trace);
    }
    if !pushing {
        return Batch {
            runs_cpu,
            push_cpu: 0.0,
            firsts,
            queued: 0,
        };
    }
    // What the runs left to their storage's background threads (the WAL moved into the
    // database every 250 ms) is done before the push is measured: it is the runs' work,
    // and the CPU read here is the whole process's.
    tokio::time::sleep(SETTLE).await;
    // Each run's export and queuing, as the app does when a run ends.
    let at = cpu();
    let mut queued = 0;
    for trace in &traces {
        queued += push
            .run_ended(&art, &redactor, &thread, trace)
            .await
            .unwrap();
    }
    // Then the batch's sending: the sender waits `LINGER` after the first run queued
    // (longer than the queuing above takes), so it sends now.
    let mut status = push.status();
    while !status.borrow_and_update().queued_spans.eq(&0)
        && status.borrow().state != PushState::Failing
    {
        let _ = tokio::time::timeout(Duration::from_secs(5), status.changed()).await;
    }
    Batch {
        runs_cpu,
        push_cpu: cpu() - at,
        firsts,
        queued,
    }
}

/// CPU per run and time to first token, the push on and off, alternating batches, with
/// the model answering from `source`.
fn per_run(results: &mut Results, url: &str, source: Source) -> Result<u64, String> {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (art, server, tool_calls) = match source {
        Source::InProcess => {
            let storage = Arc::new(SqliteStorage::open(dir.path().join("runs.sqlite3")).unwrap());
            let source = Arc::new(ScriptedSource::new(scripts(2 * RUNS * ROUNDS + 4)));
            (
                ArtInstance::builder(storage, source).build().unwrap(),
                None,
                1,
            )
        }
        Source::OverHttp => {
            let server = ServerProcess::start(TOKENS, Framing::Events)?;
            (
                crate::clients::instance("openai", dir.path())?,
                Some(server),
                0,
            )
        }
    };
    let art = Arc::new(art);
    let push = TracePush::open(&dir.path().join("outbox.sqlite")).unwrap();
    let stop = CancellationToken::new();
    // Each batch in a thread of its own: a run reads its thread's history, so the
    // batches on and off start alike (a thread grown by the batches before would make
    // the later ones slower, whichever they are).
    let new_thread = || {
        rt.block_on(async {
            match &server {
                None => {
                    let t = art
                        .conversation
                        .create_thread(None)
                        .await
                        .unwrap()
                        .thread_id;
                    let config = thread_config("m", &["calculator"]);
                    art.state.set_thread_config(&t, &config).await.unwrap();
                    t
                }
                Some(server) => {
                    let base = format!("{}/v1", server.url);
                    art_testkit::framework::adapters::thread_at(&art, "openai", MODEL, &base, &[])
                        .await
                }
            }
        })
    };
    rt.spawn(Arc::clone(&push).run(stop.clone()));
    let on = PushSettings {
        enabled: true,
        endpoint: url.to_owned(),
        ..PushSettings::default()
    };
    let (mut cpu_off, mut cpu_on, mut ttft_off, mut ttft_on) = (vec![], vec![], vec![], vec![]);
    // The push's own CPU in each batch with it on, against the rest of that batch.
    let mut direct = Vec::new();
    let mut queued = 0;
    // One run each way first: warm caches and connections. The order alternates, so
    // neither way always follows the other.
    for round in 0..=ROUNDS {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for pushing in order {
            let thread = new_thread();
            let settings = PushSettings {
                enabled: pushing,
                ..on.clone()
            };
            push.configure(&settings, &[]).unwrap();
            let runs = if round == 0 { 1 } else { RUNS };
            // A task on the runtime, as the app runs a run (`block_on` would run it on
            // this thread, every read hopping to it from a worker).
            let task = rt.spawn(batch(
                Arc::clone(&art),
                Arc::clone(&push),
                thread,
                runs,
                pushing,
                tool_calls,
            ));
            let mut done = rt
                .block_on(task)
                .map_err(|e| format!("a batch failed: {e}"))?;
            queued += done.queued;
            // On: the runs and the push's work for them; off: the runs.
            let per_run = (done.runs_cpu + done.push_cpu) * 1_000.0 / runs as f64;
            if round > 0 && pushing {
                direct.push(done.push_cpu / done.runs_cpu * 100.0);
            }
            if round > 0 {
                let median_first = median(&mut done.firsts);
                if pushing {
                    cpu_on.push(per_run);
                    ttft_on.push(median_first);
                } else {
                    cpu_off.push(per_run);
                    ttft_off.push(median_first);
                }
            }
        }
    }
    stop.cancel();
    let added: Vec<f64> = cpu_on
        .iter()
        .zip(&cpu_off)
        .map(|(on, off)| (on - off) / off * 100.0)
        .collect();
    let ttft_added: Vec<f64> = ttft_on
        .iter()
        .zip(&ttft_off)
        .map(|(on, off)| on - off)
        .collect();
    let key = source.key();
    let said = source.said();
    results.add(Figure::new(
        &format!("push/{key}/run_cpu_off_ms"),
        &format!("CPU of a run ({said}), push off"),
        "ms",
        cpu_off,
    ));
    results.add(Figure::new(
        &format!("push/{key}/run_cpu_on_ms"),
        &format!(
            "The same runs ({said}), push on: each run's CPU and its share of the push's \
             work (exported, queued, sent to the receiver)"
        ),
        "ms",
        cpu_on,
    ));
    let added_cpu = Figure::new(
        &format!("push/{key}/run_cpu_added_percent"),
        &format!(
            "CPU the push adds to a run ({said}): its own (each run's export and queuing, \
             then the batch's sending, read once the runs' background writing is done), \
             against the runs' own CPU, batches of {RUNS}"
        ),
        "%",
        direct,
    );
    // The budget is a run's: one whose model answers over HTTP, as every provider's
    // does. The in-process run is the floor (no parsing at all), shown beside it.
    results.add(match source {
        Source::OverHttp => added_cpu.budget(Budget::AtMost(2.0)),
        Source::InProcess => added_cpu,
    });
    results.add(Figure::new(
        &format!("push/{key}/run_cpu_added_paired_percent"),
        &format!(
            "Cross-check ({said}): a batch of {RUNS} on against the batch of {RUNS} off \
             beside it (each in a new thread, the order alternating) — the machine's spread \
             between batches is larger than what is measured"
        ),
        "%",
        added,
    ));
    results.add(Figure::new(
        &format!("push/{key}/ttft_added_ms"),
        &format!(
            "Time to first token of a run ({said}), push on minus off (median of each \
             batch of {RUNS})"
        ),
        "ms",
        ttft_added,
    ));
    Ok(queued)
}

/// Run the push benchmarks; the figures go to `push.json` (one `part` alone only prints
/// them).
pub fn run(part: Option<&str>) -> Result<(), String> {
    let mut results = Results::new("push", "cargo xtask bench push");
    results.note(
        "The receiver is the testkit's OTLP/HTTP receiver in a process of its own on this \
         machine (it counts every request's spans by walking their wire format, after \
         gunzipping it, and answers as a collector does); both share the machine's cores. \
         The queue is a SQLite file on this machine's disk, filled from an export of 167,000 \
         PES-shaped runs with content. The per-run figures are taken twice: runs whose model \
         answers over HTTP (OpenAI's SSE from the fake server, `art-bench serve`, in a \
         process of its own: what a run spends, less TLS) carry the budget; runs of the \
         scripted provider in this process (no HTTP, no parsing: the least a run can spend, \
         so the harshest ratio) are shown beside them.",
    );
    let receiver = Receiver::spawn()?;
    let url = &receiver.url;
    let sent = match part {
        None => {
            throughput(&mut results, url)
                + per_run(&mut results, url, Source::OverHttp)?
                + per_run(&mut results, url, Source::InProcess)?
        }
        Some("throughput") => throughput(&mut results, url),
        Some("per-run") => {
            per_run(&mut results, url, Source::OverHttp)?
                + per_run(&mut results, url, Source::InProcess)?
        }
        Some("per-run-http") => per_run(&mut results, url, Source::OverHttp)?,
        Some("per-run-in-process") => per_run(&mut results, url, Source::InProcess)?,
        Some(other) => {
            return Err(format!(
                "no part {other:?} (throughput, per-run, per-run-http, per-run-in-process)"
            ));
        }
    };
    let taken = receiver.stop();
    if taken != sent {
        return Err(format!("the receiver took {taken} spans of {sent} sent"));
    }
    if part.is_some() {
        return Ok(()); // its figures were printed as they came
    }
    results.write().map(drop).map_err(|e| e.to_string())
}
