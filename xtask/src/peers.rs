//! The streaming benchmark's peers, installed into `target/bench-peers` from
//! `tests/bench/peers`: the official `openai` and `ollama` clients for Node (`npm ci`
//! from the committed lockfile) and for Python (a virtual environment from the pinned
//! `requirements.txt`). Each install is redone only when its lockfile changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd;

/// Files copied from `tests/bench/peers` into the scratch folder.
const FILES: &[&str] = &[
    "package.json",
    "package-lock.json",
    "requirements.txt",
    "report.mjs",
    "openai_stream.mjs",
    "ollama_stream.mjs",
    "stream.py",
];

/// Install (or reuse) the peers; returns their folder.
pub fn install() -> Result<PathBuf, String> {
    let source = cmd::root().join("tests/bench/peers");
    let dir = cmd::target_dir().join("bench-peers");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for file in FILES {
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
        || cmd::step("Installing the Node peers (npm ci)", &mut npm),
    )?;
    let python = dir.join("venv/bin/python");
    if !python.exists() {
        cmd::step(
            "Creating the Python peers' virtual environment",
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
        cmd::step("Installing the Python peers (pip)", &mut pip)
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
