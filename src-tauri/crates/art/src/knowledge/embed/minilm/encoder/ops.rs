//! The encoder's element-wise steps — GELU and softmax — as single passes over the data,
//! compiled for the widest SIMD the CPU has (chosen at run time by `pulp`) with `erf` and
//! `exp` written without branches or library calls, so that each loop vectorises.
//! (candle's own softmax calls the C library's `expf` once per score: a tenth of the
//! time of embedding a book, measured with `perf`.)

use candle_core::{CpuStorage, CustomOp1, Layout, Shape};
use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// GELU (the erf form BERT was trained with), over the cores.
pub struct Gelu;

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-erf-parallel"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        copied(storage, layout, "gelu", |out| {
            out.par_chunks_mut(1 << 14).for_each(gelu)
        })
    }
}

/// Softmax over the last dimension, on the calling thread (attention runs one text per
/// thread already).
pub struct Softmax;

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "softmax-last-dim"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let width = layout.shape().dims().last().copied().unwrap_or(1);
        copied(storage, layout, "softmax", |out| {
            if width > 0 {
                softmax_rows(out, width);
            }
        })
    }
}

/// A copy of a contiguous f32 tensor's values, changed in place by `step`: the op's
/// output.
fn copied(
    storage: &CpuStorage,
    layout: &Layout,
    op: &str,
    step: impl FnOnce(&mut [f32]),
) -> candle_core::Result<(CpuStorage, Shape)> {
    let CpuStorage::F32(values) = storage else {
        candle_core::bail!("{op}: f32 only");
    };
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("{op}: contiguous input only");
    };
    let mut out = values[start..end].to_vec();
    step(&mut out);
    Ok((CpuStorage::F32(out), layout.shape().clone()))
}

/// GELU of each value, in place.
pub fn gelu(values: &mut [f32]) {
    Arch::new().dispatch(Gelus(values));
}

struct Gelus<'a>(&'a mut [f32]);

impl WithSimd for Gelus<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for v in self.0 {
            *v *= 0.5 * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

/// Softmax of each `width`-long row of `values`, in place.
pub fn softmax_rows(values: &mut [f32], width: usize) {
    Arch::new().dispatch(Softmaxes { values, width });
}

struct Softmaxes<'a> {
    values: &'a mut [f32],
    width: usize,
}

impl WithSimd for Softmaxes<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for row in self.values.chunks_mut(self.width) {
            let largest = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for v in row.iter_mut() {
                *v = exp(*v - largest);
            }
            // Summed in 16 lanes (the order of an exact sum does not matter to f32's
            // precision here, and one running sum would not vectorise).
            let mut lanes = [0f32; 16];
            let mut chunks = row.chunks_exact(16);
            for chunk in &mut chunks {
                lanes.iter_mut().zip(chunk).for_each(|(l, v)| *l += v);
            }
            let total = lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>();
            let scale = 1.0 / total;
            row.iter_mut().for_each(|v| *v *= scale);
        }
    }
}

/// The error function in f32 as a rational function of `x` clamped to ±4 (where it is 1
/// to f32's precision): no branch and no `exp`, so the loop over a tensor vectorises.
/// Within 1e-6 of the exact value (`tests::erf_is_within_a_millionth_of_the_exact_one`);
/// the coefficients are the minimax fit numerical libraries (Eigen, XLA) use for f32.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const NUMERATOR: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ];
    const DENOMINATOR: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_474e-2,
    ];
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = NUMERATOR[1..].iter().fold(NUMERATOR[0], |p, a| p * x2 + a);
    let q = DENOMINATOR[1..]
        .iter()
        .fold(DENOMINATOR[0], |q, b| q * x2 + b);
    x * p / q
}

/// `e^x` in f32 without a branch or a library call: `x = n·ln 2 + r` with `|r| ≤ ln 2 / 2`,
/// `e^r` by Cephes' minimax polynomial, `2^n` built in the exponent bits. Within 2e-7 of
/// the exact value, relatively (`tests::exp_is_within_two_ten_millionths_of_the_exact_one`);
/// below −87 it gives e^−87 (about 1.6·10⁻³⁸: nothing, beside softmax's largest term, 1).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Adding then subtracting 1.5·2²³ rounds to the nearest integer in any rounding-free
    // instruction set (SSE2 has no round instruction).
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let p = [
        1.987_569_1e-4,
        1.398_199_9e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        0.166_666_65,
        0.5,
    ]
    .iter()
    .fold(0.0, |p, c| p * r + c);
    let er = p * r * r + r + 1.0;
    er * f32::from_bits(((n as i32 + 127) as u32) << 23)
}
