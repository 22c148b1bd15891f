//! Passage embeddings: each passage as a unit vector, so that a question finds the
//! passages that mean what it asks even when they share none of its words. The built-in
//! embedder ([`minilm`]) runs all-MiniLM-L6-v2 in process, on the CPU, from weights
//! fetched once from Hugging Face ([`download`]); vectors are stored per passage and
//! model ([`super::store`]) and searched in memory ([`vectors`]).

pub mod download;
pub mod minilm;
pub mod vectors;

use std::path::PathBuf;

/// Something that turns passages into vectors of one model.
pub trait Embedder: Send + Sync {
    /// The model's id as each vector records it (`builtin:all-MiniLM-L6-v2`): vectors of
    /// two models are never compared.
    fn model(&self) -> &str;

    /// One unit vector (L2 norm 1, so that a dot product is the cosine) per text, in
    /// order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
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
