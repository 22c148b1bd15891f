//! What an Ollama server holds, and how Ollama names things: its installed models
//! (`/api/tags`, marked loaded from `/api/ps`), and the native root of a base URL (no
//! `/v1`). Whether a name means an installed model is `art_types::models::same_model`.

use art_types::ModelInfo;
use serde_json::Value;

use crate::providers::http::{self, HttpOptions, entries, get_json, text};
use crate::reasoning::provider::ProviderError;

/// Ollama's installed models (`/api/tags`), marked `loaded` from `/api/ps`.
pub(crate) async fn installed(
    client: &reqwest::Client,
    options: &HttpOptions,
    base: &str,
) -> Result<Vec<ModelInfo>, ProviderError> {
    let base = root(base);
    let tags = get_json(client, options, &http::join(&base, "api/tags"), &[]).await?;
    // Loaded models are a nicety: a failing /api/ps does not hide the installed ones.
    let loaded: Vec<String> =
        match get_json(client, options, &http::join(&base, "api/ps"), &[]).await {
            Ok(ps) => entries(&ps, "models")
                .filter_map(|m| text(m, "name"))
                .collect(),
            Err(_) => Vec::new(),
        };
    Ok(entries(&tags, "models")
        .map(|m| {
            let id = text(m, "name").unwrap_or_default();
            ModelInfo {
                loaded: loaded.contains(&id),
                size_bytes: m.get("size").and_then(Value::as_u64),
                display_name: None,
                id,
            }
        })
        .collect())
}

/// Ollama's native root: no trailing slash and no `/v1` suffix.
pub(crate) fn root(base: &str) -> String {
    base.trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::models::same_model;

    #[test]
    fn model_names_match_with_or_without_the_latest_tag() {
        assert!(same_model("llama3.2:latest", "llama3.2"));
        assert!(same_model("qwen3:8b", "qwen3:8b"));
        assert!(!same_model("qwen3:8b", "qwen3"));
        assert_eq!(root("http://h:11434/v1/"), "http://h:11434");
    }
}
