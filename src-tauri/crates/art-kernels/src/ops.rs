//! The encoder's element-wise arithmetic — GELU, softmax, layer normalisation — as loops
//! that vectorise, compiled for the widest SIMD the CPU has (chosen at run time by `pulp`):
//! `erf` and `exp` without branches, library calls or float-to-integer conversions, sums
//! and maxima kept in 16 lanes. (candle's own softmax calls the C library's `expf` once
//! per score, and its layer norm sums one value at a time: measured with `perf`.)

use pulp::{Arch, Simd, WithSimd};

/// GELU (the erf form BERT was trained with) of each value, in place.
pub fn gelu(values: &mut [f32]) {
    Arch::new().dispatch(Gelus(values));
}

struct Gelus<'a>(&'a mut [f32]);

impl WithSimd for Gelus<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        self.0.iter_mut().for_each(|v| *v = gelu_of(*v));
    }
}

/// GELU of one value.
#[inline(always)]
fn gelu_of(x: f32) -> f32 {
    x * 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Each `bias`-long row of `x` plus `bias`, then GELU if `gelu`, in place.
pub fn add_bias(x: &mut [f32], bias: &[f32], gelu: bool) {
    Arch::new().dispatch(AddBias { x, bias, gelu });
}

struct AddBias<'a> {
    x: &'a mut [f32],
    bias: &'a [f32],
    gelu: bool,
}

impl WithSimd for AddBias<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for row in self.x.chunks_exact_mut(self.bias.len()) {
            if self.gelu {
                row.iter_mut()
                    .zip(self.bias)
                    .for_each(|(v, b)| *v = gelu_of(*v + b));
            } else {
                row.iter_mut().zip(self.bias).for_each(|(v, b)| *v += b);
            }
        }
    }
}

/// Softmax of each `width`-long row of `values`, in place.
pub fn softmax_rows(values: &mut [f32], width: usize) {
    if width > 0 {
        Arch::new().dispatch(Softmaxes { values, width });
    }
}

struct Softmaxes<'a> {
    values: &'a mut [f32],
    width: usize,
}

impl WithSimd for Softmaxes<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        self.values.chunks_mut(self.width).for_each(softmax);
    }
}

/// Softmax of `row`, in place (for a caller that has chosen its SIMD already).
#[inline(always)]
pub fn softmax(row: &mut [f32]) {
    let largest = lanes_fold(row, f32::NEG_INFINITY, |v| v, larger);
    row.iter_mut().for_each(|v| *v = exp(*v - largest));
    let scale = 1.0 / lanes_fold(row, 0.0, |v| v, |a, b| a + b);
    row.iter_mut().for_each(|v| *v *= scale);
}

/// The larger of two scores (`f32::max`'s care for NaN does not vectorise, and a score is
/// never NaN).
#[inline(always)]
fn larger(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// Layer normalisation's scale, shift and epsilon, as plain values.
pub struct Norm {
    /// Each column's scale (γ): the row's width.
    pub weight: Vec<f32>,
    /// Each column's shift (β).
    pub bias: Vec<f32>,
    /// Added to the variance before its square root (the model's `layer_norm_eps`).
    pub eps: f32,
}

/// Each `width`-long row of `x` plus `add`'s row (the residual, if any) and `bias` (if
/// any), then normalised, in place.
pub fn add_and_normalise(x: &mut [f32], add: Option<&[f32]>, bias: Option<&[f32]>, norm: &Norm) {
    Arch::new().dispatch(AddNorm { x, add, bias, norm });
}

struct AddNorm<'a> {
    x: &'a mut [f32],
    add: Option<&'a [f32]>,
    bias: Option<&'a [f32]>,
    norm: &'a Norm,
}

impl WithSimd for AddNorm<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let Self { x, add, bias, norm } = self;
        let width = norm.weight.len();
        for (i, row) in x.chunks_exact_mut(width).enumerate() {
            if let Some(add) = add {
                let add = &add[i * width..(i + 1) * width];
                row.iter_mut().zip(add).for_each(|(v, a)| *v += a);
            }
            if let Some(bias) = bias {
                row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
            }
            let mean = lanes_fold(row, 0.0, |v| v, |a, b| a + b) / width as f32;
            let variance =
                lanes_fold(row, 0.0, |v| (v - mean) * (v - mean), |a, b| a + b) / width as f32;
            let scale = 1.0 / (variance + norm.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
    }
}

/// `values`, each mapped by `map`, reduced by `join` (associative and commutative) in 16
/// lanes, so that the loop vectorises: one running value would be a chain of dependent
/// instructions, one value at a time.
#[inline(always)]
fn lanes_fold(
    values: &[f32],
    start: f32,
    map: impl Fn(f32) -> f32,
    join: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut lanes = [start; 16];
    let mut chunks = values.chunks_exact(16);
    for chunk in &mut chunks {
        lanes
            .iter_mut()
            .zip(chunk)
            .for_each(|(l, &v)| *l = join(*l, map(v)));
    }
    let lanes = lanes.into_iter().fold(start, &join);
    chunks
        .remainder()
        .iter()
        .fold(lanes, |a, &v| join(a, map(v)))
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
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
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
    // `shifted` lies in [2²³, 2²⁴), where the floats are the integers, so its bits less
    // ROUND's are n in two's complement: 2ⁿ without a float-to-integer conversion (Rust's
    // `as i32` saturates, which does not vectorise).
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    er * f32::from_bits(n_bits.wrapping_add(127) << 23)
}
