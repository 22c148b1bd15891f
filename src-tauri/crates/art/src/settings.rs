//! The app's settings ([`AppSettings`]): one record in the database, read whole and
//! changed by compare and swap, so the app and `art` changing them at once both land
//! (the later one redoes its change over the earlier one's, never over a stale copy).

use std::sync::Arc;

use art_types::AppSettings;

use crate::clock;
use crate::storage::{self, Collection, Record, StorageAdapter, StorageError};

/// The one record's id.
const ID: &str = "app";
/// Changes lost to another writer this many times in a row give up (never seen: the
/// other writer would have to change them as fast as this one reads).
const TRIES: usize = 16;

/// Reads and changes the app's settings.
pub struct SettingsStore {
    storage: Arc<dyn StorageAdapter>,
}

impl SettingsStore {
    /// The settings in `storage`.
    pub fn new(storage: Arc<dyn StorageAdapter>) -> Self {
        Self { storage }
    }

    /// The settings as saved, and the body they were read from (`None`: never saved).
    async fn read(&self) -> Result<(AppSettings, Option<String>), StorageError> {
        match self.storage.get(Collection::Settings, ID).await? {
            Some(record) => Ok((record.decode(Collection::Settings)?, Some(record.body))),
            None => Ok((AppSettings::default(), None)),
        }
    }

    /// The settings (the defaults when never saved).
    pub async fn get(&self) -> Result<AppSettings, StorageError> {
        Ok(self.read().await?.0)
    }

    /// Change the settings with `change` and save them; returns them as saved. `change`
    /// may run more than once (again over what another process saved meanwhile).
    pub async fn update(
        &self,
        mut change: impl FnMut(&mut AppSettings),
    ) -> Result<AppSettings, StorageError> {
        for _ in 0..TRIES {
            let (mut settings, body) = self.read().await?;
            change(&mut settings);
            let record = Record {
                id: ID.to_owned(),
                thread_id: None,
                trace_id: None,
                kind: None,
                parent: None,
                timestamp: clock::now_ms(),
                search_text: None,
                body: storage::encode(&settings)?,
            };
            let swapped = self
                .storage
                .swap(Collection::Settings, ID, body.as_deref(), Some(record))
                .await?;
            if swapped {
                return Ok(settings);
            }
        }
        Err(StorageError::Database(
            "the app's settings kept changing under this change: try again".to_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::sqlite::SqliteStorage;
    use art_types::ModelChoice;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn changes_made_at_once_by_two_processes_all_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("art.db");
        // Two connections to one file, as the app and `art` have.
        let one = Arc::new(SettingsStore::new(Arc::new(
            SqliteStorage::open(&path).unwrap(),
        )));
        let two = Arc::new(SettingsStore::new(Arc::new(
            SqliteStorage::open(&path).unwrap(),
        )));
        let remember = |store: Arc<SettingsStore>, from: usize| {
            tokio::spawn(async move {
                for n in from..from + 4 {
                    let choice = ModelChoice {
                        provider: "ollama".into(),
                        model: format!("m{n}"),
                    };
                    store.update(|s| s.remember(choice.clone())).await.unwrap();
                }
            })
        };
        let (a, b) = (remember(Arc::clone(&one), 0), remember(Arc::clone(&two), 4));
        a.await.unwrap();
        b.await.unwrap();
        let mut models: Vec<String> = one
            .get()
            .await
            .unwrap()
            .recent_models
            .into_iter()
            .map(|c| c.model)
            .collect();
        models.sort();
        assert_eq!(models, ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"]);
    }
}
