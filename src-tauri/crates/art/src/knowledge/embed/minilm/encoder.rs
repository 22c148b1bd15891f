//! The model's encoder (a BERT), written for embedding passages on the CPU rather than
//! taken from `candle-transformers`: the texts of a batch are packed one after another
//! instead of padded to the longest, so the dense layers (nearly all the arithmetic) run
//! as one large matrix product over real tokens only; attention runs per text on both
//! cores, with no mask to add; what follows each product (bias, residual, layer norm,
//! GELU, softmax) is one pass in place over it ([`fused`]). The same results as the reference BERT
//! (`minilm::tests::the_packed_encoder_gives_the_reference_berts_vectors`).

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use rayon::prelude::*;
use serde::Deserialize;

mod fused;
mod short;

use art_kernels::attention;
use art_kernels::dense::Strips;
use art_kernels::ops::Norm;
use fused::{AddBias, AddNorm, Normalise};
use short::Floats;

pub use short::SHORT_TOKENS;

/// What the encoder reads of the model's `config.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    type_vocab_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_act")]
    hidden_act: String,
}

fn default_type_vocab() -> usize {
    2
}

fn default_eps() -> f64 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

/// A dense layer, its weight kept transposed (`in × out`) for the product (gemm reads the
/// model's own `out × in` through strides, but packs it afresh on every call: measured
/// slower), and again in column strips for the short path. The bias is added by the step
/// after the product.
struct Dense {
    weight: Tensor,
    bias: Vec<f32>,
    /// The weight in the short path's order ([`Strips`]); `None` where the outputs are
    /// not a whole number of strips.
    strips: Option<Strips>,
}

impl Dense {
    fn new(weight: Tensor, bias: Tensor) -> candle_core::Result<Self> {
        Ok(Self {
            strips: short::strips_of(&weight)?,
            weight,
            bias: bias.to_vec1()?,
        })
    }

    fn load(vb: &VarBuilder, inputs: usize, outputs: usize) -> candle_core::Result<Self> {
        let (weight, bias) = Self::tensors(vb, inputs, outputs)?;
        Self::new(weight, bias)
    }

    /// A layer's weight (transposed) and bias as stored, not yet a layer.
    fn tensors(
        vb: &VarBuilder,
        inputs: usize,
        outputs: usize,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        Ok((
            vb.get((outputs, inputs), "weight")?.t()?.contiguous()?,
            vb.get(outputs, "bias")?,
        ))
    }

    /// Several dense layers over the same input as one (query, key and value).
    fn joined(parts: &[(Tensor, Tensor)]) -> candle_core::Result<Self> {
        let weights: Vec<&Tensor> = parts.iter().map(|(w, _)| w).collect();
        let biases: Vec<&Tensor> = parts.iter().map(|(_, b)| b).collect();
        Self::new(Tensor::cat(&weights, 1)?, Tensor::cat(&biases, 0)?)
    }

    /// `x` (`tokens × in`) → `x · weight` (`tokens × out`), the bias not yet added.
    fn product(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.matmul(&self.weight)
    }
}

/// A layer normalisation's scale and shift read from the weights.
fn load_norm(vb: &VarBuilder, size: usize, eps: f64) -> candle_core::Result<Norm> {
    // Older checkpoints name them gamma and beta.
    let (weight, bias) = if vb.contains_tensor("weight") {
        ("weight", "bias")
    } else {
        ("gamma", "beta")
    };
    Ok(Norm {
        weight: vb.get(size, weight)?.to_vec1()?,
        bias: vb.get(size, bias)?.to_vec1()?,
        eps: eps as f32,
    })
}

/// One transformer layer.
struct Layer {
    query_key_value: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// The encoder, loaded.
pub struct Encoder {
    words: Tensor,
    positions: Tensor,
    /// Token type 0's embedding (every token of a single text is of type 0).
    token_type: Tensor,
    embeddings_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    max_tokens: usize,
    device: Device,
}

impl Encoder {
    /// Load it from the model's weights (with or without their `bert.` prefix).
    pub fn load(vb: VarBuilder, config: &Config) -> candle_core::Result<Self> {
        if config.hidden_act != "gelu" {
            candle_core::bail!("activation {} is not supported", config.hidden_act);
        }
        if config.num_attention_heads == 0
            || config.hidden_size != config.num_attention_heads * attention::HEAD
        {
            candle_core::bail!(
                "{} dimensions in {} heads: the encoder's attention takes heads of {}",
                config.hidden_size,
                config.num_attention_heads,
                attention::HEAD
            );
        }
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let (hidden, eps) = (config.hidden_size, config.layer_norm_eps);
        let embeddings = vb.pp("embeddings");
        let token_types = embeddings.get(
            (config.type_vocab_size, hidden),
            "token_type_embeddings.weight",
        )?;
        // Attention's scores are the queries' dot products with the keys scaled by
        // 1/√(head size): the queries' weights and bias are scaled once here instead.
        let scale = 1.0 / ((hidden / config.num_attention_heads) as f64).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let layer = vb.pp(format!("encoder.layer.{i}"));
            let attention = layer.pp("attention");
            let projection =
                |name: &str| Dense::tensors(&attention.pp("self").pp(name), hidden, hidden);
            let (query, query_bias) = projection("query")?;
            layers.push(Layer {
                query_key_value: Dense::joined(&[
                    (query.affine(scale, 0.0)?, query_bias.affine(scale, 0.0)?),
                    projection("key")?,
                    projection("value")?,
                ])?,
                attention_out: Dense::load(&attention.pp("output.dense"), hidden, hidden)?,
                attention_norm: load_norm(&attention.pp("output.LayerNorm"), hidden, eps)?,
                intermediate: Dense::load(
                    &layer.pp("intermediate.dense"),
                    hidden,
                    config.intermediate_size,
                )?,
                output: Dense::load(&layer.pp("output.dense"), config.intermediate_size, hidden)?,
                output_norm: load_norm(&layer.pp("output.LayerNorm"), hidden, eps)?,
            });
        }
        Ok(Self {
            words: embeddings.get((config.vocab_size, hidden), "word_embeddings.weight")?,
            positions: embeddings.get(
                (config.max_position_embeddings, hidden),
                "position_embeddings.weight",
            )?,
            token_type: token_types.get(0)?,
            embeddings_norm: load_norm(&embeddings.pp("LayerNorm"), hidden, eps)?,
            layers,
            heads: config.num_attention_heads,
            hidden,
            max_tokens: config.max_position_embeddings,
            device: vb.device().clone(),
        })
    }

