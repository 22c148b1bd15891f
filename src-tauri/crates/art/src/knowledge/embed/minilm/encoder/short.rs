//! One short text — a question — through the encoder on plain slices, no tensors. For a
//! dozen tokens the packed path's cost is not arithmetic but its overheads: matrix
//! products tiled for hundreds of rows, a tensor allocated per step. Here each dense layer
//! is `art_kernels::dense` over its weights packed in strips at load, and the steps
//! between are `art_kernels::ops`' passes. Measured in release (`cargo xtask bench
//! knowledge`): a query over the book 14 → 10 ms.

use art_kernels::dense::{ROWS, Strips};
use art_kernels::ops::{add_and_normalise, gelu, softmax_rows};
use candle_core::{Storage, Tensor};

use super::{Dense, Encoder, Layer};

/// Texts of at most this many tokens take this path.
pub const SHORT_TOKENS: usize = 64;

/// A tensor's floats, borrowed for as long as the guard lives.
pub struct Floats<'a> {
    storage: candle_core::StorageRef<'a>,
    start: usize,
    end: usize,
}

impl<'a> Floats<'a> {
    pub fn of(tensor: &'a Tensor) -> candle_core::Result<Self> {
        let (storage, layout) = tensor.storage_and_layout();
        let Some((start, end)) = layout.contiguous_offsets() else {
            candle_core::bail!("short path: weights must be contiguous");
        };
        Ok(Self {
            storage,
            start,
            end,
        })
    }

    pub fn get(&self) -> candle_core::Result<&[f32]> {
        match &*self.storage {
            Storage::Cpu(cpu) => Ok(&cpu.as_slice::<f32>()?[self.start..self.end]),
            _ => candle_core::bail!("short path: weights must be on the CPU"),
        }
    }
}

impl Encoder {
    /// Whether every dense layer has its [`Strips`] (all-MiniLM-L6-v2's do).
    pub fn has_short_path(&self) -> bool {
        self.layers.iter().all(|l| {
            [
                &l.query_key_value,
                &l.attention_out,
                &l.intermediate,
                &l.output,
            ]
            .iter()
            .all(|d| d.strips.is_some())
        })
    }

    /// One text's tokens (1 to [`SHORT_TOKENS`]) → the mean of its last layer's token
    /// vectors, as [`Encoder::mean_pooled`] computes it.
    pub fn mean_pooled_short(&self, ids: &[u32]) -> candle_core::Result<Vec<f32>> {
        let (n, hidden) = (ids.len(), self.hidden);
        if n == 0 || n > SHORT_TOKENS.min(self.max_tokens) {
            candle_core::bail!("a text of {n} tokens cannot take the short path");
        }
        let (words, positions, token_type) = (
            Floats::of(&self.words)?,
            Floats::of(&self.positions)?,
            Floats::of(&self.token_type)?,
        );
        let (words, positions, token_type) = (words.get()?, positions.get()?, token_type.get()?);
        // Rows padded to a multiple of ROWS with zeros: the kernel always runs whole
        // blocks; the padding's results are never read.
        let rows = n.div_ceil(ROWS) * ROWS;
        let mut x = vec![0f32; rows * hidden];
        for (t, &id) in ids.iter().enumerate() {
            let Some(word) = words.chunks_exact(hidden).nth(id as usize) else {
                candle_core::bail!("token {id} is not in the vocabulary");
            };
            let position = &positions[t * hidden..(t + 1) * hidden];
            for (((out, w), p), k) in x[t * hidden..(t + 1) * hidden]
                .iter_mut()
                .zip(word)
                .zip(position)
                .zip(token_type)
            {
                *out = w + p + k;
            }
        }
        add_and_normalise(&mut x[..n * hidden], None, None, &self.embeddings_norm);
        for layer in &self.layers {
            self.short_layer(layer, &mut x, n)?;
        }
        let mut mean = vec![0f32; hidden];
        for row in x[..n * hidden].chunks_exact(hidden) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
        }
        mean.iter_mut().for_each(|m| *m /= n as f32);
        Ok(mean)
    }

    /// One layer over `x` (`rows × hidden`, the first `n` real), in place.
    fn short_layer(&self, layer: &Layer, x: &mut [f32], n: usize) -> candle_core::Result<()> {
        let hidden = self.hidden;
        let qkv = dense(&layer.query_key_value, x)?;
        let mut attended = vec![0f32; x.len()];
        self.short_attention(&qkv, n, &mut attended);
        let mut y = dense(&layer.attention_out, &attended)?;
        add_and_normalise(&mut y[..n * hidden], Some(x), None, &layer.attention_norm);
        let mut inner = dense(&layer.intermediate, &y)?;
        gelu(&mut inner);
        let mut out = dense(&layer.output, &inner)?;
        add_and_normalise(&mut out[..n * hidden], Some(&y), None, &layer.output_norm);
        x.copy_from_slice(&out);
        Ok(())
    }

    /// Self-attention of the first `n` rows of `qkv` (`rows × 3·hidden`, the queries
    /// scaled already) into `out`.
    fn short_attention(&self, qkv: &[f32], n: usize, out: &mut [f32]) {
        let (hidden, size) = (self.hidden, self.hidden / self.heads);
        let row = |t: usize, part: usize, head: usize| {
            let start = t * 3 * hidden + part * hidden + head * size;
            &qkv[start..start + size]
        };
        let mut weights = vec![0f32; n];
        for head in 0..self.heads {
            for i in 0..n {
                let q = row(i, 0, head);
                for (j, w) in weights.iter_mut().enumerate() {
                    *w = q
                        .iter()
                        .zip(row(j, 1, head))
                        .map(|(a, b)| a * b)
                        .sum::<f32>();
                }
                softmax_rows(&mut weights, n);
                let target = &mut out[i * hidden + head * size..i * hidden + (head + 1) * size];
                target.fill(0.0);
                for (j, &w) in weights.iter().enumerate() {
                    target
                        .iter_mut()
                        .zip(row(j, 2, head))
                        .for_each(|(t, v)| *t += w * v);
                }
            }
        }
    }
}

/// `weight` (`in × out`) packed for the short path ([`Strips`]); `None` where the outputs
/// are not a whole number of strips.
pub fn strips_of(weight: &Tensor) -> candle_core::Result<Option<Strips>> {
    let (inputs, outputs) = weight.dims2()?;
    let rows = Floats::of(weight)?;
    Ok(Strips::pack(rows.get()?, inputs, outputs))
}

/// `x` (`rows × in`, rows a multiple of [`ROWS`]) through a dense layer → `rows × out`.
fn dense(layer: &Dense, x: &[f32]) -> candle_core::Result<Vec<f32>> {
    let Some(strips) = &layer.strips else {
        candle_core::bail!("short path: a layer's outputs are not whole strips");
    };
    strips
        .apply(x, &layer.bias)
        .map_err(|e| candle_core::Error::Msg(format!("short path: {e}")))
}
