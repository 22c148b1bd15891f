//! Self-attention over one text in one pass per head, its sums in registers: the scores
//! of 4 queries against 16 keys at a time, then their softmax, then the 4 queries' mix of
//! the values. candle's batched products of a text's `heads × len × 32` queries and keys
//! are too small for gemm's tiles (measured: 55–70 GFLOP/s a core against 135 for the
//! dense layers), and each step between them was a tensor of its own.

use pulp::{Arch, Simd, WithSimd};

use crate::ops::softmax;

/// The head size this kernel is compiled for (all-MiniLM-L6-v2's, and that of most small
/// sentence-embedding BERTs: 384 dimensions in 12 heads).
pub const HEAD: usize = 32;

/// Queries taken together.
const QUERIES: usize = 4;

/// Vectors of keys scored together (and of a value mixed together): with 4 queries, 8
/// sums in registers.
const VECTORS: usize = 2;

/// One text's attention: `qkv` its rows (`len × 3·hidden`: queries, already scaled, keys,
/// values), `out` its rows of the result (`len × hidden`).
pub fn attend(qkv: &[f32], out: &mut [f32], hidden: usize) {
    Arch::new().dispatch(Attend { qkv, out, hidden });
}

struct Attend<'a> {
    qkv: &'a [f32],
    out: &'a mut [f32],
    hidden: usize,
}

impl WithSimd for Attend<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self { qkv, out, hidden } = self;
        let (stride, len) = (3 * hidden, out.len() / hidden);
        let block = VECTORS * S::F32_LANES;
        let padded = len.next_multiple_of(block);
        // A head's keys transposed (`HEAD × padded`, zeros past the text), its values
        // (`len × HEAD`), and the scores of a block of queries (`QUERIES × padded`).
        let mut keys = vec![0f32; HEAD * padded];
        let mut values = vec![0f32; len * HEAD];
        let mut scores = vec![0f32; QUERIES * padded];
        for head in 0..hidden / HEAD {
            let column = |part: usize, row: usize| {
                let start = row * stride + part * hidden + head * HEAD;
                &qkv[start..start + HEAD]
            };
            for (j, value) in values.chunks_exact_mut(HEAD).enumerate() {
                for (d, k) in column(1, j).iter().enumerate() {
                    keys[d * padded + j] = *k;
                }
                value.copy_from_slice(column(2, j));
            }
            for first in (0..len).step_by(QUERIES) {
                let rows = (len - first).min(QUERIES);
                let mut queries = [[0f32; HEAD]; QUERIES];
                for (r, query) in queries.iter_mut().enumerate().take(rows) {
                    query.copy_from_slice(column(0, first + r));
                }
                score(simd, &queries, &keys, padded, &mut scores);
                for row in scores.chunks_exact_mut(padded).take(rows) {
                    softmax(&mut row[..len]);
                }
                for group in (0..HEAD).step_by(block) {
                    let mixed = mix(simd, &scores[..], padded, &values, group);
                    for (r, mixed) in mixed.iter().enumerate().take(rows) {
                        let start = (first + r) * hidden + head * HEAD + group;
                        let (target, _) = S::as_mut_simd_f32s(&mut out[start..start + block]);
                        target.copy_from_slice(mixed);
                    }
                }
            }
        }
    }
}

/// `scores (QUERIES × padded) = queries · keys` (`keys` transposed: `HEAD × padded`).
#[inline(always)]
fn score<S: Simd>(
    simd: S,
    queries: &[[f32; HEAD]; QUERIES],
    keys: &[f32],
    padded: usize,
    scores: &mut [f32],
) {
    let block = VECTORS * S::F32_LANES;
    for start in (0..padded).step_by(block) {
        let mut sums = [[simd.splat_f32s(0.0); VECTORS]; QUERIES];
        for (d, row) in keys.chunks_exact(padded).enumerate() {
            let (k, _) = S::as_simd_f32s(&row[start..start + block]);
            for (sum, query) in sums.iter_mut().zip(queries) {
                let q = simd.splat_f32s(query[d]);
                for (sum, k) in sum.iter_mut().zip(k) {
                    *sum = simd.mul_add_e_f32s(q, *k, *sum);
                }
            }
        }
        for (row, sum) in scores.chunks_exact_mut(padded).zip(&sums) {
            let (target, _) = S::as_mut_simd_f32s(&mut row[start..start + block]);
            target.copy_from_slice(sum);
        }
    }
}

/// Each query's values (`len × HEAD`) mixed by its weights (`scores`' rows), for the
/// values' `group`-th to `group + VECTORS·lanes`-th columns.
#[inline(always)]
fn mix<S: Simd>(
    simd: S,
    scores: &[f32],
    padded: usize,
    values: &[f32],
    group: usize,
) -> [[S::f32s; VECTORS]; QUERIES] {
    let block = VECTORS * S::F32_LANES;
    let mut sums = [[simd.splat_f32s(0.0); VECTORS]; QUERIES];
    for (j, value) in values.chunks_exact(HEAD).enumerate() {
        let (v, _) = S::as_simd_f32s(&value[group..group + block]);
        for (r, sum) in sums.iter_mut().enumerate() {
            let w = simd.splat_f32s(scores[r * padded + j]);
            for (sum, v) in sum.iter_mut().zip(v) {
                *sum = simd.mul_add_e_f32s(w, *v, *sum);
            }
        }
    }
    sums
}
