//! Desktop budgets of the UI, measured on the real app through WebDriver (`cargo xtask
//! bench` builds the release app and provides the display, D-Bus session and
//! tauri-driver; `ART_E2E_APP` names the binary):
//!
//! - **Opening a 5,000-message thread** (2,500 runs with plan and tool observations,
//!   some answers with code, 50 branches along the way): from the click in the sidebar to the frame after its
//!   newest message is in the page — backend reads, IPC, rendering and layout.
//! - **Streaming a 3,000-line answer at ~2,000 tokens/s** from a fake Ollama: every line
//!   is on screen at the end, in order, and the memory of the app and its WebKit
//!   processes grows by less than 50 MB.
//! - **Start-up** (the app started directly, no WebDriver): process start → the UI's
//!   `ui_ready` handshake (logged as "UI ready"), then the resident memory of the app and
//!   its WebKit processes after a few idle seconds; and the release binary's size.
//!
//! The figures go to the results file BENCHMARKS.md is made from (`cargo xtask bench`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::e2e::AppSession;
use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, router, text_reply};
use serde_json::json;

pub mod columns;
mod memory;
mod seed;

use seed::{Seeded, answer_of, long_answer, seed};

/// Runs (question + answer) in the long thread.
const RUNS: usize = 2_500;
/// Timed opens of the long thread.
const OPENS: usize = 7;
/// Lines of the streamed answer.
const LINES: usize = 3_000;
/// Streamed answers measured (each in its own thread).
const STREAMS: usize = 3;
/// Timed starts of the app (after one warm-up start).
const STARTS: usize = 5;
/// Tokens per write and the pause between writes: 2,000 tokens/s.
const TOKENS_PER_WRITE: usize = 20;
const WRITE_EVERY: Duration = Duration::from_millis(10);
/// The UI's streaming ramp: tokens per write (every [`WRITE_EVERY`]), one answer each.
const RAMP: &[usize] = &[20, 50, 100, 200, 400, 1_000, 2_000];
/// Lines of each answer of the ramp.
const RAMP_LINES: usize = 2_000;
/// How far behind the server the page may show an answer's end and still keep up.
const MOST_LAG: Duration = Duration::from_secs(1);

const ENTER: char = '\u{E006}';

/// Open `short`, then time opening `long` until the frame that shows its newest message
/// (ms): backend, IPC, building the page and its layout.
async fn time_open(app: &AppSession, seeded: &Seeded) -> f64 {
    app.click(&format!(
        ".thread-item[data-thread-id=\"{}\"] .thread-title",
        seeded.short
    ))
    .await;
    app.wait_for("[data-message-id=\"m0000\"]").await;
    let script = r#"
        const [thread, last, done] = arguments;
        const item = document.querySelector(`.thread-item[data-thread-id="${thread}"] .thread-title`);
        const t0 = performance.now();
        item.click();
        // Polled once per frame, just before the frame is painted: when the newest
        // message is there, force its layout and stop the clock (that frame shows it).
        const check = () => {
            const newest = document.querySelector(`[data-message-id="${last}"]`);
            if (newest) {
                newest.getBoundingClientRect();
                const ms = performance.now() - t0;
                setTimeout(() => done(ms), 0);
            } else {
                requestAnimationFrame(check);
            }
        };
        check();
    "#;
    let last = format!("m{:04}", 2 * RUNS - 1);
    let ms = app
        .eval_async(script, vec![json!(seeded.long), json!(last)])
        .await;
    ms.as_f64().expect("a duration")
}

/// The backend and IPC share of opening the long thread: the three commands the view
/// sends (its newest page, where the thread branches, then the observations of that
/// page's runs), timed from the page (ms).
async fn time_backend(app: &AppSession, seeded: &Seeded) -> f64 {
    let script = r#"
        const [thread, done] = arguments;
        const invoke = window.__TAURI__.core.invoke;
        const t0 = performance.now();
        invoke('list_messages', { threadId: thread, limit: 200 })
            .then(page => invoke('list_branches', { threadId: thread }).then(() => page))
            .then(page => {
                const traceIds = [...new Set(page.map(m => m.metadata.traceId).filter(Boolean))];
                return invoke('list_observations', { threadId: thread, traceIds });
            })
            .then(() => done(performance.now() - t0));
    "#;
    let ms = app.eval_async(script, vec![json!(seeded.long)]).await;
    ms.as_f64().expect("a duration")
}

