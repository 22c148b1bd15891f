//! Local models (Ollama's library on this machine): what is installed and what each can
//! do, what is loaded, a pull's progress as Ollama streams it, and what can go wrong.
//! The app's Models page and `art models` read the same values.

use serde::{Deserialize, Serialize};

/// What a model can do, as Ollama's `/api/show` lists it (`capabilities`, 0.6.4 and
/// later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Writes text (a chat or completion model).
    Completion,
    /// Calls tools natively.
    Tools,
    /// Sees images.
    Vision,
    /// Thinks before answering (a reasoning trace the app shows apart).
    Thinking,
    /// Embeds text (for knowledge collections), rather than chatting.
    Embedding,
    /// Fills in the middle of code.
    Insert,
    /// A capability newer than this app (kept out of every check).
    #[serde(other)]
    Other,
}

impl Capability {
    /// The short word shown on a model's row and in the picker.
    pub fn label(self) -> &'static str {
        match self {
            Capability::Completion => "chat",
            Capability::Tools => "tools",
            Capability::Vision => "vision",
            Capability::Thinking => "thinking",
            Capability::Embedding => "embedding",
            Capability::Insert => "insert",
            Capability::Other => "other",
        }
    }
}

/// One installed model, with what `/api/tags` and `/api/show` say of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalModel {
    /// Its name, as a thread's settings hold it (`llama3.2:3b`).
    pub id: String,
    /// Bytes on disk.
    pub size_bytes: u64,
    /// The model family (`llama`, `qwen2`, `gemma3`), when said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Parameters, as Ollama words it (`3.2B`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<String>,
    /// The weights' quantization (`Q4_K_M`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<String>,
    /// The longest context it was trained for (tokens), when said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u64>,
    /// What it can do; `None` when the server does not say (older than 0.6.4): unknown,
    /// not "nothing".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<Capability>>,
    /// When it was last pulled or changed (RFC 3339, as the server says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
    /// Loaded in memory now (`/api/ps`).
    #[serde(default)]
    pub loaded: bool,
}

impl LocalModel {
    /// Whether it is known to have `capability` (`None` when the server does not say).
    pub fn can(&self, capability: Capability) -> Option<bool> {
        self.capabilities
            .as_ref()
            .map(|list| list.contains(&capability))
    }

    /// What it can do, as its row shows it (`chat`, `tools`, …; capabilities newer than
    /// the app left out); `None` when the server does not say.
    pub fn capability_labels(&self) -> Option<Vec<&'static str>> {
        self.capabilities.as_ref().map(|list| {
            list.iter()
                .filter(|c| **c != Capability::Other)
                .map(|c| c.label())
                .collect()
        })
    }
}

/// Whether the installed model `id` is the one `wanted` names (`llama3.2` is
/// `llama3.2:latest`, Ollama's default tag).
pub fn same_model(id: &str, wanted: &str) -> bool {
    id == wanted || id.strip_suffix(":latest") == Some(wanted)
}

/// A model in memory now (`/api/ps`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedModel {
    /// Its name.
    pub id: String,
    /// Memory it takes, in all.
    pub size_bytes: u64,
    /// Of which in the GPU's memory.
    pub vram_bytes: u64,
    /// The context it was loaded with (tokens), when said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u64>,
    /// When Ollama unloads it unless used (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// One line of a pull's progress, as Ollama streams it: `pulling manifest`, then per
/// layer `pulling <digest>` with its `total` and (once bytes arrive) `completed`, then
/// `verifying sha256 digest`, `writing manifest`, `success`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullStep {
    /// What Ollama is doing, in its words.
    pub status: String,
    /// The layer being downloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The layer's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Its bytes downloaded so far (absent before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
}

/// A pull as a whole, summed over its layers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullProgress {
    /// The model being pulled.
    pub model: String,
    /// What Ollama says it is doing now.
    pub status: String,
    /// Each layer's digest, size and bytes so far, in the order Ollama announced them.
    pub layers: Vec<LayerProgress>,
    /// Ended with `success`.
    pub done: bool,
}

/// One layer of a pull.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerProgress {
    /// The layer's digest (`sha256:…`).
    pub digest: String,
    /// Its size in bytes.
    pub total: u64,
    /// Bytes downloaded so far.
    pub completed: u64,
}

impl PullProgress {
    /// A pull of `model` not started yet.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            ..Self::default()
        }
    }

    /// Take one streamed step into account. Ollama repeats a layer's line as its bytes
    /// arrive, and sometimes restarts a layer (`completed` going down): the last word wins.
    pub fn step(&mut self, step: &PullStep) {
        self.status.clone_from(&step.status);
        if step.status == "success" {
            self.done = true;
        }
        let (Some(digest), Some(total)) = (&step.digest, step.total) else {
            return;
        };
        let completed = step.completed.unwrap_or(0).min(total);
        match self.layers.iter_mut().find(|l| &l.digest == digest) {
            Some(layer) => {
                layer.total = total;
                layer.completed = completed;
            }
            None => self.layers.push(LayerProgress {
                digest: digest.clone(),
                total,
                completed,
            }),
        }
    }

    /// Bytes downloaded so far, over every layer announced.
    pub fn completed(&self) -> u64 {
        self.layers.iter().map(|l| l.completed).sum()
    }

    /// Bytes to download, over every layer announced so far.
    pub fn total(&self) -> u64 {
        self.layers.iter().map(|l| l.total).sum()
    }
}

