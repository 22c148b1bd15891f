//! Who takes part in the streaming comparison: our adapter and pipeline, the Rust peers
//! (async-openai, ollama-rs) and a hand-written floor loop, each on both Tokio runtimes,
//! and the official Node and Python clients installed by `cargo xtask bench`.

use std::path::{Path, PathBuf};
use std::process::Command;

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

    /// The Rust client users would pick for this protocol (its key without the runtime).
    pub fn rust_peer(self) -> &'static str {
        match self {
            Self::OpenAi => "async-openai",
            Self::Ollama => "ollama-rs",
        }
    }

    /// The official Node client's key.
    pub fn node_peer(self) -> &'static str {
        match self {
            Self::OpenAi => "node-openai",
            Self::Ollama => "node-ollama",
        }
    }
}

/// The Tokio runtime a Rust client runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// `current_thread`: everything on the thread that reads the socket.
    Current,
    /// `multi_thread` (what `#[tokio::main]` and Tauri start).
    Multi,
}

impl Runtime {
    /// Both, in the order the report lists them.
    pub const BOTH: [Self; 2] = [Self::Multi, Self::Current];

    /// Short name, for keys and the command line.
    pub fn key(self) -> &'static str {
        match self {
            Self::Current => "ct",
            Self::Multi => "mt",
        }
    }

    /// The runtime named `key`.
    pub fn parse(key: &str) -> Result<Self, String> {
        Self::BOTH
            .into_iter()
            .find(|r| r.key() == key)
            .ok_or_else(|| format!("unknown runtime {key:?}: ct or mt"))
    }

    /// A runtime of this kind.
    pub fn build(self) -> Result<tokio::runtime::Runtime, String> {
        match self {
            Self::Current => tokio::runtime::Builder::new_current_thread(),
            Self::Multi => tokio::runtime::Builder::new_multi_thread(),
        }
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
    }

    fn label(self) -> &'static str {
        match self {
            Self::Current => "current_thread",
            Self::Multi => "multi-thread",
        }
    }
}

