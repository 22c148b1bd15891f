//! Secrets (API keys) live only in the OS keychain, behind the [`SecretStore`] trait.
//!
//! Invariant: a secret is never written to SQLite, logs, observations, events, exports or
//! error messages. [`Secret`] redacts itself in `Debug`/`Display` so an accidental
//! `{:?}` cannot leak it. The app never writes a key anywhere but the keychain: when it
//! cannot be reached, callers get [`SecretError::Unavailable`] with a reason and a hint.
//! [`EnvFallback`] reads `<PROVIDER>_API_KEY` environment variables the user set
//! themselves, read-only, when the keychain has no key.

mod env;
mod keychain;
mod memory;
mod scrub;

pub use env::{EnvFallback, env_var_name};
pub use keychain::KeychainStore;
pub use memory::MemoryStore;
pub use scrub::{REDACTED, scrub};

use std::sync::atomic::{AtomicU64, Ordering};

use art_types::KeychainStatus;

/// Secrets written or removed in this process so far, by any store.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// How many secrets this process has written or removed so far (through any
/// [`SecretStore`] here): what keeps something built from secrets — the export redactor
/// ([`crate::export::Redactors`]) — rebuilds it once this moved. Changes made by
/// another process (`art keys set` while the app runs) are not counted.
pub fn changes() -> u64 {
    CHANGES.load(Ordering::Acquire)
}

/// Count a write or removal (made, or tried: a failed one may have half-happened).
pub(crate) fn changed() {
    CHANGES.fetch_add(1, Ordering::AcqRel);
}

/// A secret value. Its `Debug` and `Display` never show the content.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself. Call only where it is sent to its provider.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Why a secret operation failed. Messages never contain the secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The keychain cannot be used at all (no Secret Service, locked, no D-Bus session).
    #[error("the OS keychain is unavailable: {reason}. {hint}")]
    Unavailable {
        /// What went wrong.
        reason: String,
        /// What the user can do.
        hint: String,
    },
    /// The account name is not acceptable (empty, too long, control characters).
    #[error("invalid secret name {0:?}: use 1-128 printable characters")]
    InvalidName(String),
    /// The keychain answered but the operation failed.
    #[error("keychain operation failed: {0}")]
    Backend(String),
}

/// A place to keep secrets by account name (e.g. `openai`).
pub trait SecretStore: Send + Sync {
    /// Read a secret; `Ok(None)` when none is stored under that name.
    fn get(&self, account: &str) -> Result<Option<Secret>, SecretError>;
    /// Store or replace a secret.
    fn set(&self, account: &str, secret: &Secret) -> Result<(), SecretError>;
    /// Remove a secret; removing a missing one is not an error.
    fn delete(&self, account: &str) -> Result<(), SecretError>;
    /// Check reachability without touching any real secret.
    fn probe(&self) -> KeychainStatus;
}

/// Validate an account name before it reaches a backend.
pub(crate) fn check_account(account: &str) -> Result<(), SecretError> {
    let ok = !account.is_empty()
        && account.chars().count() <= 128
        && !account.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(SecretError::InvalidName(account.chars().take(32).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints_its_value() {
        let s = Secret::new("sk-SENTINEL-123");
        assert!(!format!("{s:?}").contains("SENTINEL"));
        assert!(!format!("{s}").contains("SENTINEL"));
        assert_eq!(s.expose(), "sk-SENTINEL-123");
    }

    #[test]
    fn account_names_are_validated() {
        assert!(check_account("openai").is_ok());
        assert!(matches!(
            check_account(""),
            Err(SecretError::InvalidName(_))
        ));
        assert!(check_account("bad\nname").is_err());
        assert!(check_account(&"x".repeat(129)).is_err());
    }
}
