//! A unit-test stand-in embedding model: letter counts, 26 dimensions, instant. For tests
//! that need a second model (a change of model) or many embedders at once; the built-in
//! model's own tests use its real weights.

use super::{EmbedError, Embedder};

/// Its vectors: each text's letter counts, scaled to length 1.
pub(crate) struct Letters;

/// The id its vectors are recorded under.
pub(crate) const LETTERS: &str = "test:letters";

impl Embedder for Letters {
    fn model(&self) -> &str {
        LETTERS
    }

    fn dimension(&self) -> usize {
        26
    }

    fn relevant_from(&self) -> f32 {
        0.0
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 26];
                for c in t.to_lowercase().bytes().filter(u8::is_ascii_lowercase) {
                    v[usize::from(c - b'a')] += 1.0;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.into_iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}
