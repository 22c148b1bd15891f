//! Folders kept in sync with their collection: a rescan compares the files under the
//! folder with the documents the database has from it (by size and modification time)
//! and queues what is new or changed, and takes out what was deleted. The indexer
//! rescans every synced folder when it starts (changes made while the app was closed)
//! and then at a steady interval. A folder that cannot be read (an unmounted disk) is
//! left as it is: nothing is taken out because it is missing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use art_types::knowledge::{DocumentState, KnowledgeProblem};

use super::{KnowledgeStore, Seen, files};

/// What a rescan changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Synced {
    /// Files queued: new, or changed since they were read.
    pub queued: u64,
    /// Documents taken out: their file is gone.
    pub removed: u64,
}

impl std::ops::AddAssign for Synced {
    fn add_assign(&mut self, other: Self) {
        self.queued += other.queued;
        self.removed += other.removed;
    }
}

/// Rescan `folder` of `collection`.
pub fn sync_folder(
    store: &KnowledgeStore,
    collection: &str,
    folder: &Path,
) -> Result<Synced, KnowledgeProblem> {
    let found = files::find(folder).map_err(|e| KnowledgeProblem::Unreadable {
        path: folder.display().to_string(),
        reason: e.to_string(),
    })?;
    let known: HashMap<String, (i64, Seen, DocumentState)> = store
        .documents_under(collection, &folder.to_string_lossy())?
        .into_iter()
        .map(|(id, path, seen, state)| (path, (id, seen, state)))
        .collect();
    let mut queue = Vec::new();
    let mut present = HashSet::new();
    for file in &found.files {
        let path = file.to_string_lossy().into_owned();
        let Ok(meta) = std::fs::metadata(file) else {
            continue;
        };
        let changed = match known.get(&path) {
            None => true,
            // Waiting or being read: the reading will see what is there.
            Some((_, _, DocumentState::Queued | DocumentState::Indexing)) => false,
            Some((_, seen, _)) => *seen != Seen::of(&meta),
        };
        if changed {
            queue.push((path.clone(), files::name_of(file)));
        }
        present.insert(path);
    }
    let gone: Vec<i64> = known
        .iter()
        .filter(|(path, _)| !present.contains(*path))
        .map(|(_, (id, _, _))| *id)
        .collect();
    store.remove_many(&gone)?;
    let queued = if queue.is_empty() {
        0
    } else {
        store.queue_many(collection, &queue)?
    };
    Ok(Synced {
        queued,
        removed: gone.len() as u64,
    })
}

/// Rescan every synced folder. One that cannot be read is logged and left alone.
pub fn sync_all(store: &KnowledgeStore) -> Result<Synced, KnowledgeProblem> {
    let mut total = Synced::default();
    for (collection, folder) in store.synced_folders()? {
        match sync_folder(store, &collection, Path::new(&folder)) {
            Ok(synced) => total += synced,
            Err(KnowledgeProblem::Unreadable { path, reason }) => {
                tracing::warn!(
                    path,
                    reason,
                    "a synced folder cannot be read; left as it is"
                );
            }
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
