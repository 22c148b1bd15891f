//! Parse throughput of each adapter over real HTTP, and the time to first token it adds.
//!
//! A local fake server streams N one-word tokens in its provider's wire format as fast
//! as TCP allows; the adapter's stream is consumed and the text accumulated. Reported
//! per adapter (median of 5 runs, min–max): tokens/s, CPU time per token (user + system
//! of this process, from /proc/self/stat, so the in-process server is included: an upper
//! bound), and the added time to first token (client's first token event minus the
//! server's first body byte). Run: `cargo bench -p art --bench adapters`.

#[path = "../tests/wire/mod.rs"]
mod wire;

use std::time::{Duration, Instant};

use art::providers::http::HttpOptions;
use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_types::StreamEventKind;
use futures::StreamExt;

const TOKENS: usize = 200_000;
const RUNS: usize = 5;

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at ") ".
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, r)| r.split(' ').collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 (1-based), 11 and 12 after the name; 100 Hz.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

struct Run {
    tokens_per_s: f64,
    cpu_us_per_token: f64,
    ttft_added_ms: f64,
}

async fn run(protocol: Protocol, body: &str) -> Run {
    let server = FakeServer::start(vec![text_reply(protocol, body, 16 * 1024)]).await;
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

fn summary(mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    format!(
        "{:.3} [{:.3} – {:.3}]",
        values[values.len() / 2],
        values[0],
        values[values.len() - 1]
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let body = "tok ".repeat(TOKENS - 1) + "end";
    println!(
        "adapter | tokens/s | CPU µs/token | added TTFT ms   ({TOKENS} tokens, median of {RUNS} [min – max])"
    );
    for (name, protocol) in [
        ("openai", Protocol::OpenAi),
        ("anthropic", Protocol::Anthropic),
        ("gemini", Protocol::Gemini),
        ("ollama", Protocol::Ollama),
    ] {
        let runs: Vec<Run> = (0..RUNS)
            .map(|_| rt.block_on(run(protocol, &body)))
            .collect();
        println!(
            "{name} | {} | {} | {}",
            summary(runs.iter().map(|r| r.tokens_per_s).collect()),
            summary(runs.iter().map(|r| r.cpu_us_per_token).collect()),
            summary(runs.iter().map(|r| r.ttft_added_ms).collect()),
        );
    }
}
