//! `art-bench columns`: a four-way comparison (`ArtInstance::compare`) against the same
//! four models asked one after another in runs of their own. The same question, the same
//! fake server (`art-bench serve`, a process of its own: OpenAI's SSE, a short plan for
//! the planning call), the same provider over HTTP, each way run as a task on the
//! runtime as the app runs its runs; each round asks in new threads, the two ways taking
//! turns first; the server writes as fast as it can, then paced like a model. Measured
//! in this process (the server's work is its own): CPU per answer token — the
//! comparison's four columns together against the four runs together — and each column's
//! time to its first answer token against a lone run's. Budget: ≤ 1.1× the separate
//! runs' CPU per token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::agent::pes::Column;
use art::sockets::StreamFilter;
use art_testkit::bench::{Budget, Figure, Results};
use art_types::{AgentProps, ProviderConfig, StreamEventKind, TokenType};

use crate::clients::cpu_seconds;
use crate::compare::ServerProcess;
use crate::server::Framing;

/// Tokens in each answer.
const TOKENS: usize = 2_000;
/// How the server writes the answers: as fast as it can, then as a model does.
const FRAMINGS: [Framing; 2] = [Framing::Events, Framing::Paced];
/// Models compared.
const MODELS: [&str; 4] = ["model-a", "model-b", "model-c", "model-d"];
/// Rounds of each way, after a warm-up round.
const ROUNDS: usize = 7;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One round's figures: CPU seconds, and each run's time to its first answer token from
/// the moment it was asked.
struct Round {
    cpu: f64,
    firsts: Vec<f64>,
}

/// A new thread on the OpenAI entry at `url` (the columns reach the server where the
/// thread does).
async fn thread(art: &ArtInstance, url: &str) -> String {
    art_testkit::framework::adapters::thread_at(art, "openai", MODELS[0], &format!("{url}/v1"), &[])
        .await
}

fn question(thread: &str, trace: Option<String>) -> AgentProps {
    AgentProps {
        query: "Tell me everything".into(),
        thread_id: thread.to_owned(),
        trace_id: trace,
        options: Default::default(),
        attachments: Vec::new(),
    }
}

/// Ask the four models, one way or the other; every stream event read, as the app's
/// bridge reads them, the first answer token of each run timed.
async fn round(art: Arc<ArtInstance>, url: String, together: bool) -> Round {
    let (art, url) = (&*art, url.as_str());
    let mut events = art.sockets.stream.subscribe(StreamFilter::default());
    let firsts = Arc::new(std::sync::Mutex::new(HashMap::<String, Instant>::new()));
    let listener = {
        let firsts = Arc::clone(&firsts);
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                if let StreamEventKind::Token {
                    token_type: TokenType::FinalSynthesisLlmResponse,
                    ..
                } = e.kind
                {
                    firsts
                        .lock()
                        .unwrap()
                        .entry(e.trace_id)
                        .or_insert_with(Instant::now);
                }
            }
        })
    };
    let traces: Vec<String> = MODELS.iter().map(|_| art::clock::new_id()).collect();
    let whole = crate::server::answer(TOKENS).len();
    let mut asked = Vec::new();
    let cpu = cpu_seconds();
    if together {
        let thread = thread(art, url).await;
        let columns = MODELS
            .iter()
            .zip(&traces)
            .map(|(model, trace)| Column {
                trace_id: trace.clone(),
                provider: ProviderConfig {
                    provider_name: "openai".into(),
                    model_id: (*model).into(),
                    ..ProviderConfig::default()
                },
                cancel: CancellationToken::new(),
                can_ask: false,
            })
            .collect();
        let at = Instant::now();
        asked = vec![at; MODELS.len()];
        let ended = art
            .compare(question(&thread, None), columns, &|_, _| {})
            .await
            .unwrap();
        for out in ended {
            let out = out.unwrap();
            assert!(out.metadata.error.is_none(), "{:?}", out.metadata.error);
            assert_eq!(
                out.response.content.len(),
                whole,
                "every column's whole answer"
            );
        }
    } else {
        for (model, trace) in MODELS.iter().zip(&traces) {
            let thread = thread(art, url).await;
            let mut props = question(&thread, Some(trace.clone()));
            props.options.provider_config = Some(ProviderConfig {
                provider_name: "openai".into(),
                model_id: (*model).into(),
                ..ProviderConfig::default()
            });
            asked.push(Instant::now());
            let out = art.process(props, CancellationToken::new()).await.unwrap();
            assert!(out.metadata.error.is_none(), "{:?}", out.metadata.error);
            assert_eq!(out.response.content.len(), whole, "the whole answer");
        }
    }
    let cpu = cpu_seconds() - cpu;
    // The last events leave the socket just after the runs end.
    tokio::time::sleep(Duration::from_millis(50)).await;
    listener.abort();
    let firsts = firsts.lock().unwrap();
    let firsts = traces
        .iter()
        .zip(&asked)
        .map(|(trace, at)| {
            let first = firsts.get(trace).expect("every run streamed its answer");
            first.duration_since(*at).as_secs_f64() * 1_000.0
        })
        .collect();
    Round { cpu, firsts }
}

