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

    /// The model whose vectors answer searches in `collection` (of `chunks` passages): its
    /// own, unless a change of model is still re-embedding it — then the model before,
    /// whose vectors are all there, until the new one has every passage.
    pub fn answering_model(
        &self,
        collection: &str,
        chunks: u64,
    ) -> Result<String, KnowledgeProblem> {
        let (model, previous) = self.models_of(collection)?;
        match previous {
            Some(previous) if chunks > 0 && self.unembedded(collection, &model)? > 0 => {
                Ok(previous)
            }
            _ => Ok(model),
        }
    }

    /// Embed `collection` with `model` from now on (a built-in or provider model id). Its
    /// passages get vectors of the new model in the background while the old vectors
    /// keep answering; they are deleted once the new ones are complete
    /// ([`Self::retire_replaced_vectors`]).
    pub fn change_embedder(&self, collection: &str, model: &str) -> Result<(), KnowledgeProblem> {
        let collection = self.find(collection)?.id;
        let (current, previous) = self.models_of(&collection)?;
        if current == model {
            return Ok(());
        }
        // What answers meanwhile: the current model if it is complete, else the one that
        // was answering for it.
        let answering = if self.unembedded(&collection, &current)? == 0 {
            Some(current)
        } else {
            previous
        };
        let answering = answering.filter(|m| m != model);
        self.with(|c| {
            c.execute(
                "UPDATE collections SET embedder = ?2, previous_embedder = ?3 WHERE id = ?1",
                params![collection, model, answering],
            )
        })?;
        Ok(())
    }

    /// Collections whose change of model is complete (the new model has a vector for
    /// every passage) lose the vectors of other models. Returns how many settled.
    pub fn retire_replaced_vectors(&self) -> Result<u64, KnowledgeProblem> {
        let pending: Vec<(String, String)> = self.with(|c| {
            c.prepare("SELECT id, embedder FROM collections WHERE previous_embedder IS NOT NULL")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })?;
        let mut settled = 0;
        for (collection, model) in pending {
            if self.unembedded(&collection, &model)? > 0 {
                continue;
            }
            self.with(|c| {
                let tx = c.transaction()?;
                tx.execute(
                    "DELETE FROM vectors WHERE model != ?2 AND chunk IN
                         (SELECT ch.id FROM chunks ch JOIN documents d ON d.id = ch.document
                          WHERE d.collection = ?1)",
                    params![collection, model],
                )?;
                tx.execute(
                    "UPDATE collections SET previous_embedder = NULL WHERE id = ?1",
                    [&collection],
                )?;
                tx.commit()
            })?;
            settled += 1;
        }
        Ok(settled)
    }

    /// Passages of the collections embedded with `model`, or answered by it while they
    /// re-embed.
    pub fn passages_of_model(&self, model: &str) -> Result<u64, KnowledgeProblem> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT count(*) FROM chunks ch JOIN documents d ON d.id = ch.document
                 JOIN collections c ON c.id = d.collection
                 WHERE c.embedder = ?1 OR c.previous_embedder = ?1",
            )?
            .query_row([model], |r| unsigned(r, 0))
        })
    }

    /// Every model a collection is embedded with, or answered by while it re-embeds.
    pub fn models_in_use(&self) -> Result<Vec<String>, KnowledgeProblem> {
        self.with(|c| {
            c.prepare(
                "SELECT embedder FROM collections
                 UNION SELECT previous_embedder FROM collections
                 WHERE previous_embedder IS NOT NULL ORDER BY 1",
            )?
            .query_map([], |r| r.get(0))?
            .collect()
        })
    }

    /// `collection`'s model and the one answering while it re-embeds.
    fn models_of(&self, collection: &str) -> Result<(String, Option<String>), KnowledgeProblem> {
        self.with(|c| {
            c.query_row(
                "SELECT embedder, previous_embedder FROM collections WHERE id = ?1",
                [collection],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// Passages of `collection` without a vector of `model`.
    pub(super) fn unembedded(
        &self,
        collection: &str,
        model: &str,
    ) -> Result<u64, KnowledgeProblem> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT count(*) FROM chunks ch JOIN documents d ON d.id = ch.document
                 WHERE d.collection = ?1 AND NOT EXISTS
                     (SELECT 1 FROM vectors v WHERE v.chunk = ch.id AND v.model = ?2)",
            )?
            .query_row(params![collection, model], |r| unsigned(r, 0))
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
