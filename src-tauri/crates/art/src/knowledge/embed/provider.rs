//! A provider's embedding model as a collection's embedder (`ollama:nomic-embed-text`,
//! `openai:text-embedding-3-small`, `gemini:gemini-embedding-001`): the same [`Embedder`]
//! the built-in model is, its vectors asked for over HTTP
//! ([`crate::providers::embeddings`]).

use std::sync::Arc;

use art_types::knowledge::{provider_and_model, provider_embedder};
use serde_json::{Map, Value};

use super::{EmbedError, Embedder};
use crate::providers::embeddings;
use crate::providers::http::HttpOptions;
use crate::providers::manager::ProviderEntry;
use crate::secrets::{Secret, SecretStore};

/// The cosine under which a passage is taken as unrelated to a question, for a
/// provider's model: models differ (and none is measured here), so a low bar that
/// leaves out only what is plainly unrelated.
pub const RELEVANT_FROM: f32 = 0.2;

/// A provider's embedding model, connected.
pub struct ProviderEmbedder {
    /// `<provider>:<model>`, as vectors and collections record it.
    id: String,
    entry: ProviderEntry,
    options: Map<String, Value>,
    secret: Option<Secret>,
    http: HttpOptions,
    /// The model's name at the provider.
    name: String,
    dimension: usize,
}

impl ProviderEmbedder {
    /// Connect to `model` of the provider `entry` (with its merged `options` and key):
    /// one short text is embedded to learn the vectors' length and to find out at once
    /// when the model is missing or the key is refused. Blocks: call it off any async
    /// runtime's workers.
    pub fn connect(
        entry: ProviderEntry,
        options: Map<String, Value>,
        secret: Option<Secret>,
        http: HttpOptions,
        model: &str,
    ) -> Result<Self, EmbedError> {
        let mut embedder = Self {
            id: provider_embedder(&entry.name, model),
            entry,
            options,
            secret,
            http,
            name: model.to_owned(),
            dimension: 0,
        };
        embedder.dimension = embedder
            .embed(&["How long are the vectors?"])?
            .first()
            .map_or(0, Vec::len);
        Ok(embedder)
    }
}

impl Embedder for ProviderEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn relevant_from(&self) -> f32 {
        RELEVANT_FROM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let call = embeddings::embed(
            &self.entry,
            &self.options,
            self.secret.as_ref(),
            &self.http,
            &self.name,
            texts,
        );
        // On a thread of its own with a runtime of its own: callers are the indexer's
        // thread and searches on blocking threads, either may sit inside a runtime.
        let vectors = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| EmbedError::Failed(format!("cannot start a request: {e}")))?
                        .block_on(call)
                        .map_err(|e| EmbedError::Failed(e.message))
                })
                .join()
                .unwrap_or_else(|_| Err(EmbedError::Failed("the request stopped".into())))
        })?;
        match vectors.first() {
            Some(v) if self.dimension != 0 && v.len() != self.dimension => {
                Err(EmbedError::Failed(format!(
                    "{} now gives vectors of {} numbers, not {}: change the collection's model \
                     to re-embed it",
                    self.id,
                    v.len(),
                    self.dimension
                )))
            }
            _ => Ok(vectors),
        }
    }
}

/// Connects the embedders of provider models by their ids (`<provider>:<model>`), from the
/// providers' entries and the keys in the keychain — for the indexer and searches.
pub struct ProviderModels {
    entries: Vec<ProviderEntry>,
    secrets: Arc<dyn SecretStore>,
    http: HttpOptions,
}

impl ProviderModels {
    /// Over these provider `entries`, their keys read from `secrets` (by provider name).
    pub fn new(
        entries: Vec<ProviderEntry>,
        secrets: Arc<dyn SecretStore>,
        http: HttpOptions,
    ) -> Self {
        Self {
            entries,
            secrets,
            http,
        }
    }

    /// The embedder of `id` (`ollama:nomic-embed-text`), connected.
    pub fn connect(&self, id: &str) -> Result<ProviderEmbedder, EmbedError> {
        let (provider, model) = provider_and_model(id).ok_or_else(|| {
            EmbedError::Failed(format!("{id:?} is not a provider's model (provider:model)"))
        })?;
        let entry = self
            .entries
            .iter()
            .find(|e| e.name == provider)
            .cloned()
            .ok_or_else(|| EmbedError::Failed(format!("no provider is named {provider}")))?;
        let secret = if entry.is_local {
            None
        } else {
            self.secrets
                .get(&entry.name)
                .map_err(|e| EmbedError::Failed(e.to_string()))?
        };
        let options = entry.base_options.clone();
        ProviderEmbedder::connect(entry, options, secret, self.http, model)
    }
}
