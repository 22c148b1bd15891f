//! The built-in providers and the factory that makes their adapters.

use std::sync::Arc;

use art_types::ErrorClass;
use serde_json::{Map, Value};

use super::http::HttpOptions;
use super::manager::{AdapterFactory, ProviderEntry};
use super::openai::{OpenAiAdapter, OpenAiConfig};
use crate::reasoning::provider::{ProviderAdapter, ProviderError};
use crate::secrets::Secret;

/// Adapter option naming the base URL (overrides the provider's default).
pub const BASE_URL: &str = "base_url";

/// The built-in providers (Ollama, and the OpenAI-compatible APIs) with their default
/// base URLs.
pub fn builtin_entries() -> Vec<ProviderEntry> {
    let entry = |name: &str, base: &str| {
        let mut base_options = Map::new();
        base_options.insert(BASE_URL.into(), Value::String(base.into()));
        ProviderEntry {
            name: name.into(),
            is_local: false,
            base_options,
        }
    };
    let mut ollama = entry("ollama", super::ollama::DEFAULT_BASE_URL);
    ollama.is_local = true;
    vec![
        ollama,
        entry("openai", "https://api.openai.com/v1"),
        entry("deepseek", "https://api.deepseek.com/v1"),
        entry("openrouter", "https://openrouter.ai/api/v1"),
    ]
}

/// Makes adapters for the built-in providers.
#[derive(Debug, Clone, Default)]
pub struct BuiltinFactory {
    /// Timeouts and retries for every adapter.
    pub http: HttpOptions,
}

impl AdapterFactory for BuiltinFactory {
    fn create(
        &self,
        entry: &ProviderEntry,
        model: &str,
        options: &Map<String, Value>,
        secret: Option<&Secret>,
    ) -> Result<Arc<dyn ProviderAdapter>, ProviderError> {
        let base_url = options
            .get(BASE_URL)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                "INVALID_BASE_URL",
                format!(
                    "the base URL of {} must start with http:// or https://, got {base_url:?}",
                    entry.name
                ),
            ));
        }
        if entry.name == "ollama" {
            // Everything but the base URL goes to Ollama's `options` (num_ctx, ...).
            let mut model_options = options.clone();
            model_options.remove(BASE_URL);
            let adapter =
                super::ollama::OllamaAdapter::new(&base_url, model, model_options, self.http)?;
            return Ok(Arc::new(adapter));
        }
        let secret = secret.cloned().ok_or_else(|| {
            ProviderError::new(
                ErrorClass::Auth,
                "API_KEY_MISSING",
                format!(
                    "no API key is set for {}: add one in the provider settings",
                    entry.name
                ),
            )
        })?;
        let extra_headers = if entry.name == "openrouter" {
            vec![
                (
                    "HTTP-Referer".into(),
                    "https://github.com/art-workbench".into(),
                ),
                ("X-Title".into(), crate::APP_NAME.into()),
            ]
        } else {
            Vec::new()
        };
        let adapter = OpenAiAdapter::new(OpenAiConfig {
            name: entry.name.clone(),
            base_url,
            api_key: Some(secret),
            extra_headers,
            http: self.http,
        })?;
        Ok(Arc::new(adapter))
    }
}
