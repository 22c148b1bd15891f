//! The steps between the packed encoder's matrix products, each one pass in place over
//! the product it follows, its rows shared between the cores: a dense layer's bias added
//! (then GELU, for the feed-forward layer), or its bias and the residual added and the sum
//! normalised. candle's own steps would each allocate a
//! tensor and read and write all of it again — a bias, a residual, a norm, an activation:
//! four passes where this makes one (measured with `perf`: a tenth of the time of
//! embedding a book went to those passes and their allocations).

use candle_core::{CpuStorage, InplaceOp1, InplaceOp2, Layout};
use rayon::prelude::*;

use art_kernels::ops::{Norm, add_and_normalise, add_bias};

/// Rows a core takes at a time.
const ROWS_A_TASK: usize = 16;

/// `storage`'s floats where `layout` says they are (a tensor made by a product: contiguous).
fn floats<'a>(
    storage: &'a CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a [f32]> {
    let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets())
    else {
        candle_core::bail!("{op}: contiguous f32 only");
    };
    Ok(&values[start..end])
}

/// As [`floats`], to change.
fn floats_mut<'a>(
    storage: &'a mut CpuStorage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a mut [f32]> {
    let (CpuStorage::F32(values), Some((start, end))) = (storage, layout.contiguous_offsets())
    else {
        candle_core::bail!("{op}: contiguous f32 only");
    };
    Ok(&mut values[start..end])
}

/// `y ← y + bias` row by row, then GELU if `gelu`.
pub struct AddBias<'a> {
    pub bias: &'a [f32],
    pub gelu: bool,
}

impl InplaceOp1 for AddBias<'_> {
    fn name(&self) -> &'static str {
        "add-bias"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let y = floats_mut(storage, layout, self.name())?;
        let width = self.bias.len();
        if width == 0 || !y.len().is_multiple_of(width) {
            candle_core::bail!("add-bias: rows of {} do not fit {} values", width, y.len());
        }
        y.par_chunks_mut(width * ROWS_A_TASK)
            .for_each(|rows| add_bias(rows, self.bias, self.gelu));
        Ok(())
    }
}

/// `y ← norm(y + residual + bias)` row by row: a dense layer's output joining the stream.
pub struct AddNorm<'a> {
    pub bias: &'a [f32],
    pub norm: &'a Norm,
}

impl InplaceOp2 for AddNorm<'_> {
    fn name(&self) -> &'static str {
        "add-norm"
    }

    fn cpu_fwd(
        &self,
        storage: &mut CpuStorage,
        layout: &Layout,
        residual: &CpuStorage,
        residual_layout: &Layout,
    ) -> candle_core::Result<()> {
        let y = floats_mut(storage, layout, self.name())?;
        let residual = floats(residual, residual_layout, self.name())?;
        let width = self.norm.weight.len();
        if residual.len() != y.len() || self.bias.len() != width || !y.len().is_multiple_of(width) {
            candle_core::bail!("add-norm: shapes do not agree");
        }
        y.par_chunks_mut(width * ROWS_A_TASK)
            .zip(residual.par_chunks(width * ROWS_A_TASK))
            .for_each(|(rows, residual)| {
                add_and_normalise(rows, Some(residual), Some(self.bias), self.norm);
            });
        Ok(())
    }
}

/// `y ← norm(y)` row by row (the embeddings' sum).
pub struct Normalise<'a>(pub &'a Norm);

impl InplaceOp1 for Normalise<'_> {
    fn name(&self) -> &'static str {
        "normalise"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let y = floats_mut(storage, layout, self.name())?;
        let width = self.0.weight.len();
        if width == 0 || !y.len().is_multiple_of(width) {
            candle_core::bail!("normalise: rows of {} do not fit {} values", width, y.len());
        }
        y.par_chunks_mut(width * ROWS_A_TASK)
            .for_each(|rows| add_and_normalise(rows, None, None, self.0));
        Ok(())
    }
}
