//! `art-bench columns-page`: the page while a comparison's four columns stream, by the
//! desktop bench's method (the release app through WebDriver, the answers from a fake
//! server paced like a model). Four models of one OpenAI-compatible entry — a fake
//! server at the threads' base URL listing them, the key set through the app — each
//! answering the same 2,000-line answer; the question asked through **Compare…** with
//! the four ticked. Measured against one stream of the same answer at the same pace in a
//! thread of its own:
//!
//! - each column's last line on screen after the server's last write of that column's
//!   answer (the desktop bench's lag, budget [`MOST_LAG`]), every line shown in order;
//! - the page's frames while the answers arrive: the intervals between
//!   `requestAnimationFrame` callbacks from the click to the last column's last line —
//!   the 95th percentile and the longest — and the same page idle as the baseline.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::Protocol;
use art_testkit::fake::{FakeServer, Reply, Router};
use art_types::ProviderConfig;
use art_types::provider::BASE_URL_OPTION;
use serde_json::{Value, json};

use super::seed::{answer_of, threads_on};
use super::{ENTER, MOST_LAG, RAMP_LINES, WRITE_EVERY, paced_reply};

/// The models compared (the thread's own is the first).
const MODELS: [&str; 4] = ["model-a", "model-b", "model-c", "model-d"];
/// Tokens each answer's server writes every [`WRITE_EVERY`]: 2,000 and 10,000 tokens/s
/// per stream (four times that for the comparison).
const PACES: [usize; 2] = [20, 100];
/// Rounds of each way at each pace: first those timing the lag (the page polled through
/// WebDriver every [`POLL_LAG`]), then those recording the frames (polled every
/// [`POLL_FRAMES`], so that the polling's own scripts hardly touch them).
const LAG_ROUNDS: usize = 3;
const FRAME_ROUNDS: usize = 2;
const ROUNDS: usize = LAG_ROUNDS + FRAME_ROUNDS;
const POLL_LAG: Duration = Duration::from_millis(20);
const POLL_FRAMES: Duration = Duration::from_millis(500);
/// How long the idle page's frames are recorded.
const IDLE: Duration = Duration::from_secs(3);
/// A frame longer than this is a long frame (the browsers' long-animation-frame mark).
const LONG_FRAME_MS: f64 = 50.0;

