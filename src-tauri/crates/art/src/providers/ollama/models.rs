//! Ollama's models managed from the app and the CLI: the installed ones with what each
//! can do (`/api/tags`, `/api/show`), the loaded ones (`/api/ps`) and unloading one,
//! pulling with streamed progress (`/api/pull`), deleting (`/api/delete`). Every failure
//! is a [`ModelsProblem`] in words a user can act on.

use std::time::Duration;

use art_types::FailureCode;
use art_types::models::{
    LoadedModel, LocalModel, ModelsProblem, PullProgress, PullStep, same_model,
};
use futures::StreamExt;
use serde_json::{Value, json};

use super::library::root;
use super::window::{listed_capabilities, trained_context_length};
use crate::providers::http::{self, entries, text};
use crate::providers::ndjson::LineFramer;

/// How long to wait for Ollama to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest a question about models (not a pull) may take.
const ASK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a pull may go without a word before it is called stalled (Ollama sends a
/// line every few hundred milliseconds while bytes arrive).
pub const PULL_STALL: Duration = Duration::from_secs(120);

/// The models of the Ollama server at one base URL.
#[derive(Debug, Clone)]
pub struct OllamaModels {
    client: reqwest::Client,
    base: String,
}

impl OllamaModels {
    /// The server at `base_url` (its native root: a `/v1` suffix is dropped).
    pub fn new(base_url: &str) -> Result<Self, ModelsProblem> {
        let base = root(base_url.trim());
        let client = crate::net::client_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| ModelsProblem::Unreachable {
                base_url: base.clone(),
                detail: e.to_string(),
            })?;
        Ok(Self { client, base })
    }

    /// The address asked.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The installed models, each with its details and capabilities (asked of every model
    /// at once), marked loaded from `/api/ps`; largest last-modified first, as Ollama
    /// lists them.
    pub async fn list(&self) -> Result<Vec<LocalModel>, ModelsProblem> {
        let listed = self.tagged().await?;
        let loaded: Vec<String> = match self.loaded().await {
            Ok(loaded) => loaded.into_iter().map(|m| m.id).collect(),
            // Loaded models are a nicety: a failing /api/ps hides none of the installed.
            Err(_) => Vec::new(),
        };
        let shown = futures::future::join_all(listed.iter().map(|m| self.shown(&m.id))).await;
        Ok(listed
            .into_iter()
            .zip(shown)
            .map(|(mut model, shown)| {
                if let Ok(Some(shown)) = shown {
                    with_shown(&mut model, &shown);
                }
                model.loaded = loaded.contains(&model.id);
                model
            })
            .collect())
    }

    /// The installed models as `/api/tags` alone lists them (no capabilities).
    async fn tagged(&self) -> Result<Vec<LocalModel>, ModelsProblem> {
        let tags = self.get("api/tags").await?;
        Ok(entries(&tags, "models").map(from_tags).collect())
    }

    /// One installed model, by any name Ollama takes for it (`llama3.2` is
    /// `llama3.2:latest`).
    pub async fn show(&self, name: &str) -> Result<LocalModel, ModelsProblem> {
        art_types::models::check_model_name(name)?;
        self.list()
            .await?
            .into_iter()
            .find(|m| same_model(&m.id, name))
            .ok_or_else(|| ModelsProblem::NotInstalled {
                name: name.to_owned(),
            })
    }

    /// The models in memory now.
    pub async fn loaded(&self) -> Result<Vec<LoadedModel>, ModelsProblem> {
        let ps = self.get("api/ps").await?;
        Ok(entries(&ps, "models")
            .map(|m| LoadedModel {
                id: text(m, "name").unwrap_or_default(),
                size_bytes: m.get("size").and_then(Value::as_u64).unwrap_or(0),
                vram_bytes: m.get("size_vram").and_then(Value::as_u64).unwrap_or(0),
                context_length: m
                    .get("context_length")
                    .and_then(Value::as_u64)
                    .filter(|n| *n > 0),
                expires_at: text(m, "expires_at"),
            })
            .collect())
    }

    /// Unload `name` from memory now (a generate request with `keep_alive: 0`, as
    /// Ollama's documentation says); its files stay.
    pub async fn unload(&self, name: &str) -> Result<(), ModelsProblem> {
        art_types::models::check_model_name(name)?;
        let request = self
            .client
            .post(http::join(&self.base, "api/generate"))
            .timeout(ASK_TIMEOUT)
            .json(&json!({ "model": name, "keep_alive": 0 }));
        let response = self.answer(request, name, Asking::Installed).await?;
        // Ollama answers with the model and `done`; anything else is another server.
        let said = response.json::<Value>().await.ok();
        if said.as_ref().and_then(|v| v.get("done")).is_none() {
            return Err(ModelsProblem::NotOllama {
                base_url: self.base.clone(),
                detail: "/api/generate did not answer as Ollama does".into(),
            });
        }
        Ok(())
    }

    /// Delete `name`'s files; returns the model's size (what is freed, less any layer
    /// another model shares).
    pub async fn delete(&self, name: &str) -> Result<u64, ModelsProblem> {
        art_types::models::check_model_name(name)?;
        let size = self
            .tagged()
            .await?
            .into_iter()
            .find(|m| same_model(&m.id, name))
            .map_or(0, |m| m.size_bytes);
        // A model in memory is unloaded first: its memory is freed with its files,
        // whatever the server does with a model deleted under a runner.
        let loaded = self.loaded().await.unwrap_or_default();
        if loaded.iter().any(|m| same_model(&m.id, name)) {
            let _ = self.unload(name).await;
        }
        let request = self
            .client
            .delete(http::join(&self.base, "api/delete"))
            .timeout(ASK_TIMEOUT)
            .json(&json!({ "model": name }));
        self.answer(request, name, Asking::Installed).await?;
        Ok(size)
    }

    /// Pull `name`, `progress` told after every line Ollama streams. Ends at `success`;
    /// an error line, a broken connection or `stall` without a word is a problem (what
    /// was downloaded stays on the server, and pulling again resumes). Dropping the
    /// future stops the pull.
    pub async fn pull(
        &self,
        name: &str,
        stall: Duration,
        mut progress: impl FnMut(&PullProgress),
    ) -> Result<PullProgress, ModelsProblem> {
        art_types::models::check_model_name(name)?;
        let request = self
            .client
            .post(http::join(&self.base, "api/pull"))
            .json(&json!({ "model": name, "stream": true }));
        let response = self.answer(request, name, Asking::Library).await?;
        let mut pull = PullProgress::new(name);
        let mut framer = LineFramer::default();
        let mut failed: Option<ModelsProblem> = None;
        // Whether any line was Ollama's JSON: a body without one is another server's.
        let mut heard = false;
        let mut body = std::pin::pin!(http::idle_guarded(response, stall));
        let mut read = |line: &str, pull: &mut PullProgress, failed: &mut Option<ModelsProblem>| {
            if failed.is_some() {
                return;
            }
            let Ok(value) = serde_json::from_str::<Value>(line) else {
                return;
            };
            heard |= value.is_object();
            if let Some(message) = value.get("error").and_then(Value::as_str) {
                *failed = Some(problem(name, 0, message, Asking::Library));
                return;
            }
            if let Ok(step) = serde_json::from_value::<PullStep>(value) {
                pull.step(&step);
                progress(pull);
            }
        };
        while let Some(piece) = body.next().await {
            match piece {
                Ok(bytes) => framer.push_with(&bytes, |line| read(line, &mut pull, &mut failed)),
                Err(e) if e.code == FailureCode::IdleTimeout => {
                    return Err(ModelsProblem::Stalled {
                        name: name.to_owned(),
                        seconds: stall.as_secs(),
                    });
                }
                Err(_) => break,
            }
            if let Some(problem) = failed {
                return Err(problem);
            }
        }
        framer.finish_with(|line| read(line, &mut pull, &mut failed));
        match failed {
            Some(problem) => Err(problem),
            None if pull.done => Ok(pull),
            None if !heard => Err(ModelsProblem::NotOllama {
                base_url: self.base.clone(),
                detail: "/api/pull did not answer as Ollama does".into(),
            }),
            None => Err(ModelsProblem::Interrupted {
                name: name.to_owned(),
            }),
        }
    }

    /// `/api/show`'s answer about `name`; `None` when no installed model has that name.
    async fn shown(&self, name: &str) -> Result<Option<Value>, ModelsProblem> {
        let request = self
            .client
            .post(http::join(&self.base, "api/show"))
            .timeout(ASK_TIMEOUT)
            .json(&json!({ "model": name }));
        match self.answer(request, name, Asking::Installed).await {
            Ok(response) => Ok(response.json::<Value>().await.ok()),
            Err(ModelsProblem::NotInstalled { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn get(&self, path: &str) -> Result<Value, ModelsProblem> {
        let request = self
            .client
            .get(http::join(&self.base, path))
            .timeout(ASK_TIMEOUT);
        let response = self.answer(request, "", Asking::Installed).await?;
        // Every listing of Ollama's (`/api/tags`, `/api/ps`) is an object with `models`:
        // anything else is another kind of server.
        let not_ollama = |detail: String| ModelsProblem::NotOllama {
            base_url: self.base.clone(),
            detail,
        };
        let value: Value = response
            .json()
            .await
            .map_err(|_| not_ollama(format!("/{path} did not answer with JSON")))?;
        if value.get("models").is_some_and(Value::is_array) {
            Ok(value)
        } else {
            Err(not_ollama(format!(
                "/{path} answered without a list of models"
            )))
        }
    }

    /// Send `request`; a refusal becomes the problem it means for `name`.
    async fn answer(
        &self,
        request: reqwest::RequestBuilder,
        name: &str,
        asking: Asking,
    ) -> Result<reqwest::Response, ModelsProblem> {
        let response = request
            .send()
            .await
            .map_err(|e| ModelsProblem::Unreachable {
                base_url: self.base.clone(),
                detail: reason(&e),
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let path = response.url().path().to_owned();
        let body = response.text().await.unwrap_or_default();
        let said = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| text(&v, "error"));
        // Ollama says why in `{"error": "…"}`; a path it does not know, answered
        // otherwise, is another kind of server (llama.cpp: `{"error": {"code": 404, …}}`).
        if said.is_none() && matches!(status.as_u16(), 404 | 405 | 501) {
            return Err(ModelsProblem::NotOllama {
                base_url: self.base.clone(),
                detail: format!("HTTP {} for {path}", status.as_u16()),
            });
        }
        let message = said.unwrap_or(body);
        Err(problem(name, status.as_u16(), &message, asking))
    }
}

/// What a request asked about: a model in the registry (a pull) or an installed one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asking {
    Library,
    Installed,
}

/// The problem Ollama's error `message` (with HTTP `status`, 0 inside a stream) means.
fn problem(name: &str, status: u16, message: &str, asking: Asking) -> ModelsProblem {
    let lower = message.to_lowercase();
    let name = name.to_owned();
    let missing = status == 404
        || ["file does not exist", "not found", "manifest unknown"]
            .iter()
            .any(|m| lower.contains(m));
    let offline = [
        "dial tcp",
        "no such host",
        "server misbehaving",
        "network is unreachable",
        "i/o timeout",
        "tls handshake",
        "connection refused",
        "connection reset",
    ]
    .iter()
    .any(|m| lower.contains(m));
    if lower.contains("no space left") {
        ModelsProblem::NoSpace {
            name,
            detail: message.to_owned(),
        }
    } else if offline && asking == Asking::Library {
        ModelsProblem::Offline {
            name,
            detail: message.to_owned(),
        }
    } else if missing {
        match asking {
            Asking::Library => ModelsProblem::NotInLibrary { name },
            Asking::Installed => ModelsProblem::NotInstalled { name },
        }
    } else {
        ModelsProblem::Server {
            status,
            message: message.to_owned(),
        }
    }
}

/// A connection error in few words (reqwest's own message, then its deepest cause).
fn reason(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    if error.is_timeout() {
        "timed out".to_owned()
    } else {
        cause.to_string()
    }
}

/// A model as `/api/tags` lists it.
fn from_tags(entry: &Value) -> LocalModel {
    let details = entry.get("details").unwrap_or(&Value::Null);
    LocalModel {
        id: text(entry, "name").unwrap_or_default(),
        size_bytes: entry.get("size").and_then(Value::as_u64).unwrap_or(0),
        family: text(details, "family").filter(|s| !s.is_empty()),
        parameters: text(details, "parameter_size").filter(|s| !s.is_empty()),
        quantization: text(details, "quantization_level").filter(|s| !s.is_empty()),
        context_length: None,
        capabilities: None,
        modified_at: text(entry, "modified_at"),
        loaded: false,
    }
}

/// Fill in what `/api/show` adds: capabilities, the trained context length, and the
/// details when the list had none.
fn with_shown(model: &mut LocalModel, shown: &Value) {
    model.capabilities = listed_capabilities(shown);
    model.context_length = trained_context_length(shown);
    let listed = from_tags(&json!({ "details": shown.get("details") }));
    model.family = model.family.take().or(listed.family);
    model.parameters = model.parameters.take().or(listed.parameters);
    model.quantization = model.quantization.take().or(listed.quantization);
}

#[cfg(test)]
mod tests;
