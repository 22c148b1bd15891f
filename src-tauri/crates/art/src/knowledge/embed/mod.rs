//! Passage embeddings: each passage as a unit vector, so that a question finds the
//! passages that mean what it asks even when they share none of its words. The built-in
//! embedder ([`minilm`]) runs all-MiniLM-L6-v2 in process, on the CPU, from weights
//! fetched once from Hugging Face ([`download`]); vectors are stored per passage and
//! model ([`super::store`]) and searched in memory ([`vectors`]).

pub mod download;
pub mod minilm;
pub mod provider;
pub mod vectors;

#[cfg(test)]
pub(crate) mod letters;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use art_types::knowledge::KnowledgeProblem;

use super::KnowledgeStore;

/// Something that turns passages into vectors of one model.
pub trait Embedder: Send + Sync {
    /// The model's id as each vector records it (`builtin:all-MiniLM-L6-v2`): vectors of
    /// two models are never compared.
    fn model(&self) -> &str;

    /// The length of its vectors.
    fn dimension(&self) -> usize;

    /// The cosine under which a passage is taken as unrelated to a question (what a
    /// search by meaning leaves out, so that "nothing relevant" can still be said).
    fn relevant_from(&self) -> f32;

    /// One unit vector (L2 norm 1, so that a dot product is the cosine) per text, in
    /// order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// What connects the embedder of a collection's model when a search needs one that is
/// not loaded yet — the one place every caller (the app, `art run`'s `search_knowledge`,
/// `art kb search`) gets search by meaning from ([`crate::standard::Standard`] gives
/// its store one). A search never downloads: the built-in model is loaded when its
/// weights are there, a provider's model connected.
pub trait EmbedderSource: Send + Sync {
    /// The embedder of `model`, or why it cannot be had now.
    fn embedder(&self, model: &str) -> Result<Arc<dyn Embedder>, String>;
}

/// Why passages could not be embedded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The model's files are not (all) there.
    #[error("the embedding model is not downloaded ({path} is missing)")]
    Missing {
        /// The first missing file.
        path: PathBuf,
    },
    /// Its files are there but are not a model this embedder reads.
    #[error("the embedding model in {dir} cannot be loaded: {reason}")]
    Unloadable {
        /// The model's folder.
        dir: PathBuf,
        /// What the loader said.
        reason: String,
    },
    /// The model was loaded but a batch failed.
    #[error("embedding failed: {0}")]
    Failed(String),
    /// Downloading the model failed.
    #[error("{0}")]
    Download(#[from] download::DownloadError),
}

/// Where the built-in embedder's weights are kept, and the hub they are fetched from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderHome {
    /// The folder of the model's files (`<data dir>/models/all-MiniLM-L6-v2`).
    pub dir: PathBuf,
    /// The hub ([`download::endpoint`]).
    pub endpoint: String,
}

impl EmbedderHome {
    /// The home in a data directory's models folder, fetched from `HF_ENDPOINT` or the hub.
    pub fn in_models(models: &Path) -> Self {
        Self {
            dir: minilm::MiniLm::dir_in(models),
            endpoint: download::endpoint(),
        }
    }

    /// Whether the weights are all there (nothing to download).
    pub fn is_downloaded(&self) -> bool {
        download::MINILM.is_in(&self.dir)
    }

    /// The built-in embedder, its weights downloaded first if they are not there
    /// (`progress(done, total)` in bytes; `stop` asked between chunks). Blocks: call it off
    /// any async runtime (the indexer's thread, the CLI).
    pub fn load(
        &self,
        progress: download::Progress<'_>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Arc<dyn Embedder>, EmbedError> {
        if !self.is_downloaded() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| EmbedError::Failed(format!("cannot start the download: {e}")))?;
            runtime.block_on(download::fetch(
                &download::MINILM,
                &self.endpoint,
                &self.dir,
                progress,
                stop,
            ))?;
        }
        Ok(Arc::new(minilm::MiniLm::load(&self.dir)?))
    }
}

/// Passages embedded and stored at a time.
pub const BATCH: usize = 32;

/// Why embedding waiting passages stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmbedStop {
    /// The database failed.
    #[error(transparent)]
    Database(#[from] KnowledgeProblem),
    /// The embedder failed.
    #[error(transparent)]
    Embedder(#[from] EmbedError),
}

/// Give every passage waiting for a vector of `embedder`'s model one, a batch at a time,
/// while `keep_going` says so; `progress(embedded, of)` after each batch. Returns how
/// many were embedded. A process killed between batches loses at most one batch's work.
pub fn embed_waiting(
    store: &KnowledgeStore,
    embedder: &dyn Embedder,
    mut progress: impl FnMut(u64, u64),
    keep_going: impl Fn() -> bool,
) -> Result<u64, EmbedStop> {
    let mut done = 0;
    while keep_going() {
        let batch = store.to_embed(embedder.model(), BATCH)?;
        if batch.is_empty() {
            // Every passage has one: a collection that changed to this model lets the
            // old vectors go.
            store.retire_replaced_vectors()?;
            break;
        }
        let texts: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        let rows: Vec<(i64, Vec<f32>)> = batch.iter().map(|(id, _)| *id).zip(vectors).collect();
        store.put_vectors(embedder.model(), &rows)?;
        done += rows.len() as u64;
        let left = store.waiting_for_vectors(embedder.model())?;
        progress(done, done + left);
    }
    Ok(done)
}