/// The fake server: the four models listed at `/v1/models`, each model's chat calls
/// answered from its own queue (its answer per round: the threads have no tools, so no plan), whatever order
/// the four columns' calls arrive in; Ollama's list empty.
fn router(queues: HashMap<String, VecDeque<Reply>>) -> Router {
    let queues = Mutex::new(queues);
    Box::new(move |request| {
        let mut line = request.request_line.split(' ');
        let (method, path) = (line.next()?, line.next()?);
        let body = match (method, path) {
            ("GET", "/v1/models") => {
                json!({ "data": MODELS.iter().map(|m| json!({ "id": m })).collect::<Vec<_>>() })
            }
            ("GET", "/api/tags") => json!({ "models": [] }),
            ("GET", "/api/version") => json!({ "version": "0.12.0-fake" }),
            ("POST", "/v1/chat/completions") => {
                let model = request.json()["model"].as_str()?.to_owned();
                let mut queues = queues.lock().unwrap_or_else(|p| p.into_inner());
                return Some(queues.get_mut(&model)?.pop_front().unwrap_or_else(|| {
                    Reply::error(500, r#"{"error":{"message":"no reply left"}}"#)
                }));
            }
            _ => return Some(Reply::error(404, r#"{"error":{"message":"not here"}}"#)),
        };
        Some(Reply::json(&body.to_string()))
    })
}

/// Frame intervals (ms) summed up: the 95th percentile, the longest, and how many of
/// them were long.
struct Frames {
    p95: f64,
    longest: f64,
    long: usize,
    count: usize,
}

impl Frames {
    fn of(mut intervals: Vec<f64>) -> Self {
        assert!(intervals.len() > 10, "too few frames: {intervals:?}");
        intervals.sort_by(f64::total_cmp);
        Self {
            p95: intervals[intervals.len() * 95 / 100],
            longest: *intervals.last().expect("frames"),
            long: intervals.iter().filter(|ms| **ms > LONG_FRAME_MS).count(),
            count: intervals.len(),
        }
    }
}

/// Start recording the page's frames (every `requestAnimationFrame` callback's time).
async fn record_frames(app: &AppSession) {
    app.run_script(
        r#"
        window.__benchFrames = [];
        window.__benchRecording = true;
        const tick = (t) => {
            window.__benchFrames.push(t);
            if (window.__benchRecording) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        "#,
    )
    .await;
}

/// Stop recording; the intervals between the frames recorded (ms).
async fn recorded_frames(app: &AppSession) -> Frames {
    let script = r#"
        const done = arguments[arguments.length - 1];
        window.__benchRecording = false;
        const t = window.__benchFrames;
        done(t.slice(1).map((x, i) => x - t[i]));
    "#;
    let intervals: Vec<f64> =
        serde_json::from_value(app.eval_async(script, Vec::new()).await).expect("intervals");
    Frames::of(intervals)
}

/// For each selector, whether the end of its last match (its last three elements: the
/// streamed answer's last chunks) holds `marker`, polled through WebDriver `every` until
/// all do; when each first did.
async fn shown_at(
    app: &AppSession,
    selectors: &[String],
    marker: &str,
    every: Duration,
) -> Vec<Instant> {
    let script = r#"
        const done = arguments[arguments.length - 1];
        const [selectors, marker] = arguments;
        done(selectors.map(s => {
            const all = document.querySelectorAll(s);
            if (all.length === 0) return false;
            const kids = all[all.length - 1].children;
            for (let i = Math.max(0, kids.length - 3); i < kids.length; i++) {
                if (kids[i].textContent.includes(marker)) return true;
            }
            return false;
        }));
    "#;
    let started = Instant::now();
    let mut at: Vec<Option<Instant>> = vec![None; selectors.len()];
    while at.iter().any(Option::is_none) {
        let shown: Vec<bool> = serde_json::from_value(
            app.eval_async(script, vec![json!(selectors), json!(marker)])
                .await,
        )
        .expect("booleans");
        let now = Instant::now();
        for (at, shown) in at.iter_mut().zip(shown) {
            if shown && at.is_none() {
                *at = Some(now);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "not every answer showed its last line: {selectors:?}"
        );
        tokio::time::sleep(every).await;
    }
    at.into_iter().flatten().collect()
}

/// Line markers `selector`'s last match shows, in order.
async fn lines_of(app: &AppSession, selector: &str) -> Vec<usize> {
    let script = r#"
        const done = arguments[arguments.length - 1];
        const all = document.querySelectorAll(arguments[0]);
        const text = all.length ? all[all.length - 1].textContent : '';
        done((text.match(/L\d{4}/g) || []).map(m => Number(m.slice(1))));
    "#;
    serde_json::from_value(app.eval_async(script, vec![json!(selector)]).await).expect("numbers")
}

/// When the server finished each chat call it answered for `model`, in order.
fn calls_of(server: &FakeServer, model: &str) -> Vec<Instant> {
    server
        .completed()
        .into_iter()
        .filter(|(r, _)| r.request_line.starts_with("POST /v1/chat/completions"))
        .filter(|(r, _)| r.json()["model"] == model)
        .map(|(_, at)| at)
        .collect()
}

/// When the server finished writing `model`'s answer in the round asked after it had
/// finished `calls_before` of its calls (each round asks it twice: its plan, then its
/// answer).
async fn answer_written(server: &FakeServer, model: &str, calls_before: usize) -> Instant {
    let started = Instant::now();
    loop {
        let ended = calls_of(server, model);
        if ended.len() >= calls_before + 2 {
            return ended[ended.len() - 1];
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server never finished {model}'s answer"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How long after `written` something was `shown` (ms; negative if before).
fn lag_ms(shown: Instant, written: Instant) -> f64 {
    if shown >= written {
        (shown - written).as_secs_f64() * 1e3
    } else {
        -((written - shown).as_secs_f64() * 1e3)
    }
}

/// One way's round: each stream's lag (ms), whether every line showed in order, the
/// frames.
struct Round {
    lags: Vec<f64>,
    whole: bool,
    frames: Frames,
}

/// Open `thread` and write the question.
async fn open(app: &AppSession, thread: &str) {
    app.click(&format!(
        ".thread-item[data-thread-id=\"{thread}\"] .thread-title"
    ))
    .await;
    app.wait_for("#composer-input").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    app.type_into("#composer-input", "Write the long answer")
        .await;
}

/// The thread's own model answers (Send), timed like the desktop bench's streams.
async fn lone(app: &AppSession, server: &FakeServer, thread: &str, every: Duration) -> Round {
    open(app, thread).await;
    let before = calls_of(server, MODELS[0]).len();
    record_frames(app).await;
    app.type_into("#composer-input", &format!("Write the long answer{ENTER}"))
        .await;
    let marker = format!("L{:04}", RAMP_LINES - 1);
    let answer = ".message.ai .answer".to_owned();
    let shown = shown_at(app, std::slice::from_ref(&answer), &marker, every).await;
    let frames = recorded_frames(app).await;
    let written = answer_written(server, MODELS[0], before).await;
    while app.count(".message.ai.live").await > 0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Round {
        lags: vec![lag_ms(shown[0], written)],
        whole: lines_of(app, &answer).await == (0..RAMP_LINES).collect::<Vec<_>>(),
        frames,
    }
}

/// The four models asked through Compare…; each column timed.
async fn four(app: &AppSession, server: &FakeServer, thread: &str, every: Duration) -> Round {
    open(app, thread).await;
    let before: Vec<usize> = MODELS.iter().map(|m| calls_of(server, m).len()).collect();
    app.click("#compare-button").await;
    // Every provider's list in first (a tick on an entry being drawn again is lost).
    app.wait_gone("#compare-menu .group-loading").await;
    for model in MODELS {
        app.click(&format!(".compare-choice[data-model=\"{model}\"] input"))
            .await;
    }
    app.wait_for_text("#compare-start", "Ask 4 models").await;
    record_frames(app).await;
    app.click("#compare-start").await;
    app.wait_for("#comparison").await;
    let marker = format!("L{:04}", RAMP_LINES - 1);
    let answers: Vec<String> = MODELS
        .iter()
        .map(|m| format!(".comparison-column[data-model=\"{m}\"] .answer"))
        .collect();
    let shown = shown_at(app, &answers, &marker, every).await;
    let frames = recorded_frames(app).await;
    let mut lags = Vec::new();
    for ((model, shown), before) in MODELS.iter().zip(&shown).zip(before) {
        lags.push(lag_ms(*shown, answer_written(server, model, before).await));
    }
    app.wait_for_count(".keep-column", MODELS.len()).await;
    let mut whole = true;
    for answer in &answers {
        whole &= lines_of(app, answer).await == (0..RAMP_LINES).collect::<Vec<_>>();
    }
    Round {
        lags,
        whole,
        frames,
    }
}

/// Each round's number and how often it polls the page.
fn polls() -> impl Iterator<Item = (usize, Duration)> {
    (0..ROUNDS).map(|i| {
        (
            i,
            if i < LAG_ROUNDS {
                POLL_LAG
            } else {
                POLL_FRAMES
            },
        )
    })
}

/// Seed, launch, measure; figures go to `columns-page.json`.
pub fn run() -> Result<(), String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(measure())
}

async fn measure() -> Result<(), String> {
    let mut results = Results::new("columns-page", "cargo xtask bench columns-page");
    let text = answer_of(RAMP_LINES);
    let tokens = text.split_inclusive(' ').count();
    // Per model, per pace: the lone rounds (model-a only), then the comparison's.
    let mut queues: HashMap<String, VecDeque<Reply>> = HashMap::new();
    for pace in PACES {
        for models in [&MODELS[..1], &MODELS[..]] {
            for _ in 0..ROUNDS {
                for model in models {
                    let queue = queues.entry((*model).to_owned()).or_default();
                    queue.push_back(paced_reply(Protocol::OpenAi, &text, pace));
                }
            }
        }
    }
    let server = FakeServer::start_at(0, Some(router(queues)), Vec::new())
        .await
        .map_err(|e| e.to_string())?;
    let data = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut options = serde_json::Map::new();
    options.insert(
        BASE_URL_OPTION.into(),
        Value::String(format!("{}/v1", server.url())),
    );
    let provider = ProviderConfig {
        provider_name: "openai".into(),
        model_id: MODELS[0].into(),
        adapter_options: options,
    };
    let threads = threads_on(data.path(), &provider, 2 * PACES.len() * ROUNDS).await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    let set = app
        .eval_async(
            r#"const done = arguments[arguments.length - 1];
               window.__TAURI__.core.invoke('set_api_key', { provider: 'openai', key: 'sk-bench-0123456789abcdef' })
                 .then(() => done('set'), e => done(JSON.stringify(e)));"#,
            Vec::new(),
        )
        .await;
    assert_eq!(set, json!("set"), "the key was not set");

    record_frames(&app).await;
    tokio::time::sleep(IDLE).await;
    let idle = recorded_frames(&app).await;
    eprintln!(
        "idle page: {} frames, p95 {:.1} ms, longest {:.1} ms",
        idle.count, idle.p95, idle.longest
    );
    let mut threads = threads.iter();
    let mut measured = Vec::new();
    for pace in PACES {
        let rate = pace as f64 / WRITE_EVERY.as_secs_f64();
        let mut lone_rounds = Vec::new();
        for (i, every) in polls() {
            let thread = threads.next().expect("a thread");
            let r = lone(&app, &server, thread, every).await;
            eprintln!(
                "{rate:.0} tokens/s, one stream, round {i}: lag {:.0} ms, whole {}, frames p95 {:.1} ms, longest {:.1} ms, {} long of {}",
                r.lags[0], r.whole, r.frames.p95, r.frames.longest, r.frames.long, r.frames.count
            );
            lone_rounds.push(r);
        }
        let mut four_rounds = Vec::new();
        for (i, every) in polls() {
            let thread = threads.next().expect("a thread");
            let r = four(&app, &server, thread, every).await;
            eprintln!(
                "{rate:.0} tokens/s × 4 columns, round {i}: lags {:?} ms, whole {}, frames p95 {:.1} ms, longest {:.1} ms, {} long of {}",
                r.lags.iter().map(|l| l.round()).collect::<Vec<_>>(),
                r.whole,
                r.frames.p95,
                r.frames.longest,
                r.frames.long,
                r.frames.count
            );
            four_rounds.push(r);
        }
        measured.push((rate, lone_rounds, four_rounds));
    }
    app.screenshot("bench-four-columns").await;
    app.close().await;
    report(&mut results, tokens, &idle, &measured);
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}

type Measured = (f64, Vec<Round>, Vec<Round>);

fn report(results: &mut Results, tokens: usize, idle: &Frames, measured: &[Measured]) {
    let number = crate::report::format::number;
    results.note(&format!(
        "The release app under Xvfb in its own D-Bus session, driven through WebDriver. Four \
         models of the OpenAI entry, listed by a fake server at the threads' base URL (the key \
         set through the app); each answers a {RAMP_LINES}-line answer ({tokens} tokens, one \
         SSE event per token) paced at {} tokens every {WRITE_EVERY:?} per stream; the \
         question asked through Compare… with the four ticked, against one stream of the \
         same answer at the same pace (Send in a thread of its own), {ROUNDS} rounds of each \
         way at each pace. The lag is from the server's last write of a column's answer to \
         its last line on screen, polled every {POLL_LAG:?} through WebDriver as the desktop \
         bench's ramp does ({LAG_ROUNDS} rounds); the frames are the intervals between \
         `requestAnimationFrame` callbacks from the click to the last column's last line, in \
         {FRAME_ROUNDS} rounds polled every {POLL_FRAMES:?} only (the polling's scripts run \
         on the page's thread too).",
        PACES
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(" and "),
    ));
    results.add(Figure::new(
        "columns-page/idle_frame_p95_ms",
        "Baseline: the idle page's frame interval, 95th percentile",
        "ms",
        vec![idle.p95],
    ));
    for (rate, lone, four) in measured {
        let rate_s = number(*rate);
        let broken = |rounds: &[Round]| {
            if rounds.iter().all(|r| r.whole) {
                ""
            } else {
                " (lines missing or out of order!)"
            }
        };
        results.add(Figure::new(
            &format!("columns-page/lone_{rate:.0}_lag_ms"),
            &format!(
                "One stream at {rate_s} tokens/s: its end on screen after the server's last write{}",
                broken(lone.as_slice())
            ),
            "ms",
            lone[..LAG_ROUNDS].iter().flat_map(|r| r.lags.clone()).collect(),
        ));
        results.add(
            Figure::new(
                &format!("columns-page/four_{rate:.0}_lag_ms"),
                &format!(
                    "Four columns at {rate_s} tokens/s each: each column's end on screen after the server's last write of it{}",
                    broken(four.as_slice())
                ),
                "ms",
                four[..LAG_ROUNDS].iter().flat_map(|r| r.lags.clone()).collect(),
            )
            .budget(Budget::AtMost(MOST_LAG.as_secs_f64() * 1e3)),
        );
        for (way, rounds) in [("lone", &lone[LAG_ROUNDS..]), ("four", &four[LAG_ROUNDS..])] {
            let who = if way == "lone" {
                "one answer streams"
            } else {
                "four columns stream"
            };
            let p95 = Figure::new(
                &format!("columns-page/{way}_{rate:.0}_frame_p95_ms"),
                &format!("… frame interval while {who}, 95th percentile"),
                "ms",
                rounds.iter().map(|r| r.frames.p95).collect(),
            );
            // The page's frame budget while four columns stream: no long frames, 19 in 20.
            results.add(if way == "four" {
                p95.budget(Budget::AtMost(LONG_FRAME_MS))
            } else {
                p95
            });
            results.add(Figure::new(
                &format!("columns-page/{way}_{rate:.0}_frame_longest_ms"),
                &format!("… the longest frame while {who}"),
                "ms",
                rounds.iter().map(|r| r.frames.longest).collect(),
            ));
            results.add(Figure::new(
                &format!("columns-page/{way}_{rate:.0}_long_frames_pct"),
                &format!("… frames over {LONG_FRAME_MS:.0} ms while {who}"),
                "%",
                rounds
                    .iter()
                    .map(|r| 100.0 * r.frames.long as f64 / r.frames.count as f64)
                    .collect(),
            ));
        }
    }
}
