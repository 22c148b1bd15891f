//! A fake Ollama model library: installed models with their details and capabilities,
//! loaded ones, a registry to pull from, and scripted faults — answering `/api/tags`,
//! `/api/show`, `/api/ps`, `/api/pull`, `/api/delete` and an unloading `/api/generate`
//! with the shapes Ollama's API documentation and its Go types give (`api/types.go`:
//! `ProgressResponse`, `ShowResponse`, `ProcessResponse`).

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};

use super::{Ending, Recorded, Reply, Router};

/// What the next pull does instead of succeeding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullFault {
    /// Sends half its progress, then nothing more, the connection left open.
    Stall,
    /// Sends `percent` % of its bytes, then Ollama's error line for a full disk.
    NoSpaceAt(u8),
    /// Sends half its progress, then the connection closes (the server died).
    Dies,
    /// Ollama cannot reach its registry (its error line for a failed DNS lookup).
    Offline,
}

/// A model on the fake server.
#[derive(Debug, Clone)]
struct Model {
    name: String,
    layers: Vec<u64>,
    family: String,
    parameters: String,
    capabilities: Vec<&'static str>,
}

impl Model {
    fn size(&self) -> u64 {
        self.layers.iter().sum()
    }
}

#[derive(Debug, Default)]
struct State {
    installed: Vec<Model>,
    registry: Vec<Model>,
    loaded: Vec<String>,
    fault: Option<PullFault>,
    /// An Ollama older than 0.6.4: `/api/show` has no `capabilities`.
    no_capabilities: bool,
}

/// The fake library; clones share it. Its [`OllamaLibrary::router`] goes to a
/// [`super::FakeServer`].
#[derive(Debug, Clone, Default)]
pub struct OllamaLibrary {
    state: Arc<Mutex<State>>,
}

/// `name` with Ollama's default tag (`llama3.2` is `llama3.2:latest`).
pub fn tagged(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if last.contains(':') {
        name.to_owned()
    } else {
        format!("{name}:latest")
    }
}

/// The trained context length every fake model reports.
pub const CONTEXT_LENGTH: u64 = 131_072;