    /// Each text's tokens (ids, at most the model's positions) → the mean of its last
    /// layer's token vectors (`texts × hidden`). No text may be empty.
    pub fn mean_pooled(&self, texts: &[&[u32]]) -> candle_core::Result<Tensor> {
        if let Some(bad) = texts
            .iter()
            .find(|t| t.is_empty() || t.len() > self.max_tokens)
        {
            candle_core::bail!("a text of {} tokens cannot be encoded", bad.len());
        }
        let ids: Vec<u32> = texts.iter().flat_map(|t| t.iter().copied()).collect();
        let positions: Vec<u32> = texts.iter().flat_map(|t| 0..t.len() as u32).collect();
        let spans: Vec<(usize, usize)> = texts
            .iter()
            .scan(0, |start, t| {
                let span = (*start, t.len());
                *start += t.len();
                Some(span)
            })
            .collect();
        let count = ids.len();
        let ids = Tensor::from_vec(ids, count, &self.device)?;
        let positions = Tensor::from_vec(positions, count, &self.device)?;
        let mut x = (self.words.index_select(&ids, 0)?
            + self.positions.index_select(&positions, 0)?)?
        .broadcast_add(&self.token_type)?;
        x.inplace_op1(&Normalise(&self.embeddings_norm))?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &spans)?;
        }
        let means = spans
            .iter()
            .map(|&(start, len)| x.narrow(0, start, len)?.mean_keepdim(0))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Tensor::cat(&means, 0)
    }

    fn layer(
        &self,
        layer: &Layer,
        x: &Tensor,
        spans: &[(usize, usize)],
    ) -> candle_core::Result<Tensor> {
        // Each product is a tensor of its own, changed in place by the step after it.
        let qkv = layer.query_key_value.product(x)?;
        qkv.inplace_op1(&AddBias {
            bias: &layer.query_key_value.bias,
            gelu: false,
        })?;
        let attended = self.attention(&qkv, spans)?;
        let y = layer.attention_out.product(&attended)?;
        y.inplace_op2(
            x,
            &AddNorm {
                bias: &layer.attention_out.bias,
                norm: &layer.attention_norm,
            },
        )?;
        let inner = layer.intermediate.product(&y)?;
        inner.inplace_op1(&AddBias {
            bias: &layer.intermediate.bias,
            gelu: true,
        })?;
        let out = layer.output.product(&inner)?;
        out.inplace_op2(
            &y,
            &AddNorm {
                bias: &layer.output.bias,
                norm: &layer.output_norm,
            },
        )?;
        Ok(out)
    }

    /// Self-attention over each text's tokens (`qkv`: `tokens × 3·hidden`, queries
    /// scaled) → `tokens × hidden`, a text to a core at a time.
    fn attention(&self, qkv: &Tensor, spans: &[(usize, usize)]) -> candle_core::Result<Tensor> {
        let hidden = self.hidden;
        let floats = Floats::of(qkv)?;
        let qkv = floats.get()?;
        let tokens = qkv.len() / (3 * hidden);
        let mut attended = vec![0f32; tokens * hidden];
        let mut regions = Vec::with_capacity(spans.len());
        let mut rest = attended.as_mut_slice();
        for &(start, len) in spans {
            let (region, tail) = rest.split_at_mut(len * hidden);
            let Some(rows) = qkv.get(start * 3 * hidden..(start + len) * 3 * hidden) else {
                candle_core::bail!("attention: a text runs past the batch");
            };
            regions.push((rows, region));
            rest = tail;
        }
        regions
            .into_par_iter()
            .for_each(|(rows, region)| attention::attend(rows, region, hidden));
        drop(floats);
        Tensor::from_vec(attended, (tokens, hidden), &self.device)
    }
}

#[cfg(test)]
mod tests;
