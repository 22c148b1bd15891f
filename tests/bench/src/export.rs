//! Trace export budgets: 1,000,000 observations (100,000 runs of 10, in 100 threads) to
//! OTLP JSON in < 3 s and to native JSONL in < 2 s, with memory bounded (the peak
//! resident size grows by a small, fixed amount, not with the data).
//! Run: `cargo xtask bench export` (or `art-bench export`).

use std::sync::Arc;
use std::time::Instant;

use art::ArtInstance;
use art::export::{self, Format, Options, Redactor, Scope};
use art::storage::sqlite::SqliteStorage;
use art_testkit::bench::{Budget, Figure, Results};
use art_types::{Observation, ObservationType, Phase, SpanInfo, ThreadSummary};
use serde_json::json;

const THREADS: usize = 100;
const RUNS_PER_THREAD: usize = 1_000;
const REPEATS: usize = 5;

/// Start measuring the peak resident size afresh (Linux: `5` to `clear_refs`).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Current resident memory (kB).
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Peak resident memory since the last [`reset_peak`] (kB).
fn peak_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// One run as the PES agent records it: ten observations with span information.
fn pes_run(thread: &str, run: usize, t0: i64) -> Vec<Observation> {
    let trace = format!("{thread}-run-{run}");
    let span = |phase, id: &str, parent: Option<&str>, start: i64, end: Option<i64>| {
        Some(SpanInfo {
            phase,
            span_id: format!("{trace}-{id}"),
            parent_span_id: parent.map(|p| format!("{trace}-{p}")),
            start_ms: t0 + start,
            end_ms: end.map(|e| t0 + e),
        })
    };
    let model = json!({ "provider": "ollama", "model": "llama3.2" });
    let mut n = 0;
    let mut obs = |kind, at: i64, content: serde_json::Value, span| {
        n += 1;
        Observation {
            id: format!("{trace}-{n}"),
            thread_id: thread.to_owned(),
            trace_id: trace.clone(),
            timestamp: t0 + at,
            kind,
            title: art::observation::default_title(kind).to_owned(),
            content,
            metadata: model.clone(),
            span,
        }
    };
    use ObservationType as T;
    use Phase as P;
    vec![
        obs(
            T::LlmStreamStart,
            1,
            json!({ "stage": "planning" }),
            span(P::Planning, "llm1", Some("plan"), 1, None),
        ),
        obs(
            T::LlmStreamEnd,
            40,
            json!({ "metadata": { "inputTokens": 120, "outputTokens": 60 } }),
            span(P::Planning, "llm1", Some("plan"), 1, Some(40)),
        ),
        obs(
            T::Plan,
            41,
            json!({ "intent": "add two numbers", "plan": ["calculate", "answer"] }),
            span(P::Planning, "plan", Some("root"), 0, Some(41)),
        ),
        obs(
            T::ToolCall,
            41,
            json!({ "callId": "c1", "toolName": "calculator", "arguments": { "expression": "19 + 23" } }),
            span(P::Planning, "plan", Some("root"), 0, None),
        ),
        obs(
            T::ToolExecution,
            45,
            json!({ "callId": "c1", "toolName": "calculator", "arguments": { "expression": "19 + 23" }, "status": "success", "output": 42 }),
            span(P::Execution, "tool", Some("root"), 42, Some(45)),
        ),
        obs(
            T::LlmStreamStart,
            46,
            json!({ "stage": "synthesis" }),
            span(P::Synthesis, "llm2", Some("synth"), 46, None),
        ),
        obs(
            T::LlmStreamMetadata,
            90,
            json!({ "inputTokens": 200, "outputTokens": 30 }),
            span(P::Synthesis, "llm2", Some("synth"), 46, None),
        ),
        obs(
            T::LlmStreamEnd,
            90,
            json!({ "metadata": { "inputTokens": 200, "outputTokens": 30 } }),
            span(P::Synthesis, "llm2", Some("synth"), 46, Some(90)),
        ),
        obs(
            T::Synthesis,
            91,
            json!({ "length": 30 }),
            span(P::Synthesis, "synth", Some("root"), 46, Some(91)),
        ),
        obs(
            T::FinalResponse,
            92,
            json!({ "messageId": "m", "metadata": { "usage": { "inputTokens": 320, "outputTokens": 90 } } }),
            span(P::Run, "root", None, 0, Some(92)),
        ),
    ]
}

