//! One short text — a question — through the encoder as plain loops over the weights, in
//! the widest SIMD the CPU has (AVX-512, AVX2 or scalar, chosen at run time by `pulp`).
//! For a dozen tokens the packed path's cost is not arithmetic but its overheads: matrix
//! products tiled for hundreds of rows, a tensor allocated per step. Here each dense layer
//! reads its weights once, in order (in strips packed for it; the strips shared between
//! the cores), the sums of 4 tokens at a time kept in registers. Measured in release
//! (`cargo xtask bench knowledge`): a query over the book 14 → 10 ms.

use candle_core::{Storage, Tensor};
use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

use super::ops::{add_and_normalise, gelu, softmax_rows};
use super::{Dense, Encoder, Layer};

/// Texts of at most this many tokens take this path.
pub const SHORT_TOKENS: usize = 64;

/// Token rows the dense kernel computes together.
const ROWS: usize = 4;

/// Output columns of a strip of a dense layer's weights ([`Strips`]): 4 vectors of
/// AVX-512, 8 of AVX2.
const STRIP: usize = 64;

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

/// A dense layer's weight (`in × out`) cut into strips of [`STRIP`] output columns, each
/// strip's `in × STRIP` block contiguous: the short path reads it once, in order, while
/// the sums of a block of token rows stay in registers (a strip of the `in × out` matrix
/// itself is `in` separate pieces a page or more apart, which the CPU cannot fetch ahead:
/// measured twice as slow).
pub struct Strips {
    floats: Vec<f32>,
    inputs: usize,
}

impl Strips {
    /// `weight` (`in × out`) in strips, or `None` where `out` is not a whole number of
    /// them.
    pub fn of(weight: &Tensor) -> candle_core::Result<Option<Self>> {
        let (inputs, outputs) = weight.dims2()?;
        if !outputs.is_multiple_of(STRIP) {
            return Ok(None);
        }
        let rows = Floats::of(weight)?;
        let rows = rows.get()?;
        let mut floats = Vec::with_capacity(rows.len());
        for strip in 0..outputs / STRIP {
            for row in rows.chunks_exact(outputs) {
                floats.extend_from_slice(&row[strip * STRIP..(strip + 1) * STRIP]);
            }
        }
        Ok(Some(Self { floats, inputs }))
    }
}

/// `x` (`rows × in`, rows a multiple of [`ROWS`]) through a dense layer → `rows × out`,
/// its strips shared between the cores (each core's share of the weights read once).
fn dense(layer: &Dense, x: &[f32]) -> candle_core::Result<Vec<f32>> {
    let Some(strips) = &layer.strips else {
        candle_core::bail!("short path: a layer's outputs are not whole strips");
    };
    let bias = &layer.bias;
    let (inputs, outputs) = (strips.inputs, bias.len());
    if strips.floats.len() != inputs * outputs || !x.len().is_multiple_of(inputs * ROWS) {
        candle_core::bail!("short path: a dense layer's shapes do not agree");
    }
    let rows = x.len() / inputs;
    // Computed strip by strip (`strip × rows × STRIP`), then put in row order.
    let mut by_strip = vec![0f32; rows * outputs];
    by_strip
        .par_chunks_mut(rows * STRIP)
        .zip(strips.floats.par_chunks_exact(inputs * STRIP))
        .zip(bias.par_chunks_exact(STRIP))
        .for_each(|((out, strip), bias)| {
            Arch::new().dispatch(Product {
                x,
                strip,
                bias,
                inputs,
                out,
            });
        });
    let mut out = vec![0f32; rows * outputs];
    for (strip, block) in by_strip.chunks_exact(rows * STRIP).enumerate() {
        for (row, values) in block.chunks_exact(STRIP).enumerate() {
            let start = row * outputs + strip * STRIP;
            out[start..start + STRIP].copy_from_slice(values);
        }
    }
    Ok(out)
}

/// One strip's outputs: `out (rows × STRIP) = x · strip + bias`.
struct Product<'a> {
    x: &'a [f32],
    strip: &'a [f32],
    bias: &'a [f32],
    inputs: usize,
    out: &'a mut [f32],
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self {
            x,
            strip,
            bias,
            inputs,
            out,
        } = self;
        // STRIP / lanes vectors wide, taken 4 vectors at a time (AVX-512: the whole
        // strip; 4 rows × 4 vectors of sums fill half its registers).
        let width = 4 * S::F32_LANES;
        for group in (0..STRIP).step_by(width) {
            let b = S::as_simd_f32s(&bias[group..group + width]).0;
            for (x, out) in x
                .chunks_exact(ROWS * inputs)
                .zip(out.chunks_exact_mut(ROWS * STRIP))
            {
                let (x0, rest) = x.split_at(inputs);
                let (x1, rest) = rest.split_at(inputs);
                let (x2, x3) = rest.split_at(inputs);
                let mut acc = [[b[0], b[1], b[2], b[3]]; ROWS];
                for ((((w, &a), &b), &c), &d) in
                    strip.chunks_exact(STRIP).zip(x0).zip(x1).zip(x2).zip(x3)
                {
                    let w = S::as_simd_f32s(&w[group..group + width]).0;
                    let w = [w[0], w[1], w[2], w[3]];
                    for (acc, x) in acc.iter_mut().zip([a, b, c, d]) {
                        let x = simd.splat_f32s(x);
                        for (acc, w) in acc.iter_mut().zip(w) {
                            *acc = simd.mul_add_e_f32s(x, w, *acc);
                        }
                    }
                }
                for (row, acc) in out.chunks_exact_mut(STRIP).zip(&acc) {
                    S::as_mut_simd_f32s(&mut row[group..group + width]).0[..4].copy_from_slice(acc);
                }
            }
        }
    }
}
