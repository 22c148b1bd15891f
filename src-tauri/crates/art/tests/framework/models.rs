//! Model lists from every provider kind, and the Ollama doctor, against fake servers
//! over real TCP (the testkit's routers answer the list and version endpoints).

use art_testkit::framework::adapters as wire;

use art::providers::factory::builtin_entries;
use art::providers::manager::ProviderEntry;
use art::providers::models::list_models;
use art::providers::ollama::doctor::ollama_doctor;
use art::providers::options::BASE_URL;
use art::secrets::Secret;
use art_testkit::fake::scripts::{Protocol, router};
use art_testkit::fake::{FakeServer, Reply};
use art_types::{DoctorReport, FailureCode, Severity};
use serde_json::{Map, Value};
use wire::fast;

/// The built-in provider entry called `name`.
pub(crate) fn entry(name: &str) -> ProviderEntry {
    builtin_entries()
        .into_iter()
        .find(|e| e.name == name)
        .unwrap()
}

/// Options that point an entry at `base`.
pub(crate) fn at(base: String) -> Map<String, Value> {
    let mut options = Map::new();
    options.insert(BASE_URL.into(), Value::String(base));
    options
}

async fn server(protocol: Protocol) -> FakeServer {
    FakeServer::start_at(0, Some(router(protocol)), Vec::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn every_provider_kind_lists_its_chat_models_with_its_own_auth() {
    let key = Secret::new("SENTINEL-models-key");
    for (name, protocol, path, want) in [
        ("openai", Protocol::OpenAi, "/v1", "fake-model"),
        ("openrouter", Protocol::OpenAi, "/api/v1", "fake-model"),
        ("anthropic", Protocol::Anthropic, "/v1", "fake-model"),
        ("gemini", Protocol::Gemini, "/v1beta", "fake-model"),
        ("ollama", Protocol::Ollama, "", "fake-model:latest"),
    ] {
        let server = server(protocol).await;
        let models = list_models(
            &entry(name),
            &at(format!("{}{path}", server.url())),
            Some(&key),
            &fast(),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        // Gemini's embedding-only model is left out: it cannot chat.
        assert_eq!(ids, [want], "{name}");
        let request = &server.requests()[0];
        let auth = match protocol {
            Protocol::OpenAi => request.header("authorization").map(str::to_owned),
            Protocol::Anthropic => request.header("x-api-key").map(str::to_owned),
            Protocol::Gemini => request.header("x-goog-api-key").map(str::to_owned),
            Protocol::Ollama => Some("no key".into()),
        };
        assert!(
            auth.is_some_and(|a| a.contains("SENTINEL") || a == "no key"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_missing_key_is_a_typed_error_naming_the_provider() {
    let err = list_models(
        &entry("anthropic"),
        &at("http://127.0.0.1:9".into()),
        None,
        &fast(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, FailureCode::ApiKeyMissing);
    assert!(err.message.contains("anthropic"));
}

fn codes(report: &DoctorReport) -> Vec<(&str, Severity)> {
    report
        .findings
        .iter()
        .map(|f| (f.code.as_str(), f.severity))
        .collect()
}

#[tokio::test]
async fn the_doctor_finds_a_running_ollama_and_says_what_a_model_needs() {
    let server = server(Protocol::Ollama).await;
    let report = ollama_doctor(
        &format!("{}/v1/", server.url()),
        Some("fake-model"),
        &fast(),
    )
    .await;
    assert_eq!(report.version.as_deref(), Some("0.12.0-fake"));
    assert_eq!(report.base_url, server.url());
    assert_eq!(
        codes(&report),
        [
            ("OLLAMA_V1_SUFFIX", Severity::Warning),
            ("OLLAMA_RUNNING", Severity::Ok),
            ("MODEL_NOT_LOADED", Severity::Warning)
        ]
    );
    assert!(report.ready());
    let fix = report.findings[0].fix.as_deref().unwrap();
    assert!(fix.contains(&server.url()), "{fix}");

    let report = ollama_doctor(&server.url(), Some("llama9"), &fast()).await;
    let missing = report.findings.last().unwrap();
    assert_eq!(
        (missing.code.as_str(), missing.severity),
        ("MODEL_NOT_PULLED", Severity::Error)
    );
    assert_eq!(missing.fix.as_deref(), Some("Run `ollama pull llama9`."));
    assert!(!report.ready());
}

#[tokio::test]
async fn the_doctor_tells_not_running_from_not_ollama() {
    let closed = FakeServer::start(vec![]).await;
    let url = closed.url();
    drop(closed);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let report = ollama_doctor(&url, None, &fast()).await;
    assert_eq!(codes(&report), [("OLLAMA_NOT_RUNNING", Severity::Error)]);
    assert!(
        report.findings[0]
            .fix
            .as_deref()
            .unwrap()
            .contains("ollama serve")
    );

    let other = FakeServer::start(vec![Reply::error(404, "404 page not found")]).await;
    let report = ollama_doctor(&other.url(), None, &fast()).await;
    assert_eq!(codes(&report), [("NOT_OLLAMA", Severity::Error)]);
    assert!(report.findings[0].fix.as_deref().unwrap().contains("11434"));
}
