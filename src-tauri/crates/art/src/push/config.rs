//! The push's settings: checked, kept (the headers in the OS keychain, one item holding
//! a JSON object of name to value; the rest in the app's settings) and put in use.

use std::sync::Arc;

use art_types::push::{PushScope, PushSettings};

use super::{Endpoint, EndpointError, TracePush};
use crate::context::validate::ConfigProblem;
use crate::instance::ArtInstance;
use crate::secrets::SecretStore;

/// The headers kept in the keychain for the push (name, value), in name order; none
/// when nothing is kept.
pub fn stored_headers(
    store: &dyn crate::secrets::SecretStore,
) -> Result<Vec<(String, String)>, crate::secrets::SecretError> {
    let Some(secret) = store.get(art_types::push::HEADERS_ACCOUNT)? else {
        return Ok(Vec::new());
    };
    let map: std::collections::BTreeMap<String, String> =
        serde_json::from_str(secret.expose()).unwrap_or_default();
    Ok(map.into_iter().collect())
}

/// Keep `headers` in the keychain for the push (none: remove them).
pub fn store_headers(
    store: &dyn crate::secrets::SecretStore,
    headers: &[(String, String)],
) -> Result<(), crate::secrets::SecretError> {
    if headers.is_empty() {
        return store.delete(art_types::push::HEADERS_ACCOUNT);
    }
    let map: std::collections::BTreeMap<&str, &str> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let json = serde_json::to_string(&map).unwrap_or_default();
    store.set(
        art_types::push::HEADERS_ACCOUNT,
        &crate::secrets::Secret::new(json),
    )
}

/// Least spans a queue may be limited to (one long run's worth).
pub const MIN_QUEUE_LIMIT: u64 = 1_000;

/// Every problem of `settings` with `headers`, each naming its field as the form knows
/// it (`endpoint`, `headers`, `queueLimit`, `scope`); none when they can be used.
pub fn check(settings: &PushSettings, headers: &[(String, String)]) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    let problem = |field: &str, message: String| ConfigProblem {
        field: field.to_owned(),
        message,
    };
    if settings.enabled || !settings.endpoint.trim().is_empty() {
        match Endpoint::new(&settings.endpoint, &[], settings.encoding) {
            Err(EndpointError::Url(_)) if settings.endpoint.trim().is_empty() => {
                problems.push(problem(
                    "endpoint",
                    "say where to send: the collector's OTLP/HTTP address".into(),
                ))
            }
            Err(e) => problems.push(problem("endpoint", e.to_string())),
            Ok(_) => {}
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, value) in headers {
        let lower = name.trim().to_ascii_lowercase();
        if let Err(e) = Endpoint::new(
            "http://h",
            &[(name.clone(), value.clone())],
            settings.encoding,
        ) {
            problems.push(problem("headers", e.to_string()));
        } else if !seen.insert(lower) {
            problems.push(problem(
                "headers",
                format!("the header {name:?} is given twice"),
            ));
        }
    }
    if settings.queue_limit < MIN_QUEUE_LIMIT {
        problems.push(problem(
            "queueLimit",
            format!("keep at least {MIN_QUEUE_LIMIT} spans while the collector is away"),
        ));
    }
    if let PushScope::Threads { ids } = &settings.scope
        && ids.is_empty()
        && settings.enabled
    {
        problems.push(problem(
            "scope",
            "choose the threads to send, or send every thread's".into(),
        ));
    }
    problems
}

/// Check `settings` and `headers` (`None`: those kept), keep the headers in the keychain
/// and the settings in the app's, and use them from now on; returns the settings as
/// saved. Nothing is saved when there is a problem.
pub async fn save(
    art: &ArtInstance,
    store: Arc<dyn SecretStore>,
    push: &TracePush,
    settings: PushSettings,
    headers: Option<Vec<(String, String)>>,
) -> Result<PushSettings, SaveError> {
    let reading = Arc::clone(&store);
    let headers = match headers {
        Some(given) => given
            .into_iter()
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect(),
        None => read_headers(reading).await?,
    };
    let problems = check(&settings, &headers);
    if !problems.is_empty() {
        return Err(SaveError::Invalid(problems));
    }
    let mut settings = settings;
    settings.endpoint = settings.endpoint.trim().to_owned();
    settings.header_names = headers.iter().map(|(n, _)| n.clone()).collect();
    let kept = headers.clone();
    tokio::task::spawn_blocking(move || store_headers(store.as_ref(), &kept))
        .await
        .map_err(|e| SaveError::Keychain(e.to_string()))?
        .map_err(|e| SaveError::Keychain(e.to_string()))?;
    let saved = settings.clone();
    art.settings
        .update(move |s| s.trace_push = saved.clone())
        .await
        .map_err(|e| SaveError::Storage(e.to_string()))?;
    use_settings(push, &settings, &headers)?;
    Ok(settings)
}

/// Why the push's settings were not saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Fields that cannot be used, each naming its field.
    #[error("{}", .0.iter().map(|p| format!("{}: {}", p.field, p.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<ConfigProblem>),
    /// The keychain could not keep (or give) the headers.
    #[error("the keychain: {0}")]
    Keychain(String),
    /// The settings could not be saved.
    #[error("cannot save the settings: {0}")]
    Storage(String),
}

/// Use the saved settings and the keychain's headers (at start).
pub async fn load(
    art: &ArtInstance,
    store: Arc<dyn SecretStore>,
    push: &TracePush,
) -> Result<(), SaveError> {
    let settings = art
        .settings
        .get()
        .await
        .map_err(|e| SaveError::Storage(e.to_string()))?
        .trace_push;
    let headers = if settings.header_names.is_empty() {
        Vec::new()
    } else {
        read_headers(store).await?
    };
    use_settings(push, &settings, &headers)
}

/// The headers kept in the keychain, read off the async workers.
async fn read_headers(store: Arc<dyn SecretStore>) -> Result<Vec<(String, String)>, SaveError> {
    tokio::task::spawn_blocking(move || stored_headers(store.as_ref()))
        .await
        .map_err(|e| SaveError::Keychain(e.to_string()))?
        .map_err(|e| SaveError::Keychain(e.to_string()))
}

/// Put `settings` in use; an address that cannot be used is said at its field.
fn use_settings(
    push: &TracePush,
    settings: &PushSettings,
    headers: &[(String, String)],
) -> Result<(), SaveError> {
    push.configure(settings, headers).map_err(|e| {
        SaveError::Invalid(vec![ConfigProblem {
            field: "endpoint".into(),
            message: e.to_string(),
        }])
    })
}
