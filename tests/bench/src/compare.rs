//! `art-bench compare`: the streaming pipeline side by side with its peers. The fake server
//! ([`crate::server`]) is a process of its own; every client is one too and reports its own
//! loop (see [`crate::clients::Sample`]). Where the machine has two cores or more, the
//! server runs on core 0 and every client on core 1, so neither is scheduled against the
//! other. Each framing of the answer (one event per HTTP chunk, paced, burst) is served
//! in turn; clients take turns within each round, so a slow spell of the machine hits all
//! of them; the first round warms caches and is not counted.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::fake::scripts::MODEL;

use crate::clients::Sample;
use crate::server::Framing;

pub use crate::peers::{Client, Peers, Wire, clients};

/// Tokens per answer, by framing (a paced answer takes [`crate::server::PACE`] per token).
pub fn tokens_for(framing: Framing, tokens: usize) -> usize {
    match framing {
        Framing::Paced => (tokens / 10).max(1),
        Framing::Events | Framing::Burst => tokens,
    }
}

/// The cores the server and the clients run on, when the machine has two.
fn cores() -> Option<(usize, usize)> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n >= 2).then_some((0, 1))
}

/// Pin this thread (and so the processes it starts from now on) to `core`.
#[cfg(target_os = "linux")]
fn pin(core: Option<usize>) -> Result<(), String> {
    let Some(core) = core else { return Ok(()) };
    let mut set = nix::sched::CpuSet::new();
    set.set(core).map_err(|e| e.to_string())?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|e| format!("cannot pin to core {core}: {e}"))
}

/// Pinning to a core is Linux's (the benchmarks measure there).
#[cfg(not(target_os = "linux"))]
fn pin(core: Option<usize>) -> Result<(), String> {
    match core {
        None => Ok(()),
        Some(core) => Err(format!(
            "cannot pin to core {core}: the benchmarks run on Linux"
        )),
    }
}

/// The fake server's process; killed when dropped.
pub(crate) struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub(crate) url: String,
    /// First-byte times of the answers, as the server reports them.
    served: mpsc::Receiver<u128>,
}

impl ServerProcess {
    /// Start `art-bench serve` with `tokens` per answer, framed as `framing`.
    pub(crate) fn start(tokens: usize, framing: Framing) -> Result<Self, String> {
        Self::start_with(tokens, framing, Duration::ZERO)
    }

