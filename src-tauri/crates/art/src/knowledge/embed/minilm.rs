//! The built-in embedder: sentence-transformers' all-MiniLM-L6-v2 (a 6-layer BERT, 384
//! dimensions) on candle, on the CPU. It embeds as sentence-transformers does: WordPiece
//! tokens cut at 256, the last layer's token vectors averaged over the real tokens
//! (padding masked out), then scaled to length 1.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use tokenizers::{Tokenizer, TruncationParams};

use super::{EmbedError, Embedder};

mod encoder;

use encoder::{Config, Encoder, SHORT_TOKENS};

/// The model's id as its vectors record it.
pub const MODEL: &str = art_types::knowledge::BUILTIN_EMBEDDER;

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

/// Tokens run through the model at once (texts packed one after another, not padded).
/// Bounded so that what a layer allocates and frees, about 40 MB at this size (the
/// feed-forward layer's `tokens × 1536` floats are 12.5 MB), stays under what glibc's
/// allocator keeps for the next allocation once [`settle_allocator`] has run: above it,
/// the allocator hands the top of its heap back to the system after every layer and the
/// kernel zeroes fresh pages for the next (measured here with 4,096 tokens a batch:
/// 10 s of 60 in the kernel, 1.4 s with this bound, the ingestion a tenth faster and
/// 45 MB smaller at its peak).
const BATCH_TOKENS: usize = 2048;

/// Make glibc's allocator keep freed memory for reuse instead of returning it to the
/// system at once. glibc raises both its threshold for serving allocations from fresh
/// mappings and the free space it keeps at the top of its heap (to twice that) when a
/// mapped block is freed; one 31 MB block (calloc'd: no page of it is touched) freed here
/// sets them to 31 and 62 MB, the most it allows (32 MB), before the first batch. Other
/// allocators ignore it; `mallopt` would say it directly, but is `unsafe`.
fn settle_allocator() {
    let block = vec![0_u8; 31 << 20];
    drop(std::hint::black_box(block));
}

/// all-MiniLM-L6-v2, loaded.
pub struct MiniLm {
    encoder: Encoder,
    tokenizer: Tokenizer,
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
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| unloadable(format!("tokenizer.json: {e}")))?;
        settle_allocator();
        let device = Device::Cpu;
        let encoder = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .and_then(|vb| Encoder::load(vb, &config))
            .map_err(|e| unloadable(format!("model.safetensors: {e}")))?;
        Ok(Self { encoder, tokenizer })
    }

    /// Where the model's files are kept in a data directory.
    pub fn dir_in(models: &Path) -> PathBuf {
        models.join("all-MiniLM-L6-v2")
    }

    /// The vectors of texts already cut into tokens, in order.
    fn pooled(&self, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        // Mean over each text's tokens, then unit length.
        let means = self.encoder.mean_pooled(ids)?.to_vec2::<f32>()?;
        Ok(means.into_iter().map(unit).collect())
    }
}

/// `v` scaled to length 1.
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// `lengths` cut into runs of consecutive items whose lengths add up to at most
/// `budget` (an item longer than that is a run of its own): the ranges of each run.
fn runs(lengths: &[usize], budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let (mut start, mut total) = (0, 0);
    for (i, &length) in lengths.iter().enumerate() {
        if i > start && total + length > budget {
            runs.push(start..i);
            (start, total) = (i, 0);
        }
        total += length;
    }
    if start < lengths.len() {
        runs.push(start..lengths.len());
    }
    runs
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
        // One text (a question) on this thread: `encode_batch` hands even one to the
        // thread pool.
        let encodings = match texts {
            [one] => self.tokenizer.encode(*one, true).map(|e| vec![e]),
            _ => self.tokenizer.encode_batch(texts.to_vec(), true),
        }
        .map_err(|e| EmbedError::Failed(e.to_string()))?;
        let ids: Vec<&[u32]> = encodings
            .iter()
            .map(tokenizers::Encoding::get_ids)
            .collect();
        let lengths: Vec<usize> = ids.iter().map(|t| t.len()).collect();
        let mut vectors = Vec::with_capacity(texts.len());
        let failed = |e: candle_core::Error| EmbedError::Failed(e.to_string());
        for run in runs(&lengths, BATCH_TOKENS) {
            match &ids[run] {
                // A question: the short path, on this thread.
                [one] if one.len() <= SHORT_TOKENS && self.encoder.has_short_path() => {
                    vectors.push(unit(self.encoder.mean_pooled_short(one).map_err(failed)?));
                }
                texts => vectors.extend(self.pooled(texts).map_err(failed)?),
            }
        }
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests;
