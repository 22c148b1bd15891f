//! What each provider offers: model lists (Ollama `/api/tags` + `/api/ps`; the
//! `/models` endpoints of the OpenAI-compatible APIs, Anthropic and Gemini) and the
//! Ollama doctor, which says what is wrong with a local setup and how to fix it.

use std::time::Duration;

use art_types::{
    AdapterKind, DoctorFinding, DoctorReport, ErrorClass, FailureCode, ModelInfo, Severity,
};
use serde_json::{Map, Value};

use super::anthropic;
use super::factory::{base_url, require_key};
use super::http::{self, HttpOptions};
use super::manager::ProviderEntry;
use crate::reasoning::provider::ProviderError;
use crate::secrets::Secret;

/// GET `url` with `headers` and decode the JSON answer (errors classified as for calls).
async fn get_json(
    client: &reqwest::Client,
    options: &HttpOptions,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<Value, ProviderError> {
    let response = http::send_with_retries(options, || {
        headers
            .iter()
            .fold(client.get(url), |request, (name, value)| {
                request.header(*name, *value)
            })
    })
    .await?;
    response.json().await.map_err(|e| {
        ProviderError::new(
            ErrorClass::Permanent,
            FailureCode::UnexpectedResponse,
            format!("{url} did not answer with JSON: {e}"),
        )
    })
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Models of a provider entry with its merged `options` (base URL) and key. Sorted by id.
pub async fn list_models(
    entry: &ProviderEntry,
    options: &Map<String, Value>,
    secret: Option<&Secret>,
    http_options: &HttpOptions,
) -> Result<Vec<ModelInfo>, ProviderError> {
    let base = base_url(entry, options)?;
    let client = http::client(http_options)?;
    let mut models = match entry.kind {
        AdapterKind::Ollama => ollama_models(&client, http_options, &base).await?,
        AdapterKind::OpenAi => {
            let key = require_key(entry, secret)?;
            let bearer = format!("Bearer {}", key.expose());
            let url = http::join(&base, "models");
            let answer =
                get_json(&client, http_options, &url, &[("Authorization", &bearer)]).await?;
            entries(&answer, "data")
                .map(|m| model(text(m, "id"), text(m, "name")))
                .collect()
        }
        AdapterKind::Anthropic => {
            let key = require_key(entry, secret)?;
            let url = http::join(&base, "models?limit=1000");
            let headers = [
                ("x-api-key", key.expose()),
                ("anthropic-version", anthropic::API_VERSION),
            ];
            let answer = get_json(&client, http_options, &url, &headers).await?;
            entries(&answer, "data")
                .map(|m| model(text(m, "id"), text(m, "display_name")))
                .collect()
        }
        AdapterKind::Gemini => {
            let key = require_key(entry, secret)?;
            let url = http::join(&base, "models?pageSize=1000");
            let answer = get_json(
                &client,
                http_options,
                &url,
                &[("x-goog-api-key", key.expose())],
            )
            .await?;
            // Only models that can chat; ids without the `models/` prefix.
            entries(&answer, "models")
                .filter(|m| {
                    m.get("supportedGenerationMethods")
                        .and_then(Value::as_array)
                        .is_none_or(|methods| methods.iter().any(|x| x == "generateContent"))
                })
                .map(|m| {
                    let id = text(m, "name").map(|n| n.trim_start_matches("models/").to_owned());
                    model(id, text(m, "displayName"))
                })
                .collect()
        }
    };
    models.retain(|m: &ModelInfo| !m.id.is_empty());
    models.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(models)
}

fn entries<'a>(answer: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    answer
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn model(id: Option<String>, display_name: Option<String>) -> ModelInfo {
    ModelInfo {
        id: id.unwrap_or_default(),
        display_name,
        size_bytes: None,
        loaded: false,
    }
}

/// Ollama's installed models (`/api/tags`), marked `loaded` from `/api/ps`.
async fn ollama_models(
    client: &reqwest::Client,
    options: &HttpOptions,
    base: &str,
) -> Result<Vec<ModelInfo>, ProviderError> {
    let base = ollama_root(base);
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
fn ollama_root(base: &str) -> String {
    base.trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_owned()
}

fn finding(code: &str, severity: Severity, message: String, fix: Option<String>) -> DoctorFinding {
    DoctorFinding {
        code: code.into(),
        severity,
        message,
        fix,
    }
}

/// Whether `wanted` names the installed `id` (`llama3.2` is `llama3.2:latest`).
pub(crate) fn same_model(id: &str, wanted: &str) -> bool {
    id == wanted || id.strip_suffix(":latest") == Some(wanted)
}

/// Check a local Ollama: reachable, really Ollama (version), base URL without `/v1`,
/// models installed, and — for `model` — pulled and loaded. Never fails: problems are
/// findings with a fix.
pub async fn ollama_doctor(
    base_url: &str,
    model: Option<&str>,
    http_options: &HttpOptions,
) -> DoctorReport {
    let trimmed = base_url.trim().trim_end_matches('/');
    let root = ollama_root(trimmed);
    let mut report = DoctorReport {
        base_url: root.clone(),
        version: None,
        models: Vec::new(),
        findings: Vec::new(),
    };
    if trimmed != root {
        report.findings.push(finding(
            "OLLAMA_V1_SUFFIX",
            Severity::Warning,
            format!("The base URL {trimmed} ends in /v1, Ollama's OpenAI-compatible endpoint; ART Workbench uses the native API at {root}."),
            Some(format!("Set the base URL to {root}.")),
        ));
    }
    // A doctor answers quickly: no retries, short timeouts.
    let quick = HttpOptions {
        max_retries: 0,
        connect_timeout: Duration::from_secs(3),
        ..*http_options
    };
    let client = match http::client(&quick) {
        Ok(c) => c,
        Err(e) => {
            report
                .findings
                .push(finding("HTTP_CLIENT", Severity::Error, e.message, None));
            return report;
        }
    };
    let version = get_json(&client, &quick, &http::join(&root, "api/version"), &[]).await;
    match version {
        Ok(v) if v.get("version").is_some() => {
            let version = text(&v, "version").unwrap_or_default();
            report.findings.push(finding(
                "OLLAMA_RUNNING",
                Severity::Ok,
                format!("Ollama {version} is running at {root}."),
                None,
            ));
            report.version = Some(version);
        }
        Ok(_)
        | Err(ProviderError {
            class: ErrorClass::Permanent,
            ..
        }) => {
            report.findings.push(finding(
                "NOT_OLLAMA",
                Severity::Error,
                format!("Something answered at {root}, but it is not Ollama."),
                Some(
                    "Check the port: Ollama listens on 11434 unless OLLAMA_HOST says otherwise."
                        .into(),
                ),
            ));
            return report;
        }
        Err(e) => {
            let local = ["://127.0.0.1", "://localhost", "://[::1]"]
                .iter()
                .any(|h| root.contains(h));
            let (code, fix) = if local && e.code == FailureCode::ConnectionFailed {
                (
                    "OLLAMA_NOT_RUNNING",
                    "Start Ollama with `ollama serve` (or open the Ollama app), or correct the port in the base URL.",
                )
            } else {
                (
                    "OLLAMA_UNREACHABLE",
                    "Check the host and port in the base URL, and that Ollama on that machine listens beyond localhost (OLLAMA_HOST=0.0.0.0).",
                )
            };
            report.findings.push(finding(
                code,
                Severity::Error,
                format!("Ollama is not reachable at {root}: {}", e.message),
                Some(fix.into()),
            ));
            return report;
        }
    }
    match ollama_models(&client, &quick, &root).await {
        Ok(models) => report.models = models,
        Err(e) => report.findings.push(finding(
            "MODEL_LIST_FAILED",
            Severity::Warning,
            e.message,
            None,
        )),
    }
    if report.models.is_empty() {
        report.findings.push(finding(
            "NO_MODELS",
            Severity::Warning,
            "Ollama has no models installed yet.".into(),
            Some("Pull one, e.g. `ollama pull llama3.2`.".into()),
        ));
    }
    if let Some(wanted) = model.map(str::trim).filter(|m| !m.is_empty()) {
        let found = report.models.iter().find(|m| same_model(&m.id, wanted));
        report.findings.push(match found {
            None => finding(
                "MODEL_NOT_PULLED",
                Severity::Error,
                format!("The model {wanted} is not installed."),
                Some(format!("Run `ollama pull {wanted}`.")),
            ),
            Some(m) if m.loaded => finding(
                "MODEL_LOADED",
                Severity::Ok,
                format!("{} is loaded and ready.", m.id),
                None,
            ),
            Some(m) => finding(
                "MODEL_NOT_LOADED",
                Severity::Warning,
                format!(
                    "{} is installed but not loaded: the first answer waits while Ollama loads it.",
                    m.id
                ),
                None,
            ),
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_match_with_or_without_the_latest_tag() {
        assert!(same_model("llama3.2:latest", "llama3.2"));
        assert!(same_model("qwen3:8b", "qwen3:8b"));
        assert!(!same_model("qwen3:8b", "qwen3"));
        assert_eq!(ollama_root("http://h:11434/v1/"), "http://h:11434");
    }
}
