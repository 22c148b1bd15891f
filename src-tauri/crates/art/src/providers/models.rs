//! What each provider offers: model lists (Ollama's installed models; the `/models`
//! endpoints of the OpenAI-compatible APIs, Anthropic and Gemini), sorted by id.

use art_types::{AdapterKind, ModelInfo};
use serde_json::{Map, Value};

use super::anthropic;
use super::http::{self, HttpOptions, entries, get_json, text};
use super::manager::ProviderEntry;
use super::ollama::library;
use super::options::{base_url, require_key};
use crate::reasoning::provider::ProviderError;
use crate::secrets::Secret;

/// Models of a provider entry with its merged `options` (base URL) and key. Sorted by id.
pub async fn list_models(
    entry: &ProviderEntry,
    options: &Map<String, Value>,
    secret: Option<&Secret>,
    http_options: &HttpOptions,
) -> Result<Vec<ModelInfo>, ProviderError> {
    let base = base_url(entry, options)?;
    let client = http::client(http_options)?;
    let mut models = match entry.kind {
        AdapterKind::Ollama => library::installed(&client, http_options, &base).await?,
        AdapterKind::OpenAi => {
            let key = require_key(entry, secret)?;
            let bearer = format!("Bearer {}", key.expose());
            let url = http::join(&base, "models");
            let answer =
                get_json(&client, http_options, &url, &[("Authorization", &bearer)]).await?;
            entries(&answer, "data")
                .map(|m| model(text(m, "id"), text(m, "name")))
                .collect()
        }
        AdapterKind::Anthropic => {
            let key = require_key(entry, secret)?;
            let url = http::join(&base, "models?limit=1000");
            let headers = [
                ("x-api-key", key.expose()),
                ("anthropic-version", anthropic::API_VERSION),
            ];
            let answer = get_json(&client, http_options, &url, &headers).await?;
            entries(&answer, "data")
                .map(|m| model(text(m, "id"), text(m, "display_name")))
                .collect()
        }
        AdapterKind::Gemini => {
            let key = require_key(entry, secret)?;
            let url = http::join(&base, "models?pageSize=1000");
            let answer = get_json(
                &client,
                http_options,
                &url,
                &[("x-goog-api-key", key.expose())],
            )
            .await?;
            // Only models that can chat; ids without the `models/` prefix.
            entries(&answer, "models")
                .filter(|m| {
                    m.get("supportedGenerationMethods")
                        .and_then(Value::as_array)
                        .is_none_or(|methods| methods.iter().any(|x| x == "generateContent"))
                })
                .map(|m| {
                    let id = text(m, "name").map(|n| n.trim_start_matches("models/").to_owned());
                    model(id, text(m, "displayName"))
                })
                .collect()
        }
    };
    models.retain(|m: &ModelInfo| !m.id.is_empty());
    models.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(models)
}

fn model(id: Option<String>, display_name: Option<String>) -> ModelInfo {
    ModelInfo {
        id: id.unwrap_or_default(),
        display_name,
        size_bytes: None,
        loaded: false,
    }
}
