//! What the Ollama server says about a model: its capabilities (`/api/show`), and how
//! large a prompt it will take for it: the window of the model
//! as loaded (`/api/ps` → `context_length`), else the `num_ctx` its Modelfile sets
//! (`/api/show` → `parameters`), else the length it was trained for (`/api/show` →
//! `model_info["<architecture>.context_length"]`).

use std::time::Duration;

use art_types::models::{Capability, same_model};
use serde_json::{Value, json};

use crate::providers::http;

/// Longest wait for either question: the answer is a nicety, a run must not hang on it.
const ASK_TIMEOUT: Duration = Duration::from_secs(3);

/// The server could not be asked (not reachable, timed out): ask again next time.
pub(super) struct Unreachable;

/// Ask the server at `base` about `model`. A definite answer — a number, or none
/// because the server does not know (an older Ollama, an unknown model) — is `Ok`.
pub(super) async fn ask(
    client: &reqwest::Client,
    base: &str,
    model: &str,
) -> Result<Option<u64>, Unreachable> {
    let ps = client
        .get(http::join(base, "api/ps"))
        .timeout(ASK_TIMEOUT)
        .send()
        .await
        .map_err(|_| Unreachable)?;
    if let Ok(answer) = ps.json::<Value>().await
        && let Some(window) = loaded(&answer, model)
    {
        return Ok(Some(window));
    }
    Ok(show(client, base, model).await?.and_then(|a| shown(&a)))
}

/// `/api/show`'s answer about `model`; `None` when the server does not know it (or
/// answers something else).
async fn show(
    client: &reqwest::Client,
    base: &str,
    model: &str,
) -> Result<Option<Value>, Unreachable> {
    let show = client
        .post(http::join(base, "api/show"))
        .timeout(ASK_TIMEOUT)
        .json(&json!({ "model": model }))
        .send()
        .await
        .map_err(|_| Unreachable)?;
    if !show.status().is_success() {
        return Ok(None);
    }
    Ok(show.json::<Value>().await.ok())
}

/// What `model` can do, as `/api/show` lists it (`completion`, `tools`, `vision`, …);
/// `None` from a server that does not say (older than 0.6.4) or does not know the model.
pub(super) async fn capabilities(
    client: &reqwest::Client,
    base: &str,
    model: &str,
) -> Result<Option<Vec<Capability>>, Unreachable> {
    Ok(show(client, base, model)
        .await?
        .and_then(|answer| listed_capabilities(&answer)))
}

/// The capabilities an `/api/show` answer lists; `None` when it lists none (a server
/// older than 0.6.4). One newer than this app reads as [`Capability::Other`].
pub(super) fn listed_capabilities(show: &Value) -> Option<Vec<Capability>> {
    show.get("capabilities")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|c| serde_json::from_value(c.clone()).ok())
                .collect()
        })
}

/// The context length the model was trained for (`model_info["<arch>.context_length"]`).
pub(super) fn trained_context_length(show: &Value) -> Option<u64> {
    show.get("model_info")?
        .as_object()?
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))?
        .1
        .as_u64()
        .filter(|n| *n > 0)
}

/// The window `model` runs with, if `/api/ps` lists it loaded and says.
fn loaded(ps: &Value, model: &str) -> Option<u64> {
    ps.get("models")?
        .as_array()?
        .iter()
        .find(|m| {
            ["name", "model"]
                .iter()
                .filter_map(|k| m.get(*k).and_then(Value::as_str))
                .any(|id| same_model(id, model))
        })?
        .get("context_length")?
        .as_u64()
        .filter(|n| *n > 0)
}

/// The Modelfile's `num_ctx`, else the trained context length, from `/api/show`.
fn shown(show: &Value) -> Option<u64> {
    let parameter = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    parameter
        .or_else(|| trained_context_length(show))
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loaded_model_says_its_window() {
        let ps = json!({ "models": [
            { "name": "other:latest", "context_length": 2048 },
            { "name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192 },
        ]});
        assert_eq!(loaded(&ps, "llama3.2"), Some(8192));
        assert_eq!(loaded(&ps, "qwen3"), None);
        // Older servers list loaded models without their window.
        assert_eq!(
            loaded(&json!({ "models": [{ "name": "llama3.2" }] }), "llama3.2"),
            None
        );
    }

    #[test]
    fn the_modelfile_num_ctx_wins_over_the_trained_length() {
        let show = json!({
            "parameters": "stop                           \"<|eot_id|>\"\nnum_ctx                        4096",
            "model_info": { "general.architecture": "llama", "llama.context_length": 131072 },
        });
        assert_eq!(shown(&show), Some(4096));
        let trained = json!({ "model_info": { "general.architecture": "qwen3", "qwen3.context_length": 40960 } });
        assert_eq!(shown(&trained), Some(40960));
        assert_eq!(shown(&json!({ "parameters": "num_ctx oops" })), None);
        assert_eq!(shown(&json!({})), None);
    }
}