/// `threads` threads of 1,000 PES-shaped runs each (ten observations, six spans a run).
pub(crate) async fn seed(art: &ArtInstance, threads: usize) {
    for t in 0..threads {
        let thread = format!("thread-{t:03}");
        let t0 = 1_767_225_600_000 + (t as i64) * 10_000_000;
        let summary = ThreadSummary {
            thread_id: thread.clone(),
            title: format!("Thread {t}"),
            created_at: t0,
            updated_at: t0,
            message_count: 0,
            forked_from: None,
            head: None,
        };
        art.conversation.restore(&summary, &[]).await.unwrap();
        let observations: Vec<Observation> = (0..RUNS_PER_THREAD)
            .flat_map(|r| pes_run(&thread, r, t0 + (r as i64) * 100))
            .collect();
        art.observations.restore(&observations).await.unwrap();
    }
}

/// Seed 1,000,000 observations, then time both export formats; figures go to `export.json`.
pub fn run() -> Result<(), String> {
    let mut results = Results::new("export", "cargo xtask bench export");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("export.sqlite3")).unwrap());
    let source = Arc::new(art_testkit::framework::scripted::ScriptedSource::new(
        Vec::new(),
    ));
    let art = ArtInstance::builder(storage, source).build().unwrap();
    let total = THREADS * RUNS_PER_THREAD * 10;
    eprintln!("seeding {total} observations…");
    let seeding = Instant::now();
    rt.block_on(seed(&art, THREADS));
    let seeded = seeding.elapsed().as_secs_f64();
    eprintln!("seeded in {seeded:.1} s");
    results.note(&format!(
        "1,000,000 observations (100 threads × 1,000 runs × 10 observations shaped like a PES \
         run) in a SQLite file, exported whole (`--all`) to a file on this machine's disk; \
         median of {REPEATS}. Memory is the growth of the process's peak resident size."
    ));
    results.add(Figure::new(
        "storage/restore_million",
        "1,000,000 observations written with their threads (import path, one run)",
        "obs/s",
        vec![total as f64 / seeded],
    ));
    let redactor = Redactor::new(Vec::new());
    // `ART_BENCH_FORMATS=otlp` measures one format only (for profiling).
    let only = std::env::var("ART_BENCH_FORMATS").unwrap_or_default();
    let formats = [Format::Jsonl, Format::Otlp]
        .into_iter()
        .filter(|f| only.is_empty() || only.split(',').any(|o| o == f.as_str()));
    for format in formats {
        let mut times = Vec::new();
        let mut bytes = 0;
        let before = rss_kb();
        reset_peak();
        for _ in 0..REPEATS {
            let path = dir.path().join(format!("out.{}", format.extension()));
            let file = std::fs::File::create(&path).unwrap();
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            let started = Instant::now();
            let summary = rt
                .block_on(export::export(
                    &art,
                    &Scope::All,
                    format,
                    Options::default(),
                    &redactor,
                    &mut out,
                    &mut |_| {},
                ))
                .unwrap();
            drop(out);
            times.push(started.elapsed().as_secs_f64());
            assert_eq!(summary.observations, total as u64);
            bytes = std::fs::metadata(&path).unwrap().len();
        }
        let growth_mb = peak_kb().saturating_sub(before) as f64 / 1024.0;
        let (name, budget) = match format {
            Format::Otlp => ("OTLP JSON", 3.0),
            _ => ("native JSONL", 2.0),
        };
        let id = format!("export/{}", format.as_str());
        let label = format!("Export of 1,000,000 observations to {name}");
        results.add(
            Figure::new(&format!("{id}/seconds"), &label, "s", times)
                .budget(Budget::AtMost(budget)),
        );
        results.add(Figure::new(
            &format!("{id}/output_mb"),
            &format!("… size of the {name} file"),
            "MB",
            vec![bytes as f64 / 1e6],
        ));
        results.add(Figure::new(
            &format!("{id}/memory_growth_mb"),
            "… memory growth while exporting it (peak resident size)",
            "MB",
            vec![growth_mb],
        ));
    }
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}