/// Rounds of both ways against a server writing as `framing` says: the figures, each
/// id under `columns/<framing>/`.
fn measure(
    results: &mut Results,
    rt: &tokio::runtime::Runtime,
    art: &Arc<ArtInstance>,
    framing: Framing,
) -> Result<(), String> {
    let server = ServerProcess::start(TOKENS, framing)?;
    let (mut ratio, mut cpu_apart, mut cpu_together) = (Vec::new(), Vec::new(), Vec::new());
    let (mut first_apart, mut first_together) = (Vec::new(), Vec::new());
    let per_token = |cpu: f64| cpu * 1e6 / (TOKENS * MODELS.len()) as f64;
    for i in 0..=ROUNDS {
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let mut pair = [None, None];
        for together in order {
            // A task on the runtime, as the app runs a run (`block_on` would run it on
            // this thread, every read hopping to it from a worker).
            let task = rt.spawn(round(Arc::clone(art), server.url.clone(), together));
            let round = rt
                .block_on(task)
                .map_err(|e| format!("a round failed: {e}"))?;
            pair[usize::from(together)] = Some(round);
        }
        let [Some(mut apart), Some(mut together)] = pair else {
            unreachable!("both ways ran")
        };
        if i == 0 {
            continue;
        }
        ratio.push(together.cpu / apart.cpu);
        cpu_apart.push(per_token(apart.cpu));
        cpu_together.push(per_token(together.cpu));
        first_apart.push(median(&mut apart.firsts));
        // Each column's first token against a lone run's, from when it was asked.
        first_together.push(median(&mut together.firsts));
    }
    let added: Vec<f64> = first_together
        .iter()
        .zip(&first_apart)
        .map(|(t, a)| t - a)
        .collect();
    let how = match framing {
        Framing::Paced => "paced like a model",
        _ => "written as fast as the server can",
    };
    let id = |name: &str| format!("columns/{}/{name}", framing.key());
    results.add(Figure::new(
        &id("cpu_per_token_apart_us"),
        &format!(
            "Answers {how}: CPU per answer token, four models asked one after another \
             ({TOKENS} tokens each)"
        ),
        "µs",
        cpu_apart,
    ));
    results.add(Figure::new(
        &id("cpu_per_token_together_us"),
        &format!(
            "Answers {how}: CPU per answer token, the same four compared at once (one \
             question, four columns)"
        ),
        "µs",
        cpu_together,
    ));
    results.add(
        Figure::new(
            &id("cpu_ratio"),
            &format!(
                "Answers {how}: a four-way comparison's CPU over the four separate runs' \
                 (per round)"
            ),
            "×",
            ratio,
        )
        .budget(Budget::AtMost(1.1)),
    );
    results.add(Figure::new(
        &id("first_token_apart_ms"),
        &format!(
            "Answers {how}: time to the first answer token of a lone run (median of the \
             round's four)"
        ),
        "ms",
        first_apart,
    ));
    results.add(Figure::new(
        &id("first_token_added_ms"),
        &format!(
            "Answers {how}: what a column adds to it — its first answer token from the \
             comparison's start, minus a lone run's (median of the round's four columns)"
        ),
        "ms",
        added,
    ));
    Ok(())
}

/// Run the benchmark; its figures go to `columns.json`.
pub fn run() -> Result<(), String> {
    let mut results = Results::new("columns", "cargo xtask bench columns");
    results.note(&format!(
        "Four models of one OpenAI-compatible provider entry, each answering {TOKENS} tokens \
         from the fake server (`art-bench serve`, a process of its own; as fast as it writes, \
         then paced at one event every 150 µs) after a short plan; a comparison of the four \
         against the four asked one after another, each way a task on a two-worker runtime \
         (as the app runs its runs), each in a new thread, {ROUNDS} rounds after a warm-up, \
         the order alternating. The CPU is this process's (the agents, SQLite, the stream \
         read as the app's bridge reads it), not the server's."
    ));
    let rt = crate::framework::runtime();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let art = Arc::new(crate::clients::instance("openai", dir.path())?);
    for framing in FRAMINGS {
        measure(&mut results, &rt, &art, framing)?;
    }
    results.write().map(drop).map_err(|e| e.to_string())
}