/// How a client is started.
#[derive(Debug, Clone)]
enum Program {
    /// A Rust client on a runtime.
    Rust(Binary, Runtime),
    /// `node <script> <url> <model>` in the peers folder.
    Node(&'static str),
    /// `<venv python> stream.py <kind> <url> <model>` in the peers folder.
    Python(&'static str),
}

/// Where a Rust client's code lives.
#[derive(Debug, Clone, Copy)]
enum Binary {
    /// `art-bench client <name> <url> <model> <tokens> <runtime>` (this binary).
    Bench(&'static str),
    /// A program of its own next to this binary, `<program> <url> <model> <tokens>
    /// <runtime>` (`tests/bench/ollama-rs-peer`: its dependencies would turn on features
    /// of the main workspace's crates).
    Own(&'static str),
}

/// One client of the comparison.
#[derive(Debug, Clone)]
pub struct Client {
    /// Stable key for figure ids (`art-pipeline-mt`, `node-openai`, …).
    pub key: String,
    /// What it is, with versions and runtime, for the report.
    pub label: String,
    /// The protocol it speaks.
    pub wire: Wire,
    program: Program,
    peers: Option<PathBuf>,
}

impl Client {
    /// Whether this is ART Workbench's own code.
    pub fn ours(&self) -> bool {
        self.key.starts_with("art-")
    }

    /// The command that runs it once against `url`.
    pub fn command(&self, url: &str, model: &str, tokens: usize) -> Result<Command, String> {
        let dir = || {
            self.peers
                .clone()
                .ok_or_else(|| format!("{}: peers are not installed", self.label))
        };
        Ok(match &self.program {
            Program::Rust(binary, runtime) => {
                let me = std::env::current_exe().map_err(|e| e.to_string())?;
                let mut c = match binary {
                    Binary::Bench(name) => {
                        let mut c = Command::new(me);
                        c.args(["client", name]);
                        c
                    }
                    Binary::Own(program) => Command::new(me.with_file_name(program)),
                };
                c.args([url, model, &tokens.to_string(), runtime.key()]);
                c
            }
            Program::Node(script) => {
                let dir = dir()?;
                let mut c = Command::new("node");
                c.arg(dir.join(script)).args([url, model]).current_dir(dir);
                c
            }
            Program::Python(kind) => {
                let dir = dir()?;
                let mut c = Command::new(dir.join("venv/bin/python"));
                c.arg(dir.join("stream.py"))
                    .args([kind, url, model])
                    .current_dir(dir);
                c
            }
        })
    }
}

/// Where the Node and Python peers were installed (`cargo xtask bench` does that).
#[derive(Debug, Clone)]
pub struct Peers {
    /// Folder with `node_modules/`, `venv/` and the client scripts.
    pub dir: PathBuf,
}

impl Peers {
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

/// Every client, ours first; Node and Python peers only when `peers` are installed.
pub fn clients(peers: Option<&Peers>) -> Vec<Client> {
    let dir = peers.map(|p| p.dir.clone());
    let rust = |key: &str, label: &str, wire, binary| {
        Runtime::BOTH.map(|runtime| Client {
            key: format!("{key}-{}", runtime.key()),
            label: format!("{label}, {} runtime", runtime.label()),
            wire,
            program: Program::Rust(binary, runtime),
            peers: dir.clone(),
        })
    };
    let pipeline = "ART Workbench: full pipeline (PES, SQLite, sockets, bridge coalescer)";
    let floor = "hand-written loop over reqwest (the floor)";
    let mut all = Vec::new();
    for group in [
        rust(
            "art-pipeline",
            pipeline,
            Wire::OpenAi,
            Binary::Bench("art-pipeline-openai"),
        ),
        rust(
            "art-adapter",
            "ART Workbench: OpenAI adapter alone",
            Wire::OpenAi,
            Binary::Bench("art-openai"),
        ),
        rust(
            "async-openai",
            "async-openai 0.43.0 (Rust)",
            Wire::OpenAi,
            Binary::Bench("async-openai"),
        ),
        rust("floor", floor, Wire::OpenAi, Binary::Bench("floor-openai")),
        rust(
            "art-pipeline",
            pipeline,
            Wire::Ollama,
            Binary::Bench("art-pipeline-ollama"),
        ),
        rust(
            "art-adapter",
            "ART Workbench: Ollama adapter alone",
            Wire::Ollama,
            Binary::Bench("art-ollama"),
        ),
        rust(
            "ollama-rs",
            "ollama-rs 0.3.6 (Rust)",
            Wire::Ollama,
            Binary::Own("art-bench-ollama-rs"),
        ),
        rust("floor", floor, Wire::Ollama, Binary::Bench("floor-ollama")),
    ] {
        all.extend(group);
    }
    let Some(peers) = peers else { return all };
    let node = version_of(Path::new("node"), "--version");
    let python = version_of(&peers.dir.join("venv/bin/python"), "--version");
    let python = python.trim_start_matches("Python ");
    let peer = |key: &str, label: String, wire, program| Client {
        key: key.into(),
        label,
        wire,
        program,
        peers: dir.clone(),
    };
    all.extend([
        peer(
            "node-openai",
            format!("openai {} (Node {node})", peers.node_package("openai")),
            Wire::OpenAi,
            Program::Node("openai_stream.mjs"),
        ),
        peer(
            "python-openai",
            format!(
                "openai {} (Python {python})",
                peers.python_package("openai")
            ),
            Wire::OpenAi,
            Program::Python("openai"),
        ),
        peer(
            "node-ollama",
            format!("ollama {} (Node {node})", peers.node_package("ollama")),
            Wire::Ollama,
            Program::Node("ollama_stream.mjs"),
        ),
        peer(
            "python-ollama",
            format!(
                "ollama {} (Python {python})",
                peers.python_package("ollama")
            ),
            Wire::Ollama,
            Program::Python("ollama"),
        ),
    ]);
    all
}

/// The first line a command prints, or `?`.
fn version_of(program: &Path, arg: &str) -> String {
    Command::new(program)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every Rust client runs on both runtimes; ours and the in-binary peers through
    /// `art-bench client`, ollama-rs as its own program next to it, all with the same
    /// arguments after that.
    #[test]
    fn rust_clients_run_on_both_runtimes_with_the_same_arguments() {
        let all = clients(None);
        assert!(
            all.iter()
                .all(|c| c.key.ends_with("-mt") || c.key.ends_with("-ct"))
        );
        let args = |c: &Client| -> (String, Vec<String>) {
            let command = c.command("http://h:1", "m", 7).unwrap();
            let program = Path::new(command.get_program())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let args = command.get_args().map(|a| a.to_string_lossy().into_owned());
            (program, args.collect())
        };
        let ollama_rs = all.iter().find(|c| c.key == "ollama-rs-ct").unwrap();
        assert_eq!(
            args(ollama_rs),
            (
                "art-bench-ollama-rs".into(),
                vec!["http://h:1".into(), "m".into(), "7".into(), "ct".into()]
            )
        );
        let adapter = all
            .iter()
            .find(|c| c.key == "art-adapter-mt" && c.wire == Wire::OpenAi)
            .unwrap();
        let (_, adapter_args) = args(adapter);
        assert_eq!(
            adapter_args,
            ["client", "art-openai", "http://h:1", "m", "7", "mt"]
        );
    }
}
