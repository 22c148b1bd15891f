//! The Models page's commands: Ollama's installed models with what each can do, pulls
//! (queued, one at a time, with progress the page asks for while one runs), delete and
//! unload. A refusal is a `MODELS` error whose details are the
//! [`ModelsProblem`](crate::models::ModelsProblem).

use serde::{Deserialize, Serialize};

/// The installed models, with details, capabilities and whether each is loaded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListLocalModels {}

/// Queue a pull of a model by name (`llama3.2:3b`, `hf.co/user/repo:Q4_K_M`); returns
/// every pull. A model already queued or being pulled is not pulled twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PullModel {
    /// The model's name.
    pub name: String,
}

/// Every pull, running, queued or ended (until dismissed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPulls {}

/// Stop a pull, or take it out of the queue; returns every pull.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelPull {
    /// The model's name.
    pub name: String,
}

/// Forget the pulls that ended; returns those still running or queued.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DismissPulls {}

/// Delete an installed model's files; returns its size (what is freed, less any layer
/// another model shares).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteModel {
    /// The model's name.
    pub name: String,
}

/// Unload a model from memory now (its files stay).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnloadModel {
    /// The model's name.
    pub name: String,
}

/// The address of the Ollama server the Models page manages (the Ollama provider's at
/// start); with `base_url`, manage that one from now on (refused while a pull runs).
/// Returns the address, as used (no `/v1`, no trailing slash).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OllamaAddress {
    /// The new address (`http://host:11434`); none to ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}