impl OllamaLibrary {
    /// An empty library with nothing in its registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn model(name: &str, layers: &[u64], capabilities: &[&'static str]) -> Model {
        Model {
            name: tagged(name),
            layers: layers.to_vec(),
            family: "llama".into(),
            parameters: "3.2B".into(),
            capabilities: capabilities.to_vec(),
        }
    }

    /// `name` installed, its files `layers` bytes each, able to do `capabilities`
    /// (`completion`, `tools`, `vision`, …).
    pub fn installed(self, name: &str, layers: &[u64], capabilities: &[&'static str]) -> Self {
        self.state()
            .installed
            .push(Self::model(name, layers, capabilities));
        self
    }

    /// `name` pullable from the registry, in layers of these sizes.
    pub fn in_registry(self, name: &str, layers: &[u64], capabilities: &[&'static str]) -> Self {
        self.state()
            .registry
            .push(Self::model(name, layers, capabilities));
        self
    }

    /// `name` loaded in memory.
    pub fn loaded(self, name: &str) -> Self {
        self.state().loaded.push(tagged(name));
        self
    }

    /// An Ollama older than the capabilities field.
    pub fn without_capabilities(self) -> Self {
        self.state().no_capabilities = true;
        self
    }

    /// The next pull fails so.
    pub fn fail_next_pull(&self, fault: PullFault) {
        self.state().fault = Some(fault);
    }

    /// The installed models' names.
    pub fn names(&self) -> Vec<String> {
        self.state()
            .installed
            .iter()
            .map(|m| m.name.clone())
            .collect()
    }

    /// The loaded models' names.
    pub fn loaded_names(&self) -> Vec<String> {
        self.state().loaded.clone()
    }

    /// Answers the library's endpoints (and `/api/version`); everything else (chat)
    /// falls through to the server's script.
    pub fn router(&self) -> Router {
        let library = self.clone();
        Box::new(move |request| library.answer(request))
    }

    fn answer(&self, request: &Recorded) -> Option<Reply> {
        let mut parts = request.request_line.split(' ');
        let method = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or_default();
        let wanted = || tagged(request.json()["model"].as_str().unwrap_or_default());
        let mut state = self.state();
        let reply = match (method, path) {
            ("GET", "/api/version") => Reply::json(r#"{"version":"0.12.0-fake"}"#),
            ("GET", "/api/tags") => {
                let models: Vec<Value> = state.installed.iter().map(tags_entry).collect();
                Reply::json(&json!({ "models": models }).to_string())
            }
            ("GET", "/api/ps") => {
                let models: Vec<Value> = state
                    .loaded
                    .iter()
                    .filter_map(|name| state.installed.iter().find(|m| &m.name == name))
                    .map(|m| {
                        json!({
                            "name": m.name, "model": m.name, "size": m.size() + (1 << 30),
                            "size_vram": 0, "digest": "0a8c2b1d",
                            "details": details(m),
                            "expires_at": "2026-11-27T20:00:00.000000000Z",
                            "context_length": 4096,
                        })
                    })
                    .collect();
                Reply::json(&json!({ "models": models }).to_string())
            }
            ("POST", "/api/show") => match state.installed.iter().find(|m| m.name == wanted()) {
                Some(m) => {
                    let mut shown = json!({
                        "modelfile": format!("FROM {}", m.name),
                        "parameters": "stop \"<|eot_id|>\"",
                        "template": "{{ .Prompt }}",
                        "details": details(m),
                        "model_info": {
                            "general.architecture": m.family,
                            "general.parameter_count": 3_212_749_888u64,
                            format!("{}.context_length", m.family): CONTEXT_LENGTH,
                        },
                        "modified_at": "2026-11-20T10:00:00.000000000Z",
                    });
                    if !state.no_capabilities {
                        shown["capabilities"] = json!(m.capabilities);
                    }
                    Reply::json(&shown.to_string())
                }
                None => not_found(&wanted()),
            },
            ("DELETE", "/api/delete") => {
                let name = wanted();
                match state.installed.iter().position(|m| m.name == name) {
                    Some(i) => {
                        state.installed.remove(i);
                        state.loaded.retain(|l| l != &name);
                        Reply::bytes(200, b"", 1)
                    }
                    None => not_found(&name),
                }
            }
            ("POST", "/api/generate") if request.json()["keep_alive"] == json!(0) => {
                let name = wanted();
                if !state.installed.iter().any(|m| m.name == name) {
                    not_found(&name)
                } else {
                    state.loaded.retain(|l| l != &name);
                    let done = json!({ "model": name, "created_at": "2026-11-27T19:00:00Z",
                        "response": "", "done": true, "done_reason": "unload" });
                    Reply::json(&done.to_string())
                }
            }
            ("POST", "/api/pull") => pull(&mut state, &wanted()),
            _ => return None,
        };
        Some(reply)
    }
}

fn details(m: &Model) -> Value {
    json!({
        "parent_model": "", "format": "gguf", "family": m.family, "families": [m.family],
        "parameter_size": m.parameters, "quantization_level": "Q4_K_M",
    })
}

fn tags_entry(m: &Model) -> Value {
    json!({
        "name": m.name, "model": m.name, "modified_at": "2026-11-20T10:00:00.000000000Z",
        "size": m.size(), "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
        "details": details(m),
    })
}

/// Ollama's 404 for a model it does not have.
fn not_found(name: &str) -> Reply {
    Reply::error(
        404,
        &json!({ "error": format!("model '{name}' not found") }).to_string(),
    )
}

/// A layer's digest (64 hex digits, like a real one), made from the model's name and the
/// layer's place.
fn digest(name: &str, layer: usize) -> String {
    let mut state = name.bytes().fold(layer as u64 + 1, |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let mut hex = String::from("sha256:");
    for _ in 0..4 {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        hex.push_str(&format!("{:016x}", z ^ (z >> 31)));
    }
    hex
}

/// A streamed pull of `name`: a line a step, as Ollama streams them; the model is
/// installed when the pull succeeds.
fn pull(state: &mut State, name: &str) -> Reply {
    let mut lines = vec![json!({ "status": "pulling manifest" })];
    let fault = state.fault.take();
    if fault == Some(PullFault::Offline) {
        lines.push(json!({ "error": format!("pull model manifest: Get \"https://registry.ollama.ai/v2/library/{}/manifests/latest\": dial tcp: lookup registry.ollama.ai on 127.0.0.53:53: server misbehaving", name.split(':').next().unwrap_or(name)) }));
        return ndjson(&lines, Ending::Complete);
    }
    let Some(model) = state.registry.iter().find(|m| m.name == name).cloned() else {
        lines.push(json!({ "error": "pull model manifest: file does not exist" }));
        return ndjson(&lines, Ending::Complete);
    };
    let total: u64 = model.size();
    let mut sent = 0u64;
    for (i, &size) in model.layers.iter().enumerate() {
        let digest = digest(name, i);
        let short = &digest[7..19];
        // Before the first bytes Ollama sends the layer without `completed`.
        lines
            .push(json!({ "status": format!("pulling {short}"), "digest": digest, "total": size }));
        for tenth in 1..=10u64 {
            let completed = size * tenth / 10;
            if let Some(PullFault::NoSpaceAt(percent)) = fault
                && (sent + completed) * 100 >= total * u64::from(percent)
            {
                lines.push(json!({ "error": format!("write /root/.ollama/models/blobs/{}-partial: no space left on device", digest.replace(':', "-")) }));
                return ndjson(&lines, Ending::Complete);
            }
            lines.push(json!({ "status": format!("pulling {short}"), "digest": digest, "total": size, "completed": completed }));
        }
        sent += size;
    }
    lines.extend([
        json!({ "status": "verifying sha256 digest" }),
        json!({ "status": "writing manifest" }),
        json!({ "status": "success" }),
    ]);
    match fault {
        Some(PullFault::Stall) => ndjson(&lines, Ending::Hang),
        Some(PullFault::Dies) => ndjson(&lines, Ending::Disconnect),
        _ => {
            state.installed.retain(|m| m.name != model.name);
            state.installed.push(model);
            ndjson(&lines, Ending::Complete)
        }
    }
}

/// `lines` as NDJSON, a line a piece (the fake server ends a faulty reply halfway).
fn ndjson(lines: &[Value], ending: Ending) -> Reply {
    let mut reply = Reply::ndjson("", 1).ending(ending);
    reply.chunks = lines
        .iter()
        .map(|line| format!("{line}\n").into_bytes())
        .collect();
    reply
}
