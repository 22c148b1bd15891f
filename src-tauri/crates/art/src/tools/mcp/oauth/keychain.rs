//! A server's sign-in, kept in the OS keychain as one entry (`mcp:<server>:oauth`): the
//! server's address it is for (a server given another address, or another data
//! directory's server of the same name elsewhere, is not signed in by it), the
//! tokens with the client id they were issued to and the issuer that issued them, the
//! client secret a registration gave (if any), and the authorization server's metadata
//! (so that a restart renews a token without discovering the server again). The SDK
//! reads and writes the tokens through [`CredentialStore`]; it checks the stored
//! issuer against the server's before using them (credentials are keyed by issuer).

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::secrets::{Secret, SecretError, SecretStore};

/// The keychain entry of `server`'s sign-in.
pub(crate) fn account(server: &str) -> String {
    format!("mcp:{server}:oauth")
}

/// The keychain entry of the client secret the user gave for `server` (a header name
/// cannot hold `:`, so no header's entry is named so).
pub(crate) fn client_secret_account(server: &str) -> String {
    format!("mcp:{server}:oauth:client-secret")
}

/// What the entry holds.
#[derive(Default, Serialize, Deserialize)]
pub(super) struct Saved {
    /// The server's address the sign-in is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The tokens, client id and issuer, as the SDK stores them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// The authorization server's metadata found at sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AuthorizationMetadata>,
    /// A scope the server asked for beyond those granted (a 403's
    /// `insufficient_scope`), for the next sign-in to ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_scope: Option<String>,
    /// A client secret the registration gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// `server`'s sign-in entry in `secrets`.
#[derive(Clone)]
pub(crate) struct Keychain {
    secrets: Arc<dyn SecretStore>,
    account: String,
}

impl Keychain {
    pub fn new(secrets: Arc<dyn SecretStore>, server: &str) -> Self {
        Self {
            secrets,
            account: account(server),
        }
    }

    /// The entry when it is for the server at `url` (empty when there is none, or it
    /// is another server's).
    pub async fn read_for(&self, url: &str) -> Result<Saved, AuthError> {
        let saved = self.read().await?;
        if saved.url.as_deref() == Some(url) {
            Ok(saved)
        } else {
            Ok(Saved::default())
        }
    }

    /// The entry (empty when there is none).
    pub async fn read(&self) -> Result<Saved, AuthError> {
        self.read_or_why().await.map_err(store_error)
    }

    /// The entry for the server at `url`, or the keychain's own error, so a caller can
    /// tell a keychain that is not there ([`SecretError::Unavailable`]: nothing can be
    /// signed in to, nothing is) from one that failed.
    pub async fn read_for_or_why(&self, url: &str) -> Result<Saved, SecretError> {
        let saved = self.read_or_why().await?;
        Ok(if saved.url.as_deref() == Some(url) {
            saved
        } else {
            Saved::default()
        })
    }

    async fn read_or_why(&self) -> Result<Saved, SecretError> {
        let this = self.clone();
        let text = tokio::task::spawn_blocking(move || this.secrets.get(&this.account))
            .await
            .map_err(|e| SecretError::Backend(e.to_string()))??;
        match text {
            None => Ok(Saved::default()),
            // An entry this version cannot read is as good as none: the user signs in
            // again rather than being stuck.
            Some(text) => Ok(serde_json::from_str(text.expose()).unwrap_or_default()),
        }
    }

    /// Replace the entry.
    pub async fn write(&self, saved: &Saved) -> Result<(), AuthError> {
        let text = serde_json::to_string(saved)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        let this = self.clone();
        blocking(move || this.secrets.set(&this.account, &Secret::new(text))).await
    }

    /// Change the entry with `change`.
    pub async fn update(&self, change: impl FnOnce(&mut Saved)) -> Result<(), AuthError> {
        let mut saved = self.read().await?;
        change(&mut saved);
        self.write(&saved).await
    }

    /// Remove the entry.
    pub async fn remove(&self) -> Result<(), AuthError> {
        let this = self.clone();
        blocking(move || this.secrets.delete(&this.account)).await
    }
}

/// A keychain call, off the async threads (the Secret Service is spoken to blocking).
async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, SecretError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(call)
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
        .map_err(store_error)
}

/// The keychain's error as the SDK's credential store reports one.
fn store_error(error: SecretError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for Keychain {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read().await?.credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(|saved| saved.credentials = Some(credentials))
            .await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(|saved| saved.credentials = None).await
    }

    /// A refresh token the server refused (revoked, expired): the tokens go, the rest
    /// stays, and the server's state says to sign in again.
    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.update(|saved| {
            if let Some(credentials) = &mut saved.credentials {
                credentials.token_response = None;
            }
        })
        .await
    }
}
