//! The built-in providers and the factory that makes their adapters.

use std::sync::Arc;

use art_types::AdapterKind;
use serde_json::{Map, Value};

use super::anthropic::{self, AnthropicAdapter, AnthropicConfig};
use super::gemini::{self, GeminiAdapter, GeminiConfig};
use super::http::HttpOptions;
use super::manager::{AdapterFactory, ProviderEntry};
use super::ollama::{self, OllamaAdapter};
use super::openai::{OpenAiAdapter, OpenAiConfig};
use super::options::{BASE_URL, base_url, require_key};
use crate::reasoning::provider::{ProviderAdapter, ProviderError};
use crate::secrets::Secret;

/// The built-in providers with their default base URLs (Ollama's from `OLLAMA_HOST`
/// when set: [`ollama::default_base_url`]).
pub fn builtin_entries() -> Vec<ProviderEntry> {
    let entry = |name: &str, kind, base: &str| {
        let mut base_options = Map::new();
        base_options.insert(BASE_URL.into(), Value::String(base.into()));
        ProviderEntry {
            name: name.into(),
            kind,
            is_local: kind == AdapterKind::Ollama,
            base_options,
        }
    };
    vec![
        entry("ollama", AdapterKind::Ollama, &ollama::default_base_url()),
        entry("openai", AdapterKind::OpenAi, "https://api.openai.com/v1"),
        entry(
            "anthropic",
            AdapterKind::Anthropic,
            anthropic::DEFAULT_BASE_URL,
        ),
        entry("gemini", AdapterKind::Gemini, gemini::DEFAULT_BASE_URL),
        entry(
            "deepseek",
            AdapterKind::OpenAi,
            "https://api.deepseek.com/v1",
        ),
        entry(
            "openrouter",
            AdapterKind::OpenAi,
            "https://openrouter.ai/api/v1",
        ),
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
        let base_url = base_url(entry, options)?;
        let http = self.http;
        let adapter: Arc<dyn ProviderAdapter> = match entry.kind {
            AdapterKind::Ollama => {
                // Everything but the base URL goes to Ollama (num_ctx, think, keep_alive…).
                let mut model_options = options.clone();
                model_options.remove(BASE_URL);
                Arc::new(OllamaAdapter::new(&base_url, model, model_options, http)?)
            }
            AdapterKind::Anthropic => Arc::new(AnthropicAdapter::new(AnthropicConfig {
                base_url,
                api_key: require_key(entry, secret)?,
                thinking_budget: super::request::thinking_budget(options),
                http,
            })?),
            AdapterKind::Gemini => {
                let mut config = GeminiConfig {
                    base_url,
                    api_key: require_key(entry, secret)?,
                    include_thoughts: true,
                    thinking_budget: None,
                    http,
                };
                config.thinking_from(options);
                Arc::new(GeminiAdapter::new(config)?)
            }
            AdapterKind::OpenAi => {
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
                Arc::new(OpenAiAdapter::new(OpenAiConfig {
                    name: entry.name.clone(),
                    base_url,
                    api_key: Some(require_key(entry, secret)?),
                    extra_headers,
                    http,
                })?)
            }
        };
        Ok(adapter)
    }
}
