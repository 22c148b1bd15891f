//! A provider entry's options checked before anything is sent: the base URL (the
//! [`BASE_URL`] option, http or https) and the API key of a provider that needs one.
//! A leaf: the factory that makes adapters and the model lists both use it.

use art_types::{ErrorClass, FailureCode};
use serde_json::{Map, Value};

use super::manager::ProviderEntry;
use crate::reasoning::provider::ProviderError;
use crate::secrets::Secret;

/// Adapter option naming the base URL (overrides the provider's default).
pub const BASE_URL: &str = art_types::provider::BASE_URL_OPTION;

/// The base URL of an entry's merged options, checked to be http(s).
pub fn base_url(
    entry: &ProviderEntry,
    options: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let base_url = options
        .get(BASE_URL)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ProviderError::new(
            ErrorClass::Permanent,
            FailureCode::InvalidBaseUrl,
            format!(
                "the base URL of {} must start with http:// or https://, got {base_url:?}",
                entry.name
            ),
        ));
    }
    Ok(base_url)
}

/// The key of an API provider, or the typed error naming it.
pub fn require_key(
    entry: &ProviderEntry,
    secret: Option<&Secret>,
) -> Result<Secret, ProviderError> {
    secret.cloned().ok_or_else(|| {
        ProviderError::new(
            ErrorClass::Auth,
            FailureCode::ApiKeyMissing,
            format!(
                "no API key is set for {}: set {} in the environment, or add the key under \
                 Providers in the app",
                entry.name,
                crate::secrets::env_var_name(&entry.name)
            ),
        )
    })
}