/// Where a pull the app runs is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PullPhase {
    /// Waiting for the pulls before it (one runs at a time).
    Queued,
    /// Downloading.
    Pulling,
    /// Installed.
    Done,
    /// Stopped by a problem (what was downloaded stays; pulling again resumes).
    Failed {
        /// What went wrong.
        problem: ModelsProblem,
    },
    /// Stopped by the user.
    Cancelled,
}

/// A pull the app runs or ran, as its Models page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PullState {
    /// Its progress over every layer.
    pub progress: PullProgress,
    /// Where it is.
    pub phase: PullPhase,
    /// Download speed over the last few seconds, once there is one to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_second: Option<u64>,
}

impl PullState {
    /// Seconds left at the present speed, when it is known.
    pub fn seconds_left(&self) -> Option<u64> {
        let speed = self.bytes_per_second.filter(|s| *s > 0)?;
        let left = self
            .progress
            .total()
            .saturating_sub(self.progress.completed());
        Some(left.div_ceil(speed))
    }

    /// Still queued or downloading.
    pub fn is_active(&self) -> bool {
        matches!(self.phase, PullPhase::Queued | PullPhase::Pulling)
    }
}

/// A small model suggested for a first pull: what it is good for, and its download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suggested {
    /// The name to pull.
    pub name: &'static str,
    /// Its download, in bytes (as the Ollama library lists it).
    pub size_bytes: u64,
    /// What it can do.
    pub capabilities: &'static [Capability],
    /// Why pick it, in a few words.
    pub note: &'static str,
}

/// Small models that run on a laptop's CPU, for a first pull (sizes from the Ollama
/// library, 2026-11). The first is the one a first run offers.
pub const SUGGESTED: &[Suggested] = &[
    Suggested {
        name: "llama3.2:3b",
        size_bytes: 2_000_000_000,
        capabilities: &[Capability::Completion, Capability::Tools],
        note: "a good first model: answers and calls tools",
    },
    Suggested {
        name: "qwen3:4b",
        size_bytes: 2_500_000_000,
        capabilities: &[
            Capability::Completion,
            Capability::Tools,
            Capability::Thinking,
        ],
        note: "thinks before answering; calls tools",
    },
    Suggested {
        name: "gemma3:4b",
        size_bytes: 3_300_000_000,
        capabilities: &[Capability::Completion, Capability::Vision],
        note: "sees images",
    },
    Suggested {
        name: "llama3.2:1b",
        size_bytes: 1_300_000_000,
        capabilities: &[Capability::Completion, Capability::Tools],
        note: "the smallest: fast on any machine, weaker answers",
    },
    Suggested {
        name: "nomic-embed-text",
        size_bytes: 274_000_000,
        capabilities: &[Capability::Embedding],
        note: "for knowledge collections: embeds, does not chat",
    },
];

/// Why a request about local models failed, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelsProblem {
    /// A name Ollama could not mean (spaces, shell characters, empty).
    #[error("{name:?} is not a model name: {reason}")]
    BadName {
        /// What was given.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The registry has no model of that name (or that tag).
    #[error(
        "the Ollama library has no model {name:?}: check its name and tag on ollama.com/library"
    )]
    NotInLibrary {
        /// The name.
        name: String,
    },
    /// No installed model has that name.
    #[error("{name:?} is not installed")]
    NotInstalled {
        /// The name.
        name: String,
    },
    /// Ollama does not answer at its address.
    #[error(
        "Ollama is not answering at {base_url} ({detail}): start it (`ollama serve`) or set its address"
    )]
    Unreachable {
        /// The address tried.
        base_url: String,
        /// What the connection said.
        detail: String,
    },
    /// The server at the address answers, but not Ollama's model API (`/api/tags` and
    /// the rest): an OpenAI-compatible server (llama.cpp's, LM Studio, vLLM), a proxy, a
    /// web page. Its models are listed by its provider in the model picker instead.
    #[error(
        "{base_url} does not speak Ollama's model API ({detail}): it is not an Ollama server. \
         An OpenAI-compatible server (llama.cpp, LM Studio, vLLM) lists its models in the \
         thread's model picker (`art config --provider openai --base-url URL`) instead"
    )]
    NotOllama {
        /// The address asked.
        base_url: String,
        /// What it answered instead.
        detail: String,
    },
    /// The model's files do not fit on the disk.
    #[error("not enough disk space for {name}: {detail}")]
    NoSpace {
        /// The model.
        name: String,
        /// What Ollama said.
        detail: String,
    },
    /// Ollama could not download (it is offline, or the registry refused).
    #[error("Ollama could not download {name}: {detail}")]
    Offline {
        /// The model.
        name: String,
        /// What Ollama said.
        detail: String,
    },
    /// The connection ended before the pull did (Ollama stopped or restarted); what it
    /// had downloaded is kept, and pulling again resumes.
    #[error(
        "Ollama stopped answering while pulling {name} (it may have restarted): pull again to resume"
    )]
    Interrupted {
        /// The model.
        name: String,
    },
    /// The app was closed while it pulled (Ollama stops a pull whose connection closes,
    /// keeping what it downloaded).
    #[error("the app was closed while it pulled {name}: pull again to resume")]
    AppClosed {
        /// The model.
        name: String,
    },
    /// No progress for too long.
    #[error("the pull of {name} made no progress for {seconds} s: pull again to resume")]
    Stalled {
        /// The model.
        name: String,
        /// How long it waited.
        seconds: u64,
    },
    /// Anything else Ollama said, as it said it.
    #[error("Ollama answered {status}: {message}")]
    Server {
        /// The HTTP status (0 when the error came inside a stream).
        status: u16,
        /// Its message.
        message: String,
    },
}