/// The app binary under test.
fn app_binary() -> PathBuf {
    std::fs::canonicalize(std::env::var("ART_E2E_APP").expect("ART_E2E_APP")).expect("app path")
}

/// The app under test and every process it started (WebKit's web and network processes).
fn app_processes() -> Vec<memory::Usage> {
    memory::running(&app_binary())
}

/// Resident memory (kB) of the app under test and every process it started.
fn app_rss_kb() -> u64 {
    app_processes().iter().map(|p| p.rss_kb).sum()
}

/// `text` as `protocol` streams it, one event per token (an NDJSON line for Ollama, an
/// SSE event otherwise), `per_write` events per write every [`WRITE_EVERY`].
fn paced_reply(protocol: Protocol, text: &str, per_write: usize) -> art_testkit::fake::Reply {
    let mut reply = text_reply(protocol, text, usize::MAX);
    let body = String::from_utf8(reply.chunks.concat()).expect("UTF-8");
    let end = if protocol == Protocol::Ollama {
        "\n"
    } else {
        "\n\n"
    };
    let events: Vec<&str> = body.split_inclusive(end).collect();
    reply.chunks = events
        .chunks(per_write)
        .map(|group| group.concat().into_bytes())
        .collect();
    reply.delayed(WRITE_EVERY)
}

/// One step of the ramp.
struct Step {
    /// The pace the server kept, tokens/s (its first write to its last).
    achieved: f64,
    /// How long after the server's last write the answer's last line was on screen (ms).
    lag_ms: f64,
    /// Every line ended up shown, in order.
    whole: bool,
}

