//! The documented read-only fallback: when the store has no key for a provider (or the
//! keychain is unavailable), `<PROVIDER>_API_KEY` from the environment is used, e.g.
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`. Writes always go to the store.

use art_types::KeychainStatus;

use super::{Secret, SecretError, SecretStore};

/// Reads an environment variable (injectable for tests).
pub type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A [`SecretStore`] that falls back to environment variables on read.
pub struct EnvFallback<S> {
    inner: S,
    lookup: Lookup,
}

/// The environment variable consulted for `account`: upper case, `-` and `.` as `_`,
/// then `_API_KEY` (`openrouter` → `OPENROUTER_API_KEY`).
pub fn env_var_name(account: &str) -> String {
    let name: String = account
        .chars()
        .map(|c| match c {
            '-' | '.' | ' ' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect();
    format!("{name}_API_KEY")
}

impl<S: SecretStore> EnvFallback<S> {
    /// `inner`, falling back to the process environment.
    pub fn new(inner: S) -> Self {
        Self::with_lookup(inner, Box::new(|name| std::env::var(name).ok()))
    }

    /// `inner`, falling back to `lookup`.
    pub fn with_lookup(inner: S, lookup: Lookup) -> Self {
        Self { inner, lookup }
    }

    /// Whether `account`'s key comes from the environment (the store has none).
    pub fn from_env(&self, account: &str) -> bool {
        matches!(self.inner.get(account), Ok(None) | Err(_)) && self.env(account).is_some()
    }

    fn env(&self, account: &str) -> Option<Secret> {
        (self.lookup)(&env_var_name(account))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .map(Secret::new)
    }
}

impl<S: SecretStore> SecretStore for EnvFallback<S> {
    fn get(&self, account: &str) -> Result<Option<Secret>, SecretError> {
        match self.inner.get(account) {
            Ok(Some(secret)) => Ok(Some(secret)),
            Ok(None) => Ok(self.env(account)),
            // A broken keychain is not fatal when the environment has the key.
            Err(e) => self.env(account).map(Some).ok_or(e),
        }
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), SecretError> {
        self.inner.set(account, secret)
    }

    fn delete(&self, account: &str) -> Result<(), SecretError> {
        self.inner.delete(account)
    }

    fn probe(&self) -> KeychainStatus {
        self.inner.probe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::MemoryStore;

    fn store() -> EnvFallback<MemoryStore> {
        EnvFallback::with_lookup(
            MemoryStore::new(),
            Box::new(|name| (name == "OPENROUTER_API_KEY").then(|| " sk-or-env \n".into())),
        )
    }

    #[test]
    fn the_store_wins_and_the_environment_fills_gaps_read_only() {
        let store = store();
        assert_eq!(env_var_name("openrouter"), "OPENROUTER_API_KEY");
        assert_eq!(
            store.get("openrouter").unwrap().unwrap().expose(),
            "sk-or-env"
        );
        assert!(store.from_env("openrouter"));
        assert!(store.get("openai").unwrap().is_none());
        store
            .set("openrouter", &Secret::new("sk-or-stored"))
            .unwrap();
        assert_eq!(
            store.get("openrouter").unwrap().unwrap().expose(),
            "sk-or-stored"
        );
        assert!(!store.from_env("openrouter"));
        // Deleting the stored key uncovers the environment one again.
        store.delete("openrouter").unwrap();
        assert_eq!(
            store.get("openrouter").unwrap().unwrap().expose(),
            "sk-or-env"
        );
    }
}
