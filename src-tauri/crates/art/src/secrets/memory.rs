//! In-memory [`SecretStore`] for unit tests. Never used by the shipped app.

use std::collections::HashMap;
use std::sync::Mutex;

use art_types::KeychainStatus;

use super::{Secret, SecretError, SecretStore, check_account};

/// Keeps secrets in a map for the life of the value.
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<String, Secret>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Secret>> {
        // A panic while holding this lock cannot leave the map half-updated.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, SecretError> {
        check_account(account)?;
        Ok(self.entries().get(account).cloned())
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), SecretError> {
        check_account(account)?;
        self.entries().insert(account.to_owned(), secret.clone());
        super::changed();
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<(), SecretError> {
        check_account(account)?;
        self.entries().remove(account);
        super::changed();
        Ok(())
    }

    fn probe(&self) -> KeychainStatus {
        KeychainStatus::Available {
            backend: "in-memory (tests)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_replace_delete() {
        let store = MemoryStore::new();
        assert_eq!(store.get("openai").unwrap(), None);
        store.set("openai", &Secret::new("a")).unwrap();
        store.set("openai", &Secret::new("b")).unwrap();
        assert_eq!(store.get("openai").unwrap(), Some(Secret::new("b")));
        store.delete("openai").unwrap();
        store.delete("openai").unwrap();
        assert_eq!(store.get("openai").unwrap(), None);
        assert!(store.probe().is_available());
    }
}
