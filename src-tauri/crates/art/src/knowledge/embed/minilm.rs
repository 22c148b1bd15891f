//! The built-in embedder: sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT, 384
//! dimensions) on candle, on the CPU. It embeds as sentence-transformers does: WordPiece
//! tokens cut at 256, the last layer's token vectors averaged over the real tokens
//! (padding masked out), then scaled to length 1.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{EmbedError, Embedder};

/// The model's id as its vectors record it.
pub const MODEL: &str = "builtin:all-MiniLM-L6-v2";

/// The dimension of its vectors.
pub const DIMENSION: usize = 384;

/// The cosine under which a passage is unrelated to a question, for this model: related
/// question–passage pairs measured here score 0.35–0.70, unrelated ones −0.16–0.22
/// (`minilm::tests`).
pub const RELEVANT_FROM: f32 = 0.25;

/// The files the model is read from, all in one folder.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Tokens a text is cut at (sentence-transformers' `max_seq_length` for this model).
const MAX_TOKENS: usize = 256;

/// Texts run through the model at once: sorted by length first, so a batch pads little.
const BATCH: usize = 16;

/// all-MiniLM-L6-v2, loaded.
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

impl MiniLm {
    /// Load the model from `dir` (which holds [`FILES`]).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|_| EmbedError::Missing { path })
        };
        let [config, tokenizer, weights] = FILES.map(read);
        let (config, tokenizer, weights) = (config?, tokenizer?, weights?);
        let unloadable = |reason: String| EmbedError::Unloadable {
            dir: dir.to_path_buf(),
            reason,
        };
        let config: Config =
            serde_json::from_slice(&config).map_err(|e| unloadable(format!("config.json: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer)
            .map_err(|e| unloadable(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| unloadable(format!("tokenizer.json: {e}")))?;
        let device = Device::Cpu;
        let model = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .and_then(|vb| BertModel::load(vb, &config))
            .map_err(|e| unloadable(format!("model.safetensors: {e}")))?;
        Ok(Self {
            model,
            tokenizer,
            device,
        })
    }

    /// Where the model's files are kept in a data directory.
    pub fn dir_in(models: &Path) -> PathBuf {
        models.join("all-MiniLM-L6-v2")
    }

    /// One batch, in order.
    fn batch(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let width = encodings.first().map_or(0, |e| e.len());
        let rows = encodings.len();
        let flat = |part: fn(&tokenizers::Encoding) -> &[u32]| {
            let values: Vec<u32> = encodings.iter().flat_map(|e| part(e).to_vec()).collect();
            Tensor::from_vec(values, (rows, width), &self.device)
        };
        let ids = flat(tokenizers::Encoding::get_ids)?;
        let mask = flat(tokenizers::Encoding::get_attention_mask)?;
        let types = ids.zeros_like()?;
        let tokens = self.model.forward(&ids, &types, Some(&mask))?;
        // Mean over the real tokens, then unit length.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = tokens.broadcast_mul(&mask)?.sum(1)?;
        let mean = summed.broadcast_div(&mask.sum(1)?)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLm {
    fn model(&self) -> &str {
        MODEL
    }

    fn dimension(&self) -> usize {
        DIMENSION
    }

    fn relevant_from(&self) -> f32 {
        RELEVANT_FROM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for indices in order.chunks(BATCH) {
            let batch: Vec<&str> = indices.iter().map(|&i| texts[i]).collect();
            let embedded = self
                .batch(&batch)
                .map_err(|e| EmbedError::Failed(e.to_string()))?;
            for (&i, vector) in indices.iter().zip(embedded) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests;
