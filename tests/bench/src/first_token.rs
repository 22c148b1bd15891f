//! `art-bench first-token`: how long a question in a thread without tools waits for its
//! answer's first token, against a plain streaming chat to the same server. The server
//! (`art-bench serve`, a process of its own, OpenAI's SSE, paced like a model) waits a
//! prefill before every chat answer, a plan's too, as a model reads its prompt before
//! it writes. The peer is async-openai sending the same question as one streaming chat
//! request; ours is a whole run (`ArtInstance::process`: the question stored, the
//! thread's settings and history read, the call, the first token on the stream socket),
//! from the moment it is asked, in a new thread each time; beside it the same thread
//! with "plan first" on, which waits for a planning call first (what every run did
//! before). Budget: with a prefill, ours ≤ 1.1× the peer's.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::sockets::StreamFilter;
use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::fake::scripts::MODEL;
use art_types::{AgentProps, StreamEventKind, TokenType};

use crate::compare::ServerProcess;
use crate::server::Framing;

/// Tokens in each answer (the first is what is timed).
const TOKENS: usize = 200;
/// Rounds of each way, after a warm-up round.
const ROUNDS: usize = 15;
/// The server's prefill before each answer: none (what we add, alone), and a small
/// local model's on a short prompt.
const PREFILLS_MS: [u64; 2] = [0, 150];
/// The question every way asks.
const QUESTION: &str = "What is the capital of France?";

