//! `cargo xtask bench [NAME…]`: the benchmarks, then BENCHMARKS.md rewritten from their
//! figures (`art-bench report`). With no names, all run; a named subset re-runs those and
//! the report keeps the others' last figures (from `tests/bench/results`, committed). Every bench is
//! a subcommand of the one `art-bench` binary (`tests/bench`), built in the same release
//! build as the app, so the framework and its dependencies compile once:
//!
//! - `stream`: the streaming pipeline against its peers — async-openai, ollama-rs, a
//!   hand-written floor loop and the official `openai` / `ollama` clients for Node and
//!   Python, installed here — the server a process of its own, real framing, paced and
//!   burst (`compare.rs`);
//! - `framework`: storage and agent budgets (`framework.rs`);
//! - `export`: 1,000,000 observations to native JSONL and to OTLP (`export.rs`);
//! - `desktop`: the release app through WebDriver and started directly: opening a long
//!   thread, streaming a long answer, start-up, idle memory and binary size (`desktop.rs`);
//! - `adapters`: every provider adapter over HTTP in one process (`adapters.rs`);
//! - `mcp`: a `tools/call` round trip and enable → ready, ours against the official
//!   TypeScript SDK client, to the same MCP server (`mcp.rs`);
//! - `attachments`: what a photo and a 100-page PDF add from "send" to the request, and
//!   PDF pages extracted per second (`attachments.rs`);
//! - `knowledge`: recall@5 and MRR of words, vectors and the hybrid over the Debian
//!   Reference (from Debian's `debian-reference-en`, unpacked into `target/`), ingestion
//!   and query latency, a query over 100,000 passages (`knowledge.rs`);
//! - `push`: 1,000,000 spans from the push's queue to a local OTLP receiver, and the
//!   CPU and time to first token a run adds when traces are pushed (`push.rs`);
//! - `columns`: a four-way comparison's CPU per token and added time to first token
//!   against four separate runs (`columns.rs`);
//! - `columns-page`: the release app's page while four columns stream — each column's
//!   lag and the frames — against one stream (`desktop/columns.rs`);
//! - `first-token`: a question in a thread without tools, from asking to its first
//!   answer token, against a plain streaming chat to the same server (`first_token.rs`).

use std::time::Instant;

use crate::session::{Session, Wants};
use crate::setup::{self, Needs};
use crate::{cmd, peers, ui};

/// The benchmarks, in the order they run.
const ALL: &[&str] = &[
    "stream",
    "framework",
    "export",
    "desktop",
    "adapters",
    "mcp",
    "attachments",
    "knowledge",
    "push",
    "columns",
    "columns-page",
    "first-token",
];

/// The benchmarks that drive the release app.
const APP_BENCHES: &[&str] = &["desktop", "columns-page"];

/// Run the named benchmarks (all when none is named), then rewrite BENCHMARKS.md.
pub fn run(names: &[String]) -> Result<(), String> {
    if let Some(bad) = names.iter().find(|n| !ALL.contains(&n.as_str())) {
        return Err(format!(
            "unknown benchmark {bad:?}: choose from {}",
            ALL.join(", ")
        ));
    }
    let started = Instant::now();
    let wanted: Vec<&str> = ALL
        .iter()
        .copied()
        .filter(|a| names.is_empty() || names.iter().any(|n| n == a))
        .collect();
    let with_app = wanted.iter().any(|b| APP_BENCHES.contains(b));
    let tools = setup::ensure(if with_app { Needs::BENCH } else { Needs::PEERS })?;
    build(with_app, wanted.contains(&"attachments"))?;
    for (i, bench) in wanted.iter().enumerate() {
        cmd::say(&format!(
            "Benchmark {} of {}: {bench} ({:.0} min so far)",
            i + 1,
            wanted.len(),
            started.elapsed().as_secs_f64() / 60.0
        ));
        match *bench {
            "stream" => stream()?,
            "desktop" | "columns-page" => desktop(&tools, bench)?,
            "mcp" => {
                // The same servers the tests use, and the TypeScript SDK client.
                let servers = peers::install_mcp_servers()?;
                let mut bench = std::process::Command::new(runner());
                bench.arg("mcp").env("ART_MCP_SERVERS", servers);
                cmd::step("Benchmark: mcp", &mut bench)?
            }
            "knowledge" => {
                let corpus = install_corpus()?;
                let python = peers::install_mcp_servers()?.join("venv/bin/python");
                let weights = peers::install_embedder_weights(&python)?;
                let peer = peers::install_knowledge_peer()?;
                let mut bench = std::process::Command::new(runner());
                bench
                    .arg("knowledge")
                    .env("ART_BENCH_CORPUS", corpus)
                    .env("ART_EMBEDDER_WEIGHTS", weights)
                    .env("ART_KNOWLEDGE_PEER", peer);
                cmd::step("Benchmark: knowledge", &mut bench)?
            }
            "attachments" => {
                let mut bench = std::process::Command::new(runner());
                bench
                    .arg("attachments")
                    .env("ART_CLI", cmd::target_dir().join("release/art"));
                cmd::step("Benchmark: attachments", &mut bench)?
            }
            other => {
                let mut bench = std::process::Command::new(runner());
                bench.arg(other);
                cmd::step(&format!("Benchmark: {other}"), &mut bench)?
            }
        }
    }
    let mut report = std::process::Command::new(runner());
    report
        .args(["report", "--out"])
        .arg(cmd::root().join("BENCHMARKS.md"));
    cmd::step("Writing BENCHMARKS.md", &mut report)?;
    cmd::say(&format!(
        "Benchmarks done in {:.1} min: BENCHMARKS.md rewritten",
        started.elapsed().as_secs_f64() / 60.0
    ));
    Ok(())
}