/// One step of the ramp: ask in `thread` for the answer of [`RAMP_LINES`] lines
/// (`tokens` tokens) the server streams at its pace.
async fn ramp_step(app: &AppSession, thread: &str, server: &FakeServer, tokens: usize) -> Step {
    app.click(&format!(
        ".thread-item[data-thread-id=\"{thread}\"] .thread-title"
    ))
    .await;
    app.wait_for("#composer-input").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let served_before = server.last_bytes().len();
    app.type_into("#composer-input", &format!("Write the long answer{ENTER}"))
        .await;
    let marker = format!("L{:04}", RAMP_LINES - 1);
    let script = r#"
        const done = arguments[arguments.length - 1];
        const answers = document.querySelectorAll('.message.ai .answer');
        const text = answers.length ? answers[answers.length - 1].textContent : '';
        done(text.includes(arguments[0]));
    "#;
    let started = Instant::now();
    let shown_at = loop {
        if app.eval_async(script, vec![json!(marker)]).await == json!(true) {
            break Instant::now();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the ramp's answer never showed its last line"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The plan's reply and the answer's: the answer's is the last of them.
    let last = loop {
        let last = server.last_bytes();
        if last.len() >= served_before + 2 {
            break last[last.len() - 1];
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let first = *server
        .first_bytes()
        .last()
        .expect("the answer's first write");
    let achieved = tokens as f64 / (last - first).as_secs_f64();
    let lag_ms = if shown_at >= last {
        (shown_at - last).as_secs_f64() * 1e3
    } else {
        -((last - shown_at).as_secs_f64() * 1e3)
    };
    while app.count(".message.ai.live").await > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run never ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let whole = shown_lines(app).await == (0..RAMP_LINES).collect::<Vec<_>>();
    Step {
        achieved,
        lag_ms,
        whole,
    }
}

/// Lines whose markers the finished answer shows, in order.
async fn shown_lines(app: &AppSession) -> Vec<usize> {
    let script = r#"
        const done = arguments[arguments.length - 1];
        const answers = document.querySelectorAll('.message.ai .answer');
        const text = answers.length ? answers[answers.length - 1].textContent : '';
        done((text.match(/L\d{4}/g) || []).map(m => Number(m.slice(1))));
    "#;
    serde_json::from_value(app.eval_async(script, Vec::new()).await).expect("numbers")
}

struct Stream {
    tokens: usize,
    seconds: f64,
    peak_growth_mb: f64,
    settled_growth_mb: f64,
}

/// Ask in `thread` and follow the 3,000-line answer to its end.
async fn stream(app: &AppSession, thread: &str, tokens: usize) -> Stream {
    app.click(&format!(
        ".thread-item[data-thread-id=\"{thread}\"] .thread-title"
    ))
    .await;
    app.wait_for("#composer-input").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let baseline = app_rss_kb();
    eprintln!("before: {}", memory::breakdown(&app_processes()));
    app.type_into("#composer-input", &format!("Write the long answer{ENTER}"))
        .await;
    let started = Instant::now();
    let mut peak = baseline;
    // The run is over when the stored answer replaced the live card.
    loop {
        peak = peak.max(app_rss_kb());
        let stored = app.count(".message.ai:not(.live) .answer-footer").await;
        if stored > 0 && app.count(".message.ai.live").await == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the answer never finished"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let lines = shown_lines(app).await;
    assert_eq!(
        lines,
        (0..LINES).collect::<Vec<_>>(),
        "every line, in order"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let settled = app_rss_kb();
    eprintln!("after: {}", memory::breakdown(&app_processes()));
    let mb = |kb: u64| kb.saturating_sub(baseline) as f64 / 1024.0;
    Stream {
        tokens,
        seconds,
        peak_growth_mb: mb(peak.max(settled)),
        settled_growth_mb: mb(settled),
    }
}

/// Process start → "UI ready" in the app's log (ms), then the memory of the app and its
/// WebKit processes after [`memory::IDLE`]. The app runs with a fresh data directory.
async fn start_up() -> (f64, memory::Totals) {
    use tokio::io::AsyncBufReadExt;
    let data = tempfile::tempdir().expect("data dir");
    let started = Instant::now();
    let mut child = tokio::process::Command::new(app_binary())
        .arg("--data-dir")
        .arg(data.path())
        .env("ART_WORKBENCH_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the app");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("UI ready") {
                return Some(started.elapsed());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the app logged \"UI ready\" within 30 s");
    // Keep reading its log so the app never blocks on a full pipe.
    let drain = tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    tokio::time::sleep(memory::IDLE).await;
    let processes = memory::under(child.id().expect("pid"));
    eprintln!("idle: {}", memory::breakdown(&processes));
    let _ = child.kill().await;
    drain.abort();
    (ready.as_secs_f64() * 1e3, memory::totals(&processes))
}

/// Seed, launch the app through WebDriver, open, stream, then start it directly; figures
/// go to `desktop.json`.
pub fn run() -> Result<(), String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(measure())
}

async fn measure() -> Result<(), String> {
    let mut results = Results::new("desktop", "cargo xtask bench desktop");
    let text = long_answer();
    // The threads have no tools: each question is one call, the answer's.
    let mut replies = Vec::new();
    let tokens = text.split_inclusive(' ').count();
    for _ in 0..STREAMS {
        replies.push(paced_reply(Protocol::Ollama, &text, TOKENS_PER_WRITE));
    }
    let ramp_text = answer_of(RAMP_LINES);
    let ramp_tokens = ramp_text.split_inclusive(' ').count();
    for per_write in RAMP {
        replies.push(paced_reply(Protocol::Ollama, &ramp_text, *per_write));
    }
    let ollama = FakeServer::start_at(0, Some(router(Protocol::Ollama)), replies)
        .await
        .expect("fake Ollama");
    let data = tempfile::tempdir().expect("data dir");
    eprintln!("seeding {} messages…", 2 * RUNS);
    let seeded = seed(data.path(), &ollama.url()).await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;

    let mut opens = Vec::new();
    for i in 0..OPENS {
        let ms = time_open(&app, &seeded).await;
        eprintln!("open {}: {ms:.1} ms", i + 1);
        opens.push(ms);
    }
    app.screenshot("bench-long-thread").await;
    let mut backend = Vec::new();
    for _ in 0..OPENS {
        backend.push(time_backend(&app, &seeded).await);
    }

    let mut runs = Vec::new();
    for (i, thread) in seeded.streams[..STREAMS].iter().enumerate() {
        let run = stream(&app, thread, tokens).await;
        eprintln!(
            "stream {}: {} tokens in {:.1} s, memory +{:.1} MB peak, +{:.1} MB after",
            i + 1,
            run.tokens,
            run.seconds,
            run.peak_growth_mb,
            run.settled_growth_mb
        );
        runs.push(run);
    }
    app.screenshot("bench-long-answer").await;
    // The ramp: faster and faster answers until the page falls behind or loses lines.
    let mut ramp = Vec::new();
    for (per_write, thread) in RAMP.iter().zip(&seeded.streams[STREAMS..]) {
        let rate = *per_write as f64 / WRITE_EVERY.as_secs_f64();
        let step = ramp_step(&app, thread, &ollama, ramp_tokens).await;
        eprintln!(
            "ramp at {rate:.0} tokens/s offered ({:.0} kept by the server): last line shown {:.0} ms after the server's last write, every line in order: {}",
            step.achieved, step.lag_ms, step.whole
        );
        ramp.push((rate, step));
    }
    app.close().await;

    eprintln!("start-up: {STARTS} starts after a warm-up…");
    let mut starts = Vec::new();
    for i in 0..=STARTS {
        let (ms, memory) = start_up().await;
        eprintln!(
            "start {i}: UI ready after {ms:.0} ms, {:.0} MB RSS / {:.0} MB PSS after {:?} idle",
            memory.rss_mb,
            memory.pss_mb,
            memory::IDLE
        );
        if i > 0 {
            starts.push((ms, memory));
        }
    }
    // The same wait as the app's: its median start-up, then the idle time.
    let mut ready: Vec<f64> = starts.iter().map(|s| s.0).collect();
    ready.sort_by(f64::total_cmp);
    let wait = Duration::from_secs_f64(ready[ready.len() / 2] / 1e3) + memory::IDLE;
    let mut blank = Vec::new();
    match memory::mini_browser() {
        Some(browser) => {
            for i in 0..=STARTS {
                let (totals, breakdown) = memory::blank_page(&browser, wait).await?;
                eprintln!("blank WebKitGTK page {i}: {breakdown}");
                if i > 0 {
                    blank.push(totals);
                }
            }
        }
        None => eprintln!("no WebKitGTK MiniBrowser here: the blank-page baseline is left out"),
    }

    results.note(&format!(
        "The release app (built as the Tauri CLI builds the `.deb`'s binary) under Xvfb in its \
         own D-Bus session. \
         Opening and streaming are driven through WebDriver ({OPENS} opens of a {}-message \
         thread; {STREAMS} streams of a {LINES}-line answer, {tokens} tokens from a fake Ollama \
         paced at {TOKENS_PER_WRITE} tokens every {WRITE_EVERY:?}; then a ramp of {}-line answers \
         ({ramp_tokens} tokens) at {} tokens per write, one answer each, its figure the time \
         from the server's last write to the answer's last line on screen, polled every 20 ms \
         through WebDriver); start-up is the app started \
         directly, {STARTS} times after a warm-up, each with a new data directory (page cache warm); \
         the baseline is WebKitGTK's MiniBrowser (same library, painting as the app does: on the \
         CPU where there is no GPU render node) on `about:blank`, idle as long.",
        2 * RUNS,
        RAMP_LINES,
        RAMP.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", "),
    ));
    results.add(
        Figure::new(
            "desktop/open_long_thread_ms",
            "Open a 5,000-message thread with 50 branches (click → newest message painted)",
            "ms",
            opens,
        )
        .budget(Budget::AtMost(100.0)),
    );
    results.add(Figure::new(
        "desktop/open_backend_ms",
        "… of which backend + IPC (its three commands, timed from the page)",
        "ms",
        backend,
    ));
    results.add(Figure::new(
        "desktop/stream_tokens_per_s",
        "Stream a 3,000-line answer: tokens/s delivered, every line shown in order",
        "tokens/s",
        runs.iter().map(|r| r.tokens as f64 / r.seconds).collect(),
    ));
    results.add(
        Figure::new(
            "desktop/stream_growth_mb",
            "Memory growth while streaming it (app + WebKit, RSS, peak)",
            "MB",
            runs.iter().map(|r| r.peak_growth_mb).collect(),
        )
        .budget(Budget::AtMost(50.0)),
    );
    results.add(Figure::new(
        "desktop/stream_settled_mb",
        "… two seconds after the answer ended",
        "MB",
        runs.iter().map(|r| r.settled_growth_mb).collect(),
    ));
    let number = crate::report::format::number;
    for (rate, step) in &ramp {
        let label = format!(
            "Ramp, {} tokens/s offered ({} kept by the server): the answer's end on screen after the server's{}",
            number(*rate),
            number(step.achieved),
            if step.whole {
                ""
            } else {
                " (lines missing or out of order!)"
            }
        );
        results.add(Figure::new(
            &format!("desktop/ramp_{rate:.0}_lag_ms"),
            &label,
            "ms",
            vec![step.lag_ms],
        ));
    }
    let kept_up = ramp
        .iter()
        .take_while(|(_, s)| s.whole && s.lag_ms <= MOST_LAG.as_secs_f64() * 1e3)
        .last()
        .map_or(0.0, |(_, s)| s.achieved);
    results.add(Figure::new(
        "desktop/ramp_sustained_tokens_per_s",
        &format!(
            "Fastest pace (as the server kept it) at which a {}-line answer's end was on screen within {} ms of the server's last write, every line in order",
            number(RAMP_LINES as f64),
            MOST_LAG.as_millis()
        ),
        "tokens/s",
        vec![kept_up],
    ));
    results.add(
        Figure::new(
            "desktop/start_ms",
            "Start to interactive (process start → UI ready)",
            "ms",
            starts.iter().map(|s| s.0).collect(),
        )
        .budget(Budget::AtMost(1000.0)),
    );
    results.add(
        Figure::new(
            "desktop/idle_rss_mb",
            "Idle memory after start (app + WebKit processes, RSS)",
            "MB",
            starts.iter().map(|s| s.1.rss_mb).collect(),
        )
        .budget(Budget::AtMost(150.0)),
    );
    results.add(Figure::new(
        "desktop/idle_pss_mb",
        "… the same as PSS (shared pages split between the processes)",
        "MB",
        starts.iter().map(|s| s.1.pss_mb).collect(),
    ));
    if !blank.is_empty() {
        results.add(Figure::new(
            "desktop/blank_webkit_rss_mb",
            "Baseline: WebKitGTK's MiniBrowser idle on a blank page (all its processes, RSS)",
            "MB",
            blank.iter().map(|b| b.rss_mb).collect(),
        ));
        results.add(Figure::new(
            "desktop/blank_webkit_pss_mb",
            "… the same as PSS",
            "MB",
            blank.iter().map(|b| b.pss_mb).collect(),
        ));
        results.add(
            Figure::new(
                "desktop/idle_pss_over_webkit_mb",
                "Idle memory the app adds to WebKitGTK's own (PSS, app − MiniBrowser, start by start)",
                "MB",
                starts
                    .iter()
                    .zip(&blank)
                    .map(|(s, b)| s.1.pss_mb - b.pss_mb)
                    .collect(),
            )
            .budget(Budget::AtMost(50.0)),
        );
    }
    let size = std::fs::metadata(app_binary()).expect("app binary").len();
    results.add(
        Figure::new(
            "desktop/binary_mb",
            "Release binary size",
            "MB",
            vec![size as f64 / 1e6],
        )
        // 25 MB until the document extractors came in (DESIGN.md: ≤ 35 MB with them and
        // the embedder).
        .budget(Budget::AtMost(35.0)),
    );
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}