/// The peer's client.
type Peer = async_openai::Client<async_openai::config::OpenAIConfig>;

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The peer: one streaming chat request through a client made once (as an application
/// keeps its client, and as the app keeps its pooled adapter); ms from asking to the
/// first text.
async fn plain_chat(client: Arc<Peer>) -> Result<f64, String> {
    let asked = now_ns();
    let sample = crate::clients::async_openai_chat(&client, MODEL, QUESTION).await?;
    if sample.tokens != TOKENS as u64 {
        return Err(format!(
            "the plain chat got {} of {TOKENS} tokens",
            sample.tokens
        ));
    }
    Ok((sample.first_token_unix_ns.saturating_sub(asked)) as f64 / 1e6)
}

/// A run in a new thread without tools (planning first when `plan_first`); ms from
/// asking to its first answer token on the stream socket.
async fn run(art: Arc<ArtInstance>, url: String, plan_first: bool) -> Result<f64, String> {
    let thread = art_testkit::framework::adapters::thread_at(
        &art,
        "openai",
        MODEL,
        &format!("{url}/v1"),
        &[],
    )
    .await;
    if plan_first {
        let mut config = art
            .state
            .load_thread_context(&thread)
            .await
            .map_err(|e| e.to_string())?
            .config;
        config.plan_first = true;
        art.state
            .set_thread_config(&thread, &config)
            .await
            .map_err(|e| e.to_string())?;
    }
    let mut events = art.sockets.stream.subscribe(StreamFilter {
        thread_id: Some(thread.clone()),
        trace_id: None,
    });
    let first = tokio::spawn(async move {
        while let Some(e) = events.recv().await {
            if let StreamEventKind::Token {
                token_type: TokenType::FinalSynthesisLlmResponse,
                ..
            } = e.kind
            {
                return Some(now_ns());
            }
        }
        None
    });
    let props = AgentProps {
        query: QUESTION.into(),
        thread_id: thread,
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    let asked = now_ns();
    let out = art
        .process(props, CancellationToken::new())
        .await
        .map_err(|e| e.to_string())?;
    if let Some(error) = out.metadata.error {
        return Err(format!("the run failed: {error:?}"));
    }
    if out.metadata.direct == plan_first {
        return Err(format!(
            "plan first {plan_first}, direct {}",
            out.metadata.direct
        ));
    }
    let first = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .map_err(|_| "no answer token reached the socket".to_owned())?
        .map_err(|e| e.to_string())?
        .ok_or("the socket closed before the answer")?;
    Ok((first.saturating_sub(asked)) as f64 / 1e6)
}

/// Rounds of the three ways against a server with `prefill_ms`.
fn measure(
    results: &mut Results,
    rt: &tokio::runtime::Runtime,
    art: &Arc<ArtInstance>,
    prefill_ms: u64,
) -> Result<(), String> {
    let server =
        ServerProcess::start_with(TOKENS, Framing::Paced, Duration::from_millis(prefill_ms))?;
    let url = server.url.clone();
    let client = Arc::new(crate::clients::async_openai_client(&url));
    let (mut peer, mut direct, mut planned, mut ratio) = (vec![], vec![], vec![], vec![]);
    for i in 0..=ROUNDS {
        // Each way a task on the runtime, as the app runs a run; the order rotates.
        let mut took = [0.0; 3];
        for k in 0..3 {
            let way = (i + k) % 3;
            let (art, url, client) = (Arc::clone(art), url.clone(), Arc::clone(&client));
            let task = match way {
                0 => rt.spawn(plain_chat(client)),
                1 => rt.spawn(run(art, url, false)),
                _ => rt.spawn(run(art, url, true)),
            };
            took[way] = rt
                .block_on(task)
                .map_err(|e| format!("a round failed: {e}"))??;
        }
        if i == 0 {
            continue;
        }
        peer.push(took[0]);
        direct.push(took[1]);
        planned.push(took[2]);
        ratio.push(took[1] / took[0]);
    }
    let id = |name: &str| format!("first-token/prefill-{prefill_ms}ms/{name}");
    let server_says = if prefill_ms == 0 {
        "a server that answers at once (what each side adds, alone)".to_owned()
    } else {
        format!(
            "a server that reads the prompt for {prefill_ms} ms first, as a small local model does"
        )
    };
    results.add(Figure::new(
        &id("plain_chat_ms"),
        &format!("{server_says}: a plain streaming chat's time to first token (async-openai)"),
        "ms",
        peer.clone(),
    ));
    results.add(Figure::new(
        &id("no_tools_ms"),
        &format!(
            "{server_says}: a question in a thread without tools, from asking to the first answer \
             token (one call)"
        ),
        "ms",
        direct.clone(),
    ));
    results.add(Figure::new(
        &id("plan_first_ms"),
        &format!(
            "{server_says}: the same with \"plan first\" on (a planning call, then the answer)"
        ),
        "ms",
        planned,
    ));
    let ratio = Figure::new(
        &id("no_tools_over_plain_chat"),
        &format!("{server_says}: the thread without tools over the plain chat (per round)"),
        "×",
        ratio,
    );
    results.add(if prefill_ms == 0 {
        ratio
    } else {
        ratio.budget(Budget::AtMost(1.1))
    });
    eprintln!(
        "first-token, prefill {prefill_ms} ms: plain chat {:.1} ms, no tools {:.1} ms",
        median(&mut peer),
        median(&mut direct)
    );
    Ok(())
}

/// Run the benchmark; its figures go to `first-token.json`.
pub fn run_bench() -> Result<(), String> {
    let mut results = Results::new("first-token", "cargo xtask bench first-token");
    results.note(&format!(
        "The same question, \"{QUESTION}\", to the fake server (`art-bench serve`, a process of \
         its own, OpenAI's SSE paced at one event every 150 µs, {TOKENS} tokens), waiting a \
         prefill before each chat answer, a plan's too. The peer is async-openai's streaming \
         chat through one client kept across rounds (release build, as every Rust client \
         here); ours a whole run on a SQLite file \
         (the question stored first, the settings and history read, the provider's pooled \
         adapter), each in a new thread, each way a task on a two-worker runtime, the order \
         rotating, {ROUNDS} rounds after a warm-up. Times are from asking to the first answer \
         text, wall clock."
    ));
    let rt = crate::framework::runtime();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let art = Arc::new(crate::clients::instance("openai", dir.path())?);
    for prefill in PREFILLS_MS {
        measure(&mut results, &rt, &art, prefill)?;
    }
    results.write().map(drop).map_err(|e| e.to_string())
}