    /// [`ServerProcess::start`], the server waiting `prefill` before each chat answer.
    pub(crate) fn start_with(
        tokens: usize,
        framing: Framing,
        prefill: Duration,
    ) -> Result<Self, String> {
        let me = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(me)
            .args(["serve", "--tokens", &tokens.to_string(), "--framing"])
            .arg(framing.key())
            .args(["--prefill-ms", &prefill.as_millis().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let stdout = child.stdout.take().ok_or("the server has no stdout")?;
        let mut lines = std::io::BufReader::new(stdout).lines();
        let url = lines
            .next()
            .and_then(Result::ok)
            .ok_or("the server did not say where it listens")?;
        let (tx, served) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(ns) = line.strip_prefix("served ").and_then(|n| n.parse().ok()) {
                    let _ = tx.send(ns);
                }
            }
        });
        Ok(Self { child, url, served })
    }

    /// The first-byte time of the latest answer.
    fn last_served(&self) -> Option<u128> {
        self.served.try_iter().last()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client's longest allowed run.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(180);

/// Run `client` once against `url`; check it received the whole answer.
fn run_once(client: &Client, url: &str, tokens: usize) -> Result<Sample, String> {
    let mut command = client.command(url, MODEL, tokens)?;
    let child = command
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: could not start: {e}", client.label))?;
    let output =
        wait_within(child, CLIENT_TIMEOUT).map_err(|e| format!("{}: {e}", client.label))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    if !output.status.success() || line.is_empty() {
        return Err(format!(
            "{} failed ({}): {}{}",
            client.label,
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let sample = Sample::from_json(line)?;
    let chars = crate::server::answer(tokens).len() as u64;
    if sample.tokens != tokens as u64 || sample.chars != chars {
        return Err(format!(
            "{}: received {} tokens / {} characters, not {tokens} / {chars}",
            client.label, sample.tokens, sample.chars
        ));
    }
    Ok(sample)
}

/// `child`'s output, or an error (and the child killed) after `limit`.
fn wait_within(mut child: Child, limit: Duration) -> Result<std::process::Output, String> {
    let started = Instant::now();
    // Read the pipes on threads, so a chatty child cannot block on a full pipe.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no answer in {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// One client's rounds: its sample and the time it added to the first token (ms).
type Runs = Vec<(Sample, f64)>;

/// Run every client `runs` times (after a warm-up round) for each framing, and collect the
/// figures. `tokens` is the answer's length (a tenth of it when paced).
pub fn compare(tokens: usize, runs: usize, peers: Option<Peers>) -> Result<Results, String> {
    let mut results = Results::new("stream", "cargo xtask bench stream");
    let clients = clients(peers.as_ref());
    let cores = cores();
    for framing in Framing::ALL {
        let tokens = tokens_for(framing, tokens);
        pin(cores.map(|c| c.0))?;
        let server = ServerProcess::start(tokens, framing)?;
        pin(cores.map(|c| c.1))?;
        let mut samples: Vec<Runs> = vec![Vec::new(); clients.len()];
        for round in 0..=runs {
            let what = if round == 0 {
                "warm-up round".to_owned()
            } else {
                format!("round {round} of {runs}")
            };
            eprintln!("stream, {}: {what}", framing.key());
            for (i, client) in clients.iter().enumerate() {
                let sample = run_once(client, &server.url, tokens)?;
                let served = server.last_served().ok_or("the server saw no request")?;
                let added_ms = (sample.first_token_unix_ns as f64 - served as f64) / 1e6;
                eprintln!(
                    "  {:<8} {:<64} {:>9.0} tokens/s {:>6.2} µs CPU/token {:>6.2} ms added TTFT",
                    client.wire.key(),
                    client.label,
                    tokens as f64 / sample.wall_s,
                    sample.cpu_s * 1e6 / tokens as f64,
                    added_ms
                );
                if round > 0 {
                    samples[i].push((sample, added_ms));
                }
            }
        }
        for (client, runs) in clients.iter().zip(&samples) {
            add_client_figures(&mut results, framing, client, runs, tokens);
        }
        add_ratios(&mut results, framing, &clients, &samples);
    }
    results.note(&setup_note(tokens, runs, cores));
    Ok(results)
}

/// The set-up, in words a stranger can check.
fn setup_note(tokens: usize, runs: usize, cores: Option<(usize, usize)>) -> String {
    let n = crate::report::format::number;
    let pinning = match cores {
        Some((server, client)) => format!(
            "the server pinned to core {server}, each client to core {client} (a client's \
             threads, however many its runtime starts, share that one core)"
        ),
        None => "nothing pinned (the machine has one core)".into(),
    };
    format!(
        "A fake server, a process of its own, streams the same answer to each client in \
         turn: {} deltas of 3–4 characters (a tenth of that when paced), shaped as \
         api.openai.com and Ollama shape them, after a {} ms pause behind the first delta; {pinning}. \
         **Events**: one HTTP chunk (one write) per SSE event or NDJSON line, as fast as the \
         socket takes them — real framing at the highest rate. **Paced**: one event every \
         {} µs, as a model sends them, each arriving alone. **Burst**: the answer in 16 KiB \
         writes, many events per read — no real server does this; kept for comparison with \
         earlier reports. Each client is its own process and times its own loop (request \
         sent → last token; CPU = user + system of the client process from the OS); Rust \
         clients run once on a current_thread and once on a multi-thread Tokio runtime \
         (the app runs on a multi-thread one); median of {runs} rounds after a warm-up round, \
         clients taking turns in each round. Ratios are taken round by round. Our full \
         pipeline (a whole PES run on SQLite, with the stream socket and the bridge's \
         coalescer) is timed from its answer's first token out of the coalescer; the CPU \
         its run spent before — the planning call, the run's set-up, the provider's first \
         use — is its set-up row.",
        n(tokens as f64),
        crate::server::FIRST_TOKEN_GAP.as_millis(),
        crate::server::PACE.as_micros(),
    )
}

fn add_client_figures(
    results: &mut Results,
    framing: Framing,
    client: &Client,
    runs: &[(Sample, f64)],
    tokens: usize,
) {
    let id = format!(
        "stream/{}-{}/{}",
        client.wire.key(),
        framing.key(),
        client.key
    );
    let per_s: Vec<f64> = runs.iter().map(|(s, _)| tokens as f64 / s.wall_s).collect();
    let cpu: Vec<f64> = runs.iter().map(|(s, _)| per_token(s) * 1e6).collect();
    let ttft: Vec<f64> = runs.iter().map(|(_, t)| *t).collect();
    results.add(Figure::new(
        &format!("{id}/tokens_per_s"),
        &client.label,
        "tokens/s",
        per_s,
    ));
    results.add(Figure::new(
        &format!("{id}/cpu_us_per_token"),
        &client.label,
        "µs/token",
        cpu,
    ));
    let setup: Vec<f64> = runs.iter().filter_map(|(s, _)| s.setup_cpu_s).collect();
    if !setup.is_empty() {
        let id = format!(
            "stream/{}-{}/setup/{}",
            client.wire.key(),
            framing.key(),
            client.key
        );
        let label = format!("{}: CPU before the answer's first token", client.label);
        results.add(Figure::new(
            &id,
            &label,
            "ms",
            setup.iter().map(|s| s * 1e3).collect(),
        ));
    }
    let mut added = Figure::new(&format!("{id}/ttft_added_ms"), &client.label, "ms", ttft);
    if client.ours() && framing == Framing::Events {
        added = added.budget(Budget::AtMost(2.0));
    }
    results.add(added);
}

/// A sample's CPU seconds per token.
fn per_token(sample: &Sample) -> f64 {
    sample.cpu_s / sample.tokens.max(1) as f64
}

/// The comparisons the budgets are about, round by round, for one framing.
fn add_ratios(results: &mut Results, framing: Framing, clients: &[Client], samples: &[Runs]) {
    for wire in [Wire::OpenAi, Wire::Ollama] {
        // Each client's CPU per token, round by round.
        let cpu = |key: &str| -> Option<Vec<f64>> {
            let i = clients
                .iter()
                .position(|c| c.wire == wire && c.key == key)?;
            Some(samples[i].iter().map(|(s, _)| per_token(s)).collect())
        };
        // The best of a peer's two runtimes, round by round.
        let best = |name: &str| -> Option<Vec<f64>> {
            let (a, b) = (cpu(&format!("{name}-ct"))?, cpu(&format!("{name}-mt"))?);
            Some(a.iter().zip(&b).map(|(a, b)| a.min(*b)).collect())
        };
        let peer = wire.rust_peer();
        let node = wire.node_peer();
        let events = framing == Framing::Events;
        let paced = framing == Framing::Paced;
        let mut compare = |key: &str,
                           label: String,
                           ours: Option<Vec<f64>>,
                           theirs: Option<Vec<f64>>,
                           budget: Option<f64>| {
            let (Some(ours), Some(theirs)) = (ours, theirs) else {
                return;
            };
            let ratios = ours.iter().zip(&theirs).map(|(a, b)| a / b).collect();
            let id = format!("stream/{}-{}/ratio/{key}", wire.key(), framing.key());
            let mut figure = Figure::new(&id, &label, "×", ratios);
            if let Some(limit) = budget {
                figure = figure.budget(Budget::AtMost(limit));
            }
            results.add(figure);
        };
        compare(
            "adapter-floor-mt",
            "our adapter ÷ the hand-written loop, both multi-thread".into(),
            cpu("art-adapter-mt"),
            cpu("floor-mt"),
            events.then_some(1.2),
        );
        compare(
            "adapter-floor-ct",
            "our adapter ÷ the hand-written loop, both current_thread".into(),
            cpu("art-adapter-ct"),
            cpu("floor-ct"),
            events.then_some(1.2),
        );
        compare(
            "pipeline-peer",
            format!("our full pipeline (multi-thread) ÷ {peer} on its better runtime"),
            cpu("art-pipeline-mt"),
            best(peer),
            (events || paced).then_some(1.0),
        );
        compare(
            "adapter-peer",
            format!("our adapter (multi-thread) ÷ {peer} on its better runtime"),
            cpu("art-adapter-mt"),
            best(peer),
            None,
        );
        compare(
            "pipeline-node",
            format!("our full pipeline (multi-thread) ÷ {node} (Node)"),
            cpu("art-pipeline-mt"),
            cpu(node),
            events.then_some(0.5),
        );
        compare(
            "adapter-node",
            format!("our adapter (multi-thread) ÷ {node} (Node)"),
            cpu("art-adapter-mt"),
            cpu(node),
            events.then_some(0.5),
        );
    }
}
