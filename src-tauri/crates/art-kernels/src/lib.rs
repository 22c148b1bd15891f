//! The built-in embedder's arithmetic over plain `f32` slices, in the widest SIMD the CPU
//! has (AVX-512, AVX2 or scalar, chosen at run time by `pulp`): a dense layer over weights
//! packed in strips ([`dense`]), one text's self-attention ([`attention`]), and the
//! element-wise steps between them ([`ops`]: GELU, softmax, bias, layer normalisation).
//!
//! A crate of its own, apart from `art`, for one reason: Cargo sets optimisation per
//! crate, and these loops are written to be inlined into SIMD code (`#[inline(always)]`
//! bodies, one `pulp` call per lane operation). Unoptimised, as `art` is in debug builds,
//! every lane operation is a function call: a question took seconds to embed in the debug
//! app instead of milliseconds, and several searches queued behind each other for tens of
//! seconds. The workspace's `Cargo.toml` compiles this crate at `opt-level = 3` in every
//! profile, as it does candle's and gemm's kernels.

pub mod attention;
pub mod dense;
pub mod ops;