/// One release build of `art-bench`; for the desktop bench, the app: the app as the
/// Tauri CLI builds the `.deb`'s binary (`tauri/custom-protocol`: the UI from `ui/dist`,
/// embedded), the UI built first; for the attachments bench, the `art` command line.
/// One cargo invocation, so shared crates compile once.
fn build(desktop: bool, cli: bool) -> Result<(), String> {
    let mut args = vec!["build", "--release", "-p", "art-bench"];
    if cli {
        args.extend(["-p", "art-cli"]);
    }
    if desktop {
        ui::build()?;
        args.extend(["-p", "art-workbench", "--features", "tauri/custom-protocol"]);
    }
    let what = if desktop {
        "Building the benchmarks and the app (release)"
    } else {
        "Building the benchmarks (release)"
    };
    cmd::step(what, &mut cmd::cargo(&args))?;
    // ollama-rs, a peer built apart (a workspace of its own) into the same target dir.
    let manifest = cmd::root().join("tests/bench/ollama-rs-peer/Cargo.toml");
    let target = cmd::target_dir();
    let mut peer = cmd::cargo(&["build", "--release", "--locked"]);
    peer.arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target);
    cmd::step("Building the ollama-rs peer (release)", &mut peer)
}

/// The release `art-bench` binary.
fn runner() -> std::path::PathBuf {
    cmd::target_dir().join("release/art-bench")
}

/// Our pipeline and adapters against their peers, each client its own process.
fn stream() -> Result<(), String> {
    let dir = peers::install()?;
    let mut compare = std::process::Command::new(runner());
    compare.args(["compare", "--peers"]).arg(dir);
    cmd::step("Benchmark: stream (ours and the peers)", &mut compare)
}

/// The release app under Xvfb with its own D-Bus session, driven by tauri-driver, for
/// the benchmark `name`.
fn desktop(tools: &setup::Tools, name: &str) -> Result<(), String> {
    let driver = tools
        .tauri_driver
        .clone()
        .ok_or("tauri-driver was not set up")?;
    let session = Session::start(Wants::for_benchmarks(driver))?;
    let app = cmd::target_dir().join("release/art-workbench");
    let mut bench = std::process::Command::new(runner());
    bench.arg(name);
    session.apply(&mut bench);
    if let Some(url) = session.webdriver_url() {
        bench.env("ART_E2E_WEBDRIVER", url);
    }
    bench.env("ART_E2E_APP", &app).env(
        "ART_E2E_ARTIFACTS",
        cmd::target_dir().join("artifacts/bench"),
    );
    cmd::step(&format!("Benchmark: {name} (release app)"), &mut bench)
}

/// The knowledge benchmark's corpus: the Debian Reference's whole-book PDF, from the
/// Debian package `debian-reference-en` (downloaded with apt and unpacked into
/// `target/bench-corpus`, not installed: no root needed).
fn install_corpus() -> Result<std::path::PathBuf, String> {
    let root = cmd::target_dir().join("bench-corpus");
    let pdf = root.join("usr/share/debian-reference/debian-reference.en.pdf");
    if pdf.is_file() {
        println!("    debian-reference-en: already unpacked");
        return Ok(pdf);
    }
    let debs = root.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| format!("{}: {e}", debs.display()))?;
    cmd::step(
        "Downloading the Debian Reference (apt)",
        std::process::Command::new("apt-get")
            .args(["download", "debian-reference-en"])
            .current_dir(&debs),
    )?;
    let deb = std::fs::read_dir(&debs)
        .map_err(|e| format!("{}: {e}", debs.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .ok_or("apt-get downloaded no debian-reference-en package")?;
    cmd::step(
        "Unpacking the Debian Reference",
        std::process::Command::new("dpkg-deb")
            .arg("-x")
            .arg(&deb)
            .arg(&root),
    )?;
    if pdf.is_file() {
        Ok(pdf)
    } else {
        Err(format!("the package has no {}", pdf.display()))
    }
}
