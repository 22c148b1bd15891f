//! Parse throughput of each adapter over real HTTP, and the time to first token it adds.
//!
//! A local fake server streams N one-word tokens in its provider's wire format as fast
//! as TCP allows, after a pause of [`FIRST_TOKEN_GAP`] behind its first piece (so the
//! first token is not timed against the flood of the rest); the adapter's stream is
//! consumed and the text accumulated. Reported
//! per adapter (median of 5 runs, min–max): tokens/s, CPU time per token (user + system
//! of this process, from /proc/self/stat, so the in-process server is included: an upper
//! bound), and the added time to first token (client's first token event minus the
//! server's first body byte). The OpenAI and Ollama adapters are also measured against
//! their peers, each client in its own process (`cargo xtask bench stream`).
//! Run: `cargo xtask bench adapters` (or `art-bench adapters`).

use std::time::Instant;

use art::providers::http::HttpOptions;
use art_testkit::bench::{Budget, Figure, Results, cpu_time};
use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_types::StreamEventKind;
use futures::StreamExt;

use crate::server::FIRST_TOKEN_GAP;
use art_testkit::framework::adapters as wire;

const TOKENS: usize = 200_000;
const RUNS: usize = 5;

struct Run {
    tokens_per_s: f64,
    cpu_us_per_token: f64,
    ttft_added_ms: f64,
}

async fn stream_once(protocol: Protocol, body: &str) -> Run {
    let reply = text_reply(protocol, body, 16 * 1024).pause_after_first(FIRST_TOKEN_GAP);
    let server = FakeServer::start(vec![reply]).await;
    let adapter = wire::adapter(protocol, server.url(), HttpOptions::default());
    let (cpu, wall) = (cpu_time(), Instant::now());
    let mut stream = adapter
        .call(&wire::prompt(), &wire::options("m"))
        .await
        .unwrap();
    let (mut text, mut first, mut tokens) = (String::new(), None, 0usize);
    while let Some(event) = stream.next().await {
        match event {
            StreamEventKind::Token { text: t, .. } => {
                first.get_or_insert_with(Instant::now);
                text.push_str(&t);
                tokens += 1;
            }
            StreamEventKind::Error(e) => panic!("{protocol:?}: {e:?}"),
            _ => {}
        }
    }
    let (wall, cpu) = (wall.elapsed(), cpu_time().saturating_sub(cpu));
    assert_eq!(
        (tokens, text.len()),
        (TOKENS, body.len()),
        "{protocol:?}: every token arrived"
    );
    let server_first = server.first_bytes()[0];
    Run {
        tokens_per_s: tokens as f64 / wall.as_secs_f64(),
        cpu_us_per_token: cpu.as_secs_f64() * 1e6 / tokens as f64,
        ttft_added_ms: first
            .unwrap()
            .saturating_duration_since(server_first)
            .as_secs_f64()
            * 1e3,
    }
}

/// Every adapter, `RUNS` streams each; figures go to `adapters.json`.
pub fn run() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let body = "tok ".repeat(TOKENS - 1) + "end";
    let mut results = Results::new("adapters", "cargo xtask bench adapters");
    results.note(&format!(
        "{TOKENS} one-word tokens per stream from a fake server in the same process \
         (16 KiB writes, a {} ms pause after the first, included in the time); CPU is the \
         whole process's, server included (an upper bound); median of {RUNS} runs.",
        FIRST_TOKEN_GAP.as_millis()
    ));
    for (name, label, protocol) in [
        ("openai", "OpenAI (SSE)", Protocol::OpenAi),
        ("anthropic", "Anthropic (SSE)", Protocol::Anthropic),
        ("gemini", "Gemini (SSE)", Protocol::Gemini),
        ("ollama", "Ollama (NDJSON)", Protocol::Ollama),
    ] {
        eprintln!("adapters: {label}");
        let runs: Vec<Run> = (0..RUNS)
            .map(|_| rt.block_on(stream_once(protocol, &body)))
            .collect();
        let id = format!("adapters/{name}");
        let values = |f: fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<_>>();
        results.add(Figure::new(
            &format!("{id}/tokens_per_s"),
            label,
            "tokens/s",
            values(|r| r.tokens_per_s),
        ));
        results.add(Figure::new(
            &format!("{id}/cpu_us_per_token"),
            label,
            "µs/token",
            values(|r| r.cpu_us_per_token),
        ));
        results.add(
            Figure::new(
                &format!("{id}/ttft_added_ms"),
                label,
                "ms",
                values(|r| r.ttft_added_ms),
            )
            .budget(Budget::AtMost(2.0)),
        );
    }
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}