/// Check `name` as a model reference Ollama takes (`llama3.2`, `qwen2.5:7b-instruct-q4_K_M`,
/// `hf.co/user/repo:Q4_K_M`, `host:port/namespace/model:tag`) before it is sent anywhere.
pub fn check_model_name(name: &str) -> Result<(), ModelsProblem> {
    let bad = |reason: &str| ModelsProblem::BadName {
        name: name.to_owned(),
        reason: reason.to_owned(),
    };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name.len() > 350 {
        return Err(bad("it is longer than 350 characters"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '/')))
    {
        return Err(bad(&format!(
            "{c:?} is not allowed (letters, digits, '.', '-', '_', ':' and '/' are)"
        )));
    }
    let (path, tag) = match name.rsplit_once('/') {
        Some((host_and_namespace, last)) => (Some(host_and_namespace), last),
        None => (None, name),
    };
    let model = tag.split(':').next().unwrap_or_default();
    if model.is_empty() || tag.split(':').count() > 2 || tag.ends_with(':') {
        return Err(bad("a model is `name` or `name:tag`"));
    }
    if path.is_some_and(|p| p.split('/').any(str::is_empty)) {
        return Err(bad("an empty part between '/'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_take_what_ollama_takes_and_refuse_shell_characters() {
        for good in [
            "llama3.2",
            "llama3.2:3b",
            "qwen2.5:7b-instruct-q4_K_M",
            "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
            "registry.example.com:5000/team/model:v1",
        ] {
            assert_eq!(check_model_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "llama 3",
            "llama3;rm -rf",
            "$(reboot)",
            "a:b:c",
            "model:",
            ":tag",
            "a//b",
            "ünïcode",
        ] {
            assert!(
                matches!(check_model_name(bad), Err(ModelsProblem::BadName { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_pull_adds_up_its_layers_and_the_last_word_on_a_layer_wins() {
        let mut pull = PullProgress::new("llama3.2");
        let step = |status: &str, digest: Option<&str>, total, completed| PullStep {
            status: status.into(),
            digest: digest.map(str::to_owned),
            total,
            completed,
        };
        pull.step(&step("pulling manifest", None, None, None));
        pull.step(&step("pulling aa", Some("sha256:aa"), Some(1000), None));
        assert_eq!((pull.completed(), pull.total()), (0, 1000));
        pull.step(&step(
            "pulling aa",
            Some("sha256:aa"),
            Some(1000),
            Some(600),
        ));
        pull.step(&step("pulling bb", Some("sha256:bb"), Some(24), Some(24)));
        assert_eq!((pull.completed(), pull.total()), (624, 1024));
        // A layer restarted: its count goes down, never beyond its size.
        pull.step(&step(
            "pulling aa",
            Some("sha256:aa"),
            Some(1000),
            Some(100),
        ));
        pull.step(&step("pulling bb", Some("sha256:bb"), Some(24), Some(99)));
        assert_eq!(pull.completed(), 124);
        assert!(!pull.done);
        pull.step(&step("success", None, None, None));
        assert!(pull.done);
        assert_eq!(pull.layers.len(), 2);
    }

    #[test]
    fn every_suggested_model_has_a_name_ollama_takes() {
        for model in SUGGESTED {
            assert_eq!(check_model_name(model.name), Ok(()));
            assert!(model.size_bytes > 0 && !model.capabilities.is_empty());
        }
    }

    #[test]
    fn capabilities_newer_than_the_app_read_as_other() {
        let list: Vec<Capability> =
            serde_json::from_str(r#"["completion","tools","vision","thinking","audio"]"#).unwrap();
        assert_eq!(
            list,
            [
                Capability::Completion,
                Capability::Tools,
                Capability::Vision,
                Capability::Thinking,
                Capability::Other
            ]
        );
    }
}
