//! `art-bench compare`: the streaming pipeline side by side with its peers. One fake
//! server (this process) streams the same long answer to each client in turn; every
//! client is its own process and reports its own loop (see [`crate::clients::Sample`]).
//! Clients take turns within each round, so a slow spell of the machine hits all of
//! them; the first round warms caches and is not counted.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, UNIX_EPOCH};

use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::fake::scripts::MODEL;

use crate::clients::Sample;

/// The wire protocol a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions over SSE.
    OpenAi,
    /// Ollama's NDJSON `/api/chat`.
    Ollama,
}

impl Wire {
    /// Short name, used in figure ids.
    pub fn key(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
        }
    }
}

/// How a client is started.
#[derive(Debug, Clone)]
enum Program {
    /// `art-bench client <name> …` (this binary).
    Rust(&'static str),
    /// `node <script> <url> <model>` in the peers folder.
    Node(&'static str),
    /// `<venv python> stream.py <kind> <url> <model>` in the peers folder.
    Python(&'static str),
}

/// One client of the comparison.
#[derive(Debug, Clone)]
pub struct Client {
    /// Stable key for figure ids (`art-pipeline`, `node-openai`, …).
    pub key: &'static str,
    /// What it is, with versions, for the report.
    pub label: String,
    /// The protocol it speaks.
    pub wire: Wire,
    /// Whether it gets the short answer ([`crate::server::SHORT_MODEL`]).
    pub short: bool,
    program: Program,
}

impl Client {
    /// How many tokens it is sent when the answer is `tokens` long.
    pub fn tokens(&self, tokens: usize) -> usize {
        if self.short {
            crate::server::short(tokens)
        } else {
            tokens
        }
    }

    /// The model it asks for.
    fn model(&self) -> &'static str {
        if self.short {
            crate::server::SHORT_MODEL
        } else {
            MODEL
        }
    }
}

/// Where the Node and Python peers were installed (`cargo xtask bench` does that).
#[derive(Debug, Clone)]
pub struct Peers {
    /// Folder with `node_modules/`, `venv/` and the client scripts.
    pub dir: PathBuf,
}

impl Peers {
    fn python(&self) -> PathBuf {
        self.dir.join("venv/bin/python")
    }

    fn node_package(&self, name: &str) -> String {
        let path = self
            .dir
            .join("node_modules")
            .join(name)
            .join("package.json");
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["version"].as_str().map(str::to_owned))
            .unwrap_or_else(|| "?".into())
    }

    fn python_package(&self, name: &str) -> String {
        let prefix = format!("{name}==");
        std::fs::read_to_string(self.dir.join("requirements.txt"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
            .unwrap_or_else(|| "?".into())
    }
}

/// The first line a command prints, or `?`.
fn version_of(program: &Path, arg: &str) -> String {
    std::process::Command::new(program)
        .arg(arg)
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            text.lines().next().map(|l| l.trim().to_owned())
        })
        .unwrap_or_else(|| "?".into())
}

/// Every client, ours first, for `peers` (Node and Python peers only when installed) and
/// an answer of `tokens` deltas (a client on the short answer says so in its label).
pub fn clients(peers: Option<&Peers>, tokens: usize) -> Vec<Client> {
    let rust = |key, label: &str, wire, name| Client {
        key,
        label: label.into(),
        wire,
        short: false,
        program: Program::Rust(name),
    };
    let mut all = vec![
        rust(
            "art-pipeline",
            "ART Workbench: full pipeline (PES, SQLite, sockets, bridge coalescer)",
            Wire::OpenAi,
            "art-pipeline-openai",
        ),
        rust(
            "art-adapter",
            "ART Workbench: OpenAI adapter alone",
            Wire::OpenAi,
            "art-openai",
        ),
        rust(
            "async-openai",
            "async-openai 0.43.0 (Rust)",
            Wire::OpenAi,
            "async-openai",
        ),
        rust(
            "art-pipeline",
            "ART Workbench: full pipeline (PES, SQLite, sockets, bridge coalescer)",
            Wire::Ollama,
            "art-pipeline-ollama",
        ),
        rust(
            "art-adapter",
            "ART Workbench: Ollama adapter alone",
            Wire::Ollama,
            "art-ollama",
        ),
    ];
    if let Some(peers) = peers {
        let node = version_of(Path::new("node"), "--version");
        let python = version_of(&peers.python(), "--version");
        let python = python.trim_start_matches("Python ");
        all.extend([
            Client {
                key: "node-openai",
                label: format!("openai {} (Node {node})", peers.node_package("openai")),
                wire: Wire::OpenAi,
                short: false,
                program: Program::Node("openai_stream.mjs"),
            },
            Client {
                key: "python-openai",
                label: format!(
                    "openai {} (Python {python}; {} tokens per stream)",
                    peers.python_package("openai"),
                    crate::report::format::number(crate::server::short(tokens) as f64)
                ),
                wire: Wire::OpenAi,
                // ~6,500 tokens/s: six full answers would take three minutes.
                short: true,
                program: Program::Python("openai"),
            },
            Client {
                key: "node-ollama",
                label: format!("ollama {} (Node {node})", peers.node_package("ollama")),
                wire: Wire::Ollama,
                short: false,
                program: Program::Node("ollama_stream.mjs"),
            },
            Client {
                key: "python-ollama",
                label: format!(
                    "ollama {} (Python {python})",
                    peers.python_package("ollama")
                ),
                wire: Wire::Ollama,
                short: false,
                program: Program::Python("ollama"),
            },
        ]);
    }
    all
}

/// A client's longest allowed run.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(180);

/// Run `client` once against `url`; check it received the whole answer.
async fn run_once(
    client: &Client,
    peers: Option<&Peers>,
    url: &str,
    tokens: usize,
) -> Result<Sample, String> {
    let model = client.model();
    let mut command = match (&client.program, peers) {
        (Program::Rust(name), _) => {
            let me = std::env::current_exe().map_err(|e| e.to_string())?;
            let mut c = tokio::process::Command::new(me);
            c.args(["client", name, url, model, &tokens.to_string()]);
            c
        }
        (Program::Node(script), Some(peers)) => {
            let mut c = tokio::process::Command::new("node");
            c.arg(peers.dir.join(script)).args([url, model]);
            c.current_dir(&peers.dir);
            c
        }
        (Program::Python(kind), Some(peers)) => {
            let mut c = tokio::process::Command::new(peers.python());
            c.arg(peers.dir.join("stream.py")).args([kind, url, model]);
            c.current_dir(&peers.dir);
            c
        }
        _ => return Err(format!("{}: peers are not installed", client.label)),
    };
    command
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(CLIENT_TIMEOUT, command.output())
        .await
        .map_err(|_| format!("{}: no answer in {CLIENT_TIMEOUT:?}", client.label))?
        .map_err(|e| format!("{}: could not start: {e}", client.label))?;
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

/// Run every client `runs` times (after a warm-up round) and collect the figures.
pub async fn compare(tokens: usize, runs: usize, peers: Option<Peers>) -> Result<Results, String> {
    let mut results = Results::new("stream", "cargo xtask bench stream");
    let server = crate::server::start(tokens).await;
    let url = server.url();
    let clients = clients(peers.as_ref(), tokens);
    let mut samples: Vec<Vec<(Sample, f64)>> = vec![Vec::new(); clients.len()];
    for round in 0..=runs {
        let what = if round == 0 {
            "warm-up round".to_owned()
        } else {
            format!("round {round} of {runs}")
        };
        eprintln!("stream: {what}");
        for (i, client) in clients.iter().enumerate() {
            let tokens = client.tokens(tokens);
            let sample = run_once(client, peers.as_ref(), &url, tokens).await?;
            let served = server
                .first_bytes_wall()
                .last()
                .copied()
                .ok_or("the server saw no request")?;
            let served_ns = served
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            let added_ms = (sample.first_token_unix_ns as f64 - served_ns as f64) / 1e6;
            eprintln!(
                "  {:<8} {:<70} {:>9.0} tokens/s {:>6.2} µs CPU/token {:>6.2} ms added TTFT",
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
    results.note(&format!(
        "{} tokens of 3–4 characters each, streamed by a fake server on 127.0.0.1 \
         in 16 KiB writes as fast as it can after a {} ms pause behind the first (a model's \
         pause after its first token; the time to first token is measured in it, the pause \
         counts in the throughput); each client is its own process and times its own \
         loop (request sent → last token; CPU = user + system of the client process from the OS); \
         median of {runs} rounds after a warm-up round, clients taking turns in each round. \
         A client whose label gives a smaller count gets that many (the same deltas, a shorter \
         answer): at its pace the full answer would take minutes per round; every figure is \
         per token.",
        crate::report::format::number(tokens as f64),
        crate::server::FIRST_TOKEN_GAP.as_millis()
    ));
    for (client, runs) in clients.iter().zip(&samples) {
        add_client_figures(&mut results, client, runs, client.tokens(tokens));
    }
    add_ratios(&mut results, &clients, &samples);
    Ok(results)
}

fn add_client_figures(
    results: &mut Results,
    client: &Client,
    runs: &[(Sample, f64)],
    tokens: usize,
) {
    let id = format!("stream/{}/{}", client.wire.key(), client.key);
    let pipeline = client.key == "art-pipeline";
    let per_s: Vec<f64> = runs.iter().map(|(s, _)| tokens as f64 / s.wall_s).collect();
    let cpu: Vec<f64> = runs
        .iter()
        .map(|(s, _)| s.cpu_s * 1e6 / tokens as f64)
        .collect();
    let ttft: Vec<f64> = runs.iter().map(|(_, t)| *t).collect();
    let mut throughput = Figure::new(
        &format!("{id}/tokens_per_s"),
        &client.label,
        "tokens/s",
        per_s,
    );
    if pipeline {
        throughput = throughput.budget(Budget::AtLeast(1_000_000.0));
    }
    results.add(throughput);
    results.add(Figure::new(
        &format!("{id}/cpu_us_per_token"),
        &client.label,
        "µs/token",
        cpu,
    ));
    let mut added = Figure::new(&format!("{id}/ttft_added_ms"), &client.label, "ms", ttft);
    if client.key.starts_with("art-") {
        added = added.budget(Budget::AtMost(2.0));
    }
    results.add(added);
}

/// A sample's CPU seconds per token.
fn per_token(sample: &Sample) -> f64 {
    sample.cpu_s / sample.tokens.max(1) as f64
}

/// Our pipeline's CPU per token over each peer's, round by round.
fn add_ratios(results: &mut Results, clients: &[Client], samples: &[Vec<(Sample, f64)>]) {
    for wire in [Wire::OpenAi, Wire::Ollama] {
        let Some(ours) = clients
            .iter()
            .position(|c| c.wire == wire && c.key == "art-pipeline")
        else {
            continue;
        };
        for (peer, runs) in clients.iter().zip(samples) {
            if peer.wire != wire || peer.key.starts_with("art-") || runs.is_empty() {
                continue;
            }
            let ratios: Vec<f64> = samples[ours]
                .iter()
                .zip(runs)
                .map(|((a, _), (b, _))| per_token(a) / per_token(b))
                .collect();
            let budget = match peer.key {
                "node-openai" | "node-ollama" => Some(Budget::AtMost(0.5)),
                "async-openai" => Some(Budget::AtMost(1.5)),
                _ => None,
            };
            let mut figure = Figure::new(
                &format!("stream/{}/ratio/{}", wire.key(), peer.key),
                &format!("full pipeline's CPU per token ÷ {}'s", peer.label),
                "×",
                ratios,
            );
            if let Some(b) = budget {
                figure = figure.budget(b);
            }
            results.add(figure);
        }
    }
}
