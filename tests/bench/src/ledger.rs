//! The usage page's aggregation over 1,000,000 recorded runs (budget: under 100 ms):
//! the ledger as a heavy user would have it after years — 20,000 threads of 50 runs,
//! each thread over one to three days of a year, eight models of four providers, a
//! thread mostly on one model — summed per model with the chart's per-day series, and
//! per day and per thread besides.

use std::sync::Arc;
use std::time::Instant;

use art::ArtInstance;
use art::storage::StorageAdapter;
use art::storage::ledger::UsageRecord;
use art::storage::sqlite::SqliteStorage;
use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::framework::scripted::ScriptedSource;
use art_types::usage::UsageBy;

use crate::framework::{ms, runtime, timed};

const RUNS: usize = 1_000_000;
const THREADS: usize = 20_000;
const MODELS: [(&str, &str); 8] = [
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-mini"),
    ("anthropic", "claude-sonnet"),
    ("anthropic", "claude-haiku"),
    ("openrouter", "deepseek/deepseek-r1"),
    ("openrouter", "qwen/qwen3"),
    ("ollama", "llama3.2"),
    ("ollama", "qwen3:8b"),
];

/// Run `i` of the ledger (deterministic: the same file every time).
fn run(i: usize) -> UsageRecord {
    let thread = i % THREADS;
    let nth = i / THREADS;
    // A thread lives one to three days; the threads spread over a year.
    let day = (thread * 7) % 365 + nth % (1 + thread % 3);
    let date = jiff::civil::date(2026, 1, 1)
        .checked_add(jiff::Span::new().days(day as i64))
        .unwrap();
    let model = if nth % 10 == 9 {
        (thread + 1) % 8
    } else {
        thread % 8
    };
    let (provider, model) = MODELS[model];
    UsageRecord {
        trace_id: format!("run-{i}"),
        thread_id: format!("thread-{thread}"),
        provider: provider.into(),
        model: model.into(),
        day: date.to_string(),
        started_at: 1_767_225_600_000 + i as i64,
        duration_ms: 800 + (i % 4_000) as u64,
        input_tokens: 500 + (i % 3_000) as u64,
        cached_input_tokens: (i % 200) as u64,
        output_tokens: 100 + (i % 900) as u64,
        thinking_tokens: if provider == "openrouter" {
            (i % 500) as u64
        } else {
            0
        },
        cost_nanos: (provider == "openrouter").then_some(40_000 + (i % 1_000) as u64),
    }
}

/// Seed the ledger, then time the page's questions.
pub fn usage_among_a_million(results: &mut Results) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(SqliteStorage::open(dir.path().join("usage.sqlite3")).unwrap());
    eprintln!("  seeding 1,000,000 runs…");
    let seeded = Instant::now();
    rt.block_on(async {
        for start in (0..RUNS).step_by(10_000) {
            let batch = (start..start + 10_000).map(run).collect();
            storage.record_usage(batch).await.unwrap();
        }
    });
    eprintln!("  seeded in {:.1} s", seeded.elapsed().as_secs_f64());
    let art = ArtInstance::builder(storage, Arc::new(ScriptedSource::new(Vec::new())))
        .build()
        .unwrap();
    let time = |by: UsageBy, check: &dyn Fn(usize, u64)| {
        let report = rt.block_on(art.usage.report(by, None)).unwrap();
        check(report.rows.len(), report.total.runs);
        let times = timed(
            21,
            || (),
            |()| {
                let report = rt.block_on(art.usage.report(by, None)).unwrap();
                assert_eq!(report.total.runs, RUNS as u64);
            },
        );
        ms(&times)
    };
    let runs = RUNS as u64;
    let by_model = time(UsageBy::Model, &|rows, total| {
        assert_eq!((rows, total), (8, runs));
    });
    let by_day = time(UsageBy::Day, &|rows, total| {
        assert!(rows > 300, "{rows} days");
        assert_eq!(total, runs);
    });
    let by_thread = time(UsageBy::Thread, &|rows, total| {
        assert_eq!((rows, total), (THREADS, runs));
    });
    results.add(
        Figure::new(
            "usage/page_million",
            "Usage page over 1,000,000 runs: per model, with the chart's days (costs, prices)",
            "ms",
            by_model,
        )
        .budget(Budget::AtMost(100.0)),
    );
    results.add(Figure::new(
        "usage/by_day_million",
        "Usage over 1,000,000 runs per day (365 rows)",
        "ms",
        by_day,
    ));
    results.add(Figure::new(
        "usage/by_thread_million",
        "Usage over 1,000,000 runs per thread (20,000 rows)",
        "ms",
        by_thread,
    ));
}
