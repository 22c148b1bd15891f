//! The passages' vectors in the knowledge database: which passages still need one, storing
//! them, and the vectors of a collection held in memory for searching (reloaded only
//! after the database changed, by this process or another).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use art_types::knowledge::KnowledgeProblem;
use rusqlite::params;

use super::{KnowledgeStore, signed, unsigned};
use crate::knowledge::embed::vectors::{VectorSet, to_blob};

/// Collections' vectors loaded from the database, and the database's state when they
/// were loaded.
#[derive(Default)]
pub(super) struct Loaded {
    /// By (collection, model).
    sets: Mutex<HashMap<(String, String), LoadedSet>>,
}

/// A collection's vectors of one model, and when they were loaded.
type LoadedSet = (Version, Arc<VectorSet>);

/// The database's state as a connection sees it: commits by other connections
/// (`PRAGMA data_version`) and rows changed by its own.
type Version = (i64, u64);

/// Passages of ready documents in collections embedded with `model` that have no vector
/// of it yet, `WHERE`-clause and parameters shared by the count and the list.
const PENDING: &str = "FROM chunks ch
     JOIN documents d ON d.id = ch.document
     JOIN collections c ON c.id = d.collection
     WHERE c.embedder = ?1 AND d.state = 'ready'
       AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.chunk = ch.id AND v.model = ?1)";

impl KnowledgeStore {
    /// Up to `limit` passages that need a vector of `model` (id, text), oldest first.
    pub fn to_embed(
        &self,
        model: &str,
        limit: usize,
    ) -> Result<Vec<(i64, String)>, KnowledgeProblem> {
        let limit = signed(limit as u64);
        self.with(|c| {
            c.prepare_cached(&format!(
                "SELECT ch.id, ch.text {PENDING} ORDER BY ch.id LIMIT ?2"
            ))?
            .query_map(params![model, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
        })
    }

    /// How many passages need a vector of `model`.
    pub fn waiting_for_vectors(&self, model: &str) -> Result<u64, KnowledgeProblem> {
        self.with(|c| {
            c.prepare_cached(&format!("SELECT count(*) {PENDING}"))?
                .query_row([model], |r| unsigned(r, 0))
        })
    }

    /// Every passage of `collection` (id, text), in order.
    pub fn texts(&self, collection: &str) -> Result<Vec<(i64, String)>, KnowledgeProblem> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT ch.id, ch.text FROM chunks ch JOIN documents d ON d.id = ch.document
                 WHERE d.collection = ?1 ORDER BY ch.id",
            )?
            .query_map([collection], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
        })
    }

    /// The model `collection`'s passages are embedded with.
    pub fn embedder_of(&self, collection: &str) -> Result<String, KnowledgeProblem> {
        self.with(|c| {
            c.query_row(
                "SELECT embedder FROM collections WHERE id = ?1",
                [collection],
                |r| r.get(0),
            )
        })
    }

    /// Store passages' vectors of `model` in one transaction. A passage removed since it
    /// was handed out (its document was rewritten or removed meanwhile) is passed over.
    pub fn put_vectors(
        &self,
        model: &str,
        vectors: &[(i64, Vec<f32>)],
    ) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            let tx = c.transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR REPLACE INTO vectors (chunk, model, vector)
                     SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?1)",
                )?;
                for (chunk, vector) in vectors {
                    insert.execute(params![chunk, model, to_blob(vector)])?;
                }
            }
            tx.commit()
        })
    }

    /// `collection`'s vectors of `model` of `dimension`, from memory unless the database
    /// changed since they were loaded.
    pub fn vector_set(
        &self,
        collection: &str,
        model: &str,
        dimension: usize,
    ) -> Result<Arc<VectorSet>, KnowledgeProblem> {
        let version = self.with(|c| {
            let data: i64 = c.query_row("PRAGMA data_version", [], |r| r.get(0))?;
            Ok((data, c.total_changes()))
        })?;
        let key = (collection.to_owned(), model.to_owned());
        let mut sets = self.loaded.sets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((loaded_at, set)) = sets.get(&key)
            && *loaded_at == version
        {
            return Ok(Arc::clone(set));
        }
        let set = self.with(|c| {
            let mut set = VectorSet::new(dimension);
            let mut rows = c.prepare_cached(
                "SELECT v.chunk, v.vector FROM vectors v
                     JOIN chunks ch ON ch.id = v.chunk
                     JOIN documents d ON d.id = ch.document
                     WHERE d.collection = ?1 AND v.model = ?2",
            )?;
            let mut rows = rows.query(params![collection, model])?;
            while let Some(row) = rows.next()? {
                let blob = row.get_ref(1)?.as_blob()?;
                set.push_blob(row.get(0)?, blob);
            }
            Ok(set)
        })?;
        let set = Arc::new(set);
        sets.insert(key, (version, Arc::clone(&set)));
        Ok(set)
    }
}

#[cfg(test)]
mod tests;
