//! The Ollama doctor: what is wrong with a local setup and how to fix it — reachable,
//! really Ollama, a base URL without `/v1`, models installed, the thread's model pulled
//! and loaded. Never fails: every problem is a finding with a fix.

use std::time::Duration;

use art_types::models::same_model;
use art_types::{DoctorFinding, DoctorReport, ErrorClass, FailureCode, Severity};

use super::library::{installed, root};
use crate::providers::http::{self, HttpOptions, get_json, text};
use crate::reasoning::provider::ProviderError;

fn finding(code: &str, severity: Severity, message: String, fix: Option<String>) -> DoctorFinding {
    DoctorFinding {
        code: code.into(),
        severity,
        message,
        fix,
    }
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
    let root = root(trimmed);
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
    match installed(&client, &quick, &root).await {
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
