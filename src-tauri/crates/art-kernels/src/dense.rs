//! A dense layer for a few token rows (a question's dozen tokens): each core reads its
//! share of the weights once, in order, in strips packed for it at load ([`Strips`]), the
//! sums of [`ROWS`] token rows at a time kept in registers. For so few rows a general
//! matrix product's cost is not arithmetic but its overheads (tiles sized for hundreds
//! of rows, packing on every call). Measured in release (`cargo xtask bench knowledge`):
//! a query over the book 14 → 10 ms.

use std::fmt;

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// Token rows computed together: the rows given to [`Strips::apply`] are a multiple of it
/// (a caller pads with zeros and ignores the padding's results).
pub const ROWS: usize = 4;

/// Output columns of a strip: 4 vectors of AVX-512, 8 of AVX2.
pub const STRIP: usize = 64;

/// What [`Strips::apply`] was given does not fit the layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The layer's inputs and outputs.
    pub layer: (usize, usize),
    /// The floats of `x` and of the bias given.
    pub given: (usize, usize),
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((inputs, outputs), (x, bias)) = (self.layer, self.given);
        write!(
            f,
            "{x} input floats (a multiple of {ROWS} × {inputs} wanted) and {bias} bias \
             floats ({outputs} wanted)"
        )
    }
}

impl std::error::Error for Mismatch {}

/// A dense layer's weight (`in × out`) cut into strips of [`STRIP`] output columns, each
/// strip's `in × STRIP` block contiguous. The product reads it
/// once, in order (a strip of the `in × out` matrix itself is `in` separate pieces a page
/// or more apart, which the CPU cannot fetch ahead: measured twice as slow).
pub struct Strips {
    floats: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Strips {
    /// `weight` (`inputs × outputs`, row by row) in strips, or `None` where its outputs
    /// are not a whole number of strips or the sizes do not agree.
    pub fn pack(weight: &[f32], inputs: usize, outputs: usize) -> Option<Self> {
        if outputs == 0 || !outputs.is_multiple_of(STRIP) || weight.len() != inputs * outputs {
            return None;
        }
        let mut floats = Vec::with_capacity(weight.len());
        for strip in 0..outputs / STRIP {
            for row in weight.chunks_exact(outputs) {
                floats.extend_from_slice(&row[strip * STRIP..(strip + 1) * STRIP]);
            }
        }
        Some(Self {
            floats,
            inputs,
            outputs,
        })
    }

    /// `x` (`rows × in`, rows a multiple of [`ROWS`]) through the layer: `x · weight +
    /// bias`, `rows × out`, its strips shared between the cores.
    pub fn apply(&self, x: &[f32], bias: &[f32]) -> Result<Vec<f32>, Mismatch> {
        let (inputs, outputs) = (self.inputs, self.outputs);
        if bias.len() != outputs || !x.len().is_multiple_of(inputs * ROWS) {
            return Err(Mismatch {
                layer: (inputs, outputs),
                given: (x.len(), bias.len()),
            });
        }
        let rows = x.len() / inputs;
        // Computed strip by strip (`strip × rows × STRIP`), then put in row order.
        let mut by_strip = vec![0f32; rows * outputs];
        by_strip
            .par_chunks_mut(rows * STRIP)
            .zip(self.floats.par_chunks_exact(inputs * STRIP))
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
