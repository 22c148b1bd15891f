//! Providers as the UI sees them: which wire protocol an entry speaks, the models it
//! offers, and the Ollama doctor's findings.

use serde::{Deserialize, Serialize};

/// The provider option (in a thread's provider options) that says whether the model
/// sees images: `false` refuses an image before anything is sent, `true` sends it
/// whatever the server reports. Unset, a local server is asked (Ollama's
/// capabilities); a remote model is assumed to see them.
pub const VISION_OPTION: &str = "vision";

/// The provider option (in a thread's provider options) naming the address the thread
/// reaches its provider at, instead of the provider entry's default.
pub const BASE_URL_OPTION: &str = "base_url";

/// The wire protocol a provider entry speaks (which adapter serves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdapterKind {
    /// OpenAI Chat Completions (OpenAI, DeepSeek, OpenRouter, other compatibles).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `streamGenerateContent`.
    Gemini,
    /// Ollama's native API.
    Ollama,
}

impl AdapterKind {
    /// The embedding model suggested for a knowledge collection on a provider of this
    /// kind (its maker's small general one); `None` where the API offers no embeddings.
    pub fn suggested_embedding_model(self) -> Option<&'static str> {
        match self {
            AdapterKind::OpenAi => Some("text-embedding-3-small"),
            AdapterKind::Gemini => Some("gemini-embedding-001"),
            AdapterKind::Ollama => Some("nomic-embed-text"),
            AdapterKind::Anthropic => None,
        }
    }
}

/// Whether a provider's API key is available (the key itself never leaves the backend).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum KeyState {
    /// A local provider: no key.
    NotNeeded,
    /// Stored in the OS keychain.
    Set,
    /// Not in the keychain, but its environment variable is set.
    FromEnvironment,
    /// No key anywhere.
    NotSet,
    /// The keychain cannot be reached.
    Unavailable {
        /// What the keychain said, for the user to act on.
        reason: String,
    },
}

/// A provider as the settings show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    /// Name used in thread settings.
    pub name: String,
    /// Wire protocol.
    pub kind: AdapterKind,
    /// Local (no key, one model loaded at a time).
    pub is_local: bool,
    /// Default base URL.
    pub base_url: String,
    /// Key availability.
    pub key: KeyState,
    /// The environment variable read when the keychain has no key.
    pub key_variable: String,
}

/// One model a provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The id to put in a thread's provider config.
    pub id: String,
    /// A friendlier name, where the provider gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Size on disk (local models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Loaded in memory right now (Ollama `/api/ps`).
    #[serde(default)]
    pub loaded: bool,
}

/// How bad a doctor finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Works; for information.
    Ok,
    /// Works, with a caveat (e.g. the model still has to load).
    Warning,
    /// Will not work until fixed.
    Error,
}

/// One thing the doctor checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorFinding {
    /// Stable code, e.g. `OLLAMA_NOT_RUNNING`.
    pub code: String,
    /// How bad.
    pub severity: Severity,
    /// What was found, in plain words.
    pub message: String,
    /// What to do about it, when something needs doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// What the Ollama doctor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// The base URL checked (after normalisation).
    pub base_url: String,
    /// Ollama's version, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Installed models (with `loaded` set from `/api/ps`).
    pub models: Vec<ModelInfo>,
    /// Findings, most important first.
    pub findings: Vec<DoctorFinding>,
}

impl DoctorReport {
    /// Whether nothing blocks a chat.
    pub fn ready(&self) -> bool {
        self.findings.iter().all(|f| f.severity != Severity::Error)
    }
}
