//! Node and Python packages installed from a committed folder into `target/`: `npm ci`
//! from its lockfile and a virtual environment from its pinned `requirements.txt`, each
//! redone only when its lockfile changed.
//!
//! - the streaming benchmark's peers (`tests/bench/peers` → `target/bench-peers`): the
//!   official `openai` and `ollama` clients for Node and for Python;
//! - the MCP servers the tests run against (`tests/mcp` → `target/mcp-servers`):
//!   `@modelcontextprotocol/server-everything` and the TypeScript SDK from npm,
//!   `mcp-server-time` from PyPI.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd;

/// Files copied from `tests/bench/peers` into the scratch folder.
const PEER_FILES: &[&str] = &[
    "package.json",
    "package-lock.json",
    "requirements.txt",
    "report.mjs",
    "openai_stream.mjs",
    "ollama_stream.mjs",
    "stream.py",
];

/// Files copied from `tests/mcp`.
const MCP_FILES: &[&str] = &[
    "package.json",
    "package-lock.json",
    "requirements.txt",
    "bench_client.mjs",
];

/// Install (or reuse) the peers; returns their folder.
pub fn install() -> Result<PathBuf, String> {
    install_kit(
        "tests/bench/peers",
        "bench-peers",
        PEER_FILES,
        "the benchmark's peers",
    )
}

/// Install (or reuse) the MCP servers the tests use; returns their folder.
pub fn install_mcp_servers() -> Result<PathBuf, String> {
    install_kit(
        "tests/mcp",
        "mcp-servers",
        MCP_FILES,
        "the MCP test servers",
    )
}

fn install_kit(source: &str, target: &str, files: &[&str], what: &str) -> Result<PathBuf, String> {
    let source = cmd::root().join(source);
    let dir = cmd::target_dir().join(target);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for file in files {
        std::fs::copy(source.join(file), dir.join(file))
            .map_err(|e| format!("copying {file} to {}: {e}", dir.display()))?;
    }
    let mut npm = Command::new("npm");
    npm.args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir);
    when_changed(
        &dir,
        "package-lock.json",
        "node_modules/.art-installed",
        || cmd::step(&format!("Installing {what}: Node (npm ci)"), &mut npm),
    )?;
    let python = dir.join("venv/bin/python");
    if !python.exists() {
        cmd::step(
            &format!("Creating the virtual environment of {what}"),
            Command::new("python3")
                .args(["-m", "venv", "venv"])
                .current_dir(&dir),
        )?;
    }
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
        "requirements.txt",
    ])
    .current_dir(&dir);
    when_changed(&dir, "requirements.txt", "venv/.art-installed", || {
        cmd::step(&format!("Installing {what}: Python (pip)"), &mut pip)
    })?;
    Ok(dir)
}

/// Run `install` unless `stamp` (in `dir`) already holds the contents of `lock`; then
/// record them.
fn when_changed(
    dir: &Path,
    lock: &str,
    stamp: &str,
    install: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let wanted = std::fs::read(dir.join(lock)).map_err(|e| format!("{lock}: {e}"))?;
    let stamp = dir.join(stamp);
    if std::fs::read(&stamp).ok().as_deref() == Some(&wanted[..]) {
        println!("    {lock}: already installed");
        return Ok(());
    }
    install()?;
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))
}
