//! Embeddings from a provider, for a knowledge collection that uses one rather than the
//! built-in model: Ollama's `/api/embed`, the OpenAI-compatible `/embeddings`, Gemini's
//! `batchEmbedContents`. Each answer is checked (one vector per text, all of one length,
//! finite numbers) and every vector scaled to length 1, so that a dot product is the
//! cosine whatever the provider returns.

use art_types::{AdapterKind, ErrorClass, FailureCode};
use serde_json::{Map, Value, json};

use super::http::{self, HttpOptions, entries, send_with_retries};
use super::manager::ProviderEntry;
use super::options::{base_url, require_key};
use crate::reasoning::provider::ProviderError;
use crate::secrets::Secret;

/// Texts sent in one request: Gemini takes at most 100 per batch, OpenAI 2,048 inputs,
/// Ollama any number; 64 keeps each request small enough to retry cheaply.
pub const TEXTS_PER_REQUEST: usize = 64;

/// One unit vector per text of `texts`, in order, from `model` of the provider `entry`
/// (with its merged `options` and key).
pub async fn embed(
    entry: &ProviderEntry,
    options: &Map<String, Value>,
    secret: Option<&Secret>,
    http_options: &HttpOptions,
    model: &str,
    texts: &[&str],
) -> Result<Vec<Vec<f32>>, ProviderError> {
    let base = base_url(entry, options)?;
    let name = format!("models/{}", model.trim_start_matches("models/"));
    // Where to ask, with which key, and where the answer keeps its vectors.
    let (url, headers, answer_key): (String, Vec<(&str, String)>, &str) = match entry.kind {
        AdapterKind::Ollama => (http::join(&base, "api/embed"), Vec::new(), "embeddings"),
        AdapterKind::OpenAi => (
            http::join(&base, "embeddings"),
            vec![(
                "Authorization",
                format!("Bearer {}", require_key(entry, secret)?.expose()),
            )],
            "data",
        ),
        AdapterKind::Gemini => (
            http::join(&base, &format!("{name}:batchEmbedContents")),
            vec![(
                "x-goog-api-key",
                require_key(entry, secret)?.expose().to_owned(),
            )],
            "embeddings",
        ),
        AdapterKind::Anthropic => {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                FailureCode::InvalidModel,
                format!(
                    "{} offers no embeddings: choose another provider's model or the built-in one",
                    entry.name
                ),
            ));
        }
    };
    let client = http::client(http_options)?;
    let mut vectors = Vec::with_capacity(texts.len());
    for batch in texts.chunks(TEXTS_PER_REQUEST) {
        let body = match entry.kind {
            AdapterKind::OpenAi => {
                json!({ "model": model, "input": batch, "encoding_format": "float" })
            }
            AdapterKind::Gemini => {
                let requests: Vec<Value> = batch
                    .iter()
                    .map(|t| json!({ "model": name, "content": { "parts": [{ "text": t }] } }))
                    .collect();
                json!({ "requests": requests })
            }
            _ => json!({ "model": model, "input": batch }),
        };
        let response = send_with_retries(http_options, || {
            headers
                .iter()
                .fold(client.post(&url).json(&body), |request, (name, value)| {
                    request.header(*name, value)
                })
        })
        .await?;
        let answer: Value = response
            .json()
            .await
            .map_err(|e| unexpected(format!("{url} did not answer with JSON: {e}")))?;
        let mut got = read_vectors(&answer, answer_key, entry.kind)
            .ok_or_else(|| unexpected(format!("{url} answered without {answer_key}")))?;
        if got.len() != batch.len() {
            return Err(unexpected(format!(
                "{url} gave {} vectors for {} texts",
                got.len(),
                batch.len()
            )));
        }
        vectors.append(&mut got);
    }
    let dimension = vectors.first().map_or(0, Vec::len);
    for vector in &mut vectors {
        if vector.len() != dimension || dimension == 0 {
            return Err(unexpected(format!(
                "{model} gave vectors of {} and {} numbers",
                dimension,
                vector.len()
            )));
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() || norm == 0.0 {
            return Err(unexpected(format!("{model} gave a vector of no length")));
        }
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    Ok(vectors)
}

/// The vectors of an answer, in the order of the texts (OpenAI's carry their index).
fn read_vectors(answer: &Value, key: &str, kind: AdapterKind) -> Option<Vec<Vec<f32>>> {
    let numbers = |v: &Value| -> Option<Vec<f32>> {
        v.as_array()?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect()
    };
    answer.get(key)?.as_array()?;
    match kind {
        AdapterKind::OpenAi => {
            let mut indexed: Vec<(u64, Vec<f32>)> = entries(answer, key)
                .map(|item| Some((item["index"].as_u64()?, numbers(&item["embedding"])?)))
                .collect::<Option<_>>()?;
            indexed.sort_by_key(|(index, _)| *index);
            Some(indexed.into_iter().map(|(_, v)| v).collect())
        }
        AdapterKind::Gemini => entries(answer, key)
            .map(|item| numbers(&item["values"]))
            .collect(),
        _ => entries(answer, key).map(numbers).collect(),
    }
}

fn unexpected(message: String) -> ProviderError {
    ProviderError::new(
        ErrorClass::Permanent,
        FailureCode::UnexpectedResponse,
        message,
    )
}
