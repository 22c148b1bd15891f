//! The knowledge database: collections, documents with their states, passages and their
//! full-text index. A document's passages are replaced in one transaction with its
//! state, so a crash leaves either the old passages or the new ones, never both or half.
//! Documents are claimed for indexing with one `UPDATE … RETURNING`, so two processes
//! (the app and `art kb`) never read the same one; a claim whose process has died is
//! given back on open.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use art_types::knowledge::{
    BUILTIN_EMBEDDER, Collection, Document, DocumentState, KnowledgeProblem, ModelChange, Passage,
    Passages, StateCounts,
};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::Seen;
use super::chunk::{Chunk, place};
use super::embed::{Embedder, EmbedderSource};
use super::schema;

mod search;
mod vectors;

pub use art_types::knowledge::Searched;

/// The longest name a collection may have.
const MAX_NAME_CHARS: usize = 80;

/// A document claimed for indexing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// Its id.
    pub id: i64,
    /// Where to read it.
    pub path: String,
    /// Its file name.
    pub name: String,
}

/// The facts of a document read whole, stored with its passages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Bytes read.
    pub size: u64,
    /// Modification time when read (Unix ms).
    pub modified: i64,
    /// SHA-256 of the bytes, lowercase hex.
    pub sha256: String,
    /// Pages, for paged formats.
    pub pages: Option<u32>,
}

/// The knowledge database of a data directory.
pub struct KnowledgeStore {
    conn: Mutex<Connection>,
    /// What embeds questions for searching by meaning, by model, once loaded.
    embedders: RwLock<HashMap<String, Arc<dyn Embedder>>>,
    /// What loads a model's embedder a search needs (none: only those given), and when
    /// each model last could not be had (not asked again for a minute).
    source: RwLock<Option<Arc<dyn EmbedderSource>>>,
    unavailable: Mutex<HashMap<String, std::time::Instant>>,
    loaded: vectors::Loaded,
}

fn db(e: rusqlite::Error) -> KnowledgeProblem {
    KnowledgeProblem::Database(e.to_string())
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl KnowledgeStore {
    /// Open (creating) the database at `path`; claims left by dead processes are given
    /// back to the queue.
    pub fn open(path: &Path) -> Result<Self, KnowledgeProblem> {
        let mut conn = Connection::open(path).map_err(db)?;
        let patience = std::time::Duration::from_secs(10);
        conn.busy_timeout(patience).map_err(db)?;
        crate::storage::sqlite::wal_mode(&conn, patience).map_err(db)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(db)?;
        schema::migrate(&mut conn).map_err(KnowledgeProblem::Database)?;
        // How many passages hold each word (this connection's own view of the index).
        conn.execute_batch(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunk_terms
             USING fts5vocab(main, chunk_text, row);",
        )
        .map_err(db)?;
        let store = Self {
            conn: Mutex::new(conn),
            embedders: RwLock::new(HashMap::new()),
            source: RwLock::new(None),
            unavailable: Mutex::new(HashMap::new()),
            loaded: vectors::Loaded::default(),
        };
        store.release_dead_claims()?;
        Ok(store)
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, KnowledgeProblem> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn).map_err(db)
    }

    /// Documents marked as being indexed by a process that no longer runs go back to
    /// the queue (the app or `art kb` was killed mid-document).
    fn release_dead_claims(&self) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            let claims: Vec<(i64, i64)> = c
                .prepare("SELECT id, claimed_by FROM documents WHERE state = 'indexing'")?
                .query_map([], |r| {
                    Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.unwrap_or(0)))
                })?
                .collect::<Result<_, _>>()?;
            for (id, pid) in claims {
                let alive = u32::try_from(pid)
                    .ok()
                    .is_some_and(|p| p != 0 && crate::agent::claims::alive(p));
                if !alive {
                    c.execute(
                        "UPDATE documents SET state = 'queued', claimed_by = NULL WHERE id = ?1",
                        [id],
                    )?;
                }
            }
            Ok(())
        })
    }

    /// A new, empty collection.
    pub fn create(&self, name: &str) -> Result<Collection, KnowledgeProblem> {
        let name = valid_name(name)?;
        let id = uuid::Uuid::new_v4().to_string();
        let created_at = now_ms();
        let inserted = self.with(|c| {
            c.execute(
                "INSERT INTO collections (id, name, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO NOTHING",
                params![id, name, created_at],
            )
        })?;
        if inserted == 0 {
            return Err(KnowledgeProblem::NameTaken { name });
        }
        Ok(Collection {
            id,
            name,
            created_at,
            counts: StateCounts::default(),
            chunks: 0,
            folders: Vec::new(),
            embedder: BUILTIN_EMBEDDER.to_owned(),
            changing: None,
            embedded: 0,
        })
    }

    /// Rename collection `id`.
    pub fn rename(&self, id: &str, name: &str) -> Result<(), KnowledgeProblem> {
        let name = valid_name(name)?;
        let result = self.with(|c| {
            c.execute(
                "UPDATE collections SET name = ?2 WHERE id = ?1",
                params![id, name],
            )
        });
        match result {
            Ok(0) => Err(KnowledgeProblem::NoCollection { name: id.into() }),
            Ok(_) => Ok(()),
            Err(KnowledgeProblem::Database(e)) if e.contains("UNIQUE") => {
                Err(KnowledgeProblem::NameTaken { name })
            }
            Err(e) => Err(e),
        }
    }

    /// Delete collection `id` with its documents and passages.
    pub fn delete(&self, id: &str) -> Result<(), KnowledgeProblem> {
        let deleted = self.with(|c| c.execute("DELETE FROM collections WHERE id = ?1", [id]))?;
        if deleted == 0 {
            return Err(KnowledgeProblem::NoCollection { name: id.into() });
        }
        Ok(())
    }

    /// Every collection, by name, with its counts.
    pub fn collections(&self) -> Result<Vec<Collection>, KnowledgeProblem> {
        let mut list: Vec<(Collection, Option<String>)> = self.with(|c| {
            c.prepare(
                "SELECT id, name, created_at, embedder, previous_embedder FROM collections
                 ORDER BY name",
            )?
            .query_map([], |r| {
                let collection = Collection {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    created_at: r.get(2)?,
                    counts: StateCounts::default(),
                    chunks: 0,
                    folders: Vec::new(),
                    embedder: r.get(3)?,
                    changing: None,
                    embedded: 0,
                };
                Ok((collection, r.get(4)?))
            })?
            .collect()
        })?;
        let counts: Vec<(String, String, u64, u64)> = self.with(|c| {
            c.prepare(
                "SELECT collection, state, count(*), sum(chunks) FROM documents
                 GROUP BY collection, state",
            )?
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, unsigned(r, 2)?, unsigned(r, 3)?))
            })?
            .collect()
        })?;
        for (collection, folder) in self.synced_folders()? {
            if let Some((entry, _)) = list.iter_mut().find(|(c, _)| c.id == collection) {
                entry.folders.push(folder);
            }
        }
        for (collection, state, n, chunks) in counts {
            let Some((entry, _)) = list.iter_mut().find(|(c, _)| c.id == collection) else {
                continue;
            };
            let counts = &mut entry.counts;
            // A document queued again keeps its passages searchable until re-read.
            entry.chunks += chunks;
            match DocumentState::parse(&state) {
                Some(DocumentState::Queued) => counts.queued = n,
                Some(DocumentState::Indexing) => counts.indexing = n,
                Some(DocumentState::Ready) => counts.ready = n,
                Some(DocumentState::Failed) => counts.failed = n,
                Some(DocumentState::Skipped) => counts.skipped = n,
                None => {}
            }
        }
        list.into_iter()
            .map(|(mut collection, from)| {
                let missing = self.unembedded(&collection.id, &collection.embedder)?;
                collection.embedded = collection.chunks.saturating_sub(missing);
                if let Some(from) = from {
                    collection.changing = Some(ModelChange {
                        from,
                        embedded: collection.embedded,
                    });
                }
                Ok(collection)
            })
            .collect()
    }

    /// The collection with this id, or else this name (any case).
    pub fn find(&self, id_or_name: &str) -> Result<Collection, KnowledgeProblem> {
        let mut all = self.collections()?;
        let name = id_or_name.trim().to_lowercase();
        all.iter()
            .position(|c| c.id == id_or_name)
            .or_else(|| all.iter().position(|c| c.name.to_lowercase() == name))
            .map(|i| all.swap_remove(i))
            .ok_or_else(|| KnowledgeProblem::NoCollection {
                name: id_or_name.into(),
            })
    }

    /// Queue the file at `path` in `collection` (again, if it was there: it is read
    /// anew, its passages kept searchable until the new ones replace them).
    pub fn queue(&self, collection: &str, path: &str, name: &str) -> Result<i64, KnowledgeProblem> {
        self.with(|c| {
            c.query_row(
                "INSERT INTO documents (collection, path, name, state, added_at)
                 VALUES (?1, ?2, ?3, 'queued', ?4)
                 ON CONFLICT (collection, path) DO UPDATE
                 SET state = 'queued', detail = NULL, claimed_by = NULL
                 RETURNING id",
                params![collection, path, name, now_ms()],
                |r| r.get(0),
            )
        })
    }

    /// Queue many files in `collection` at once (one transaction: a folder of 20,000
    /// files is queued in well under a second); each is `(path, name)`.
    pub fn queue_many(
        &self,
        collection: &str,
        files: &[(String, String)],
    ) -> Result<u64, KnowledgeProblem> {
        let now = now_ms();
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let exists: bool = tx
                .query_row(
                    "SELECT 1 FROM collections WHERE id = ?1",
                    [collection],
                    |_| Ok(true),
                )
                .optional()?
                .unwrap_or(false);
            if !exists {
                return Ok(None);
            }
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO documents (collection, path, name, state, added_at)
                     VALUES (?1, ?2, ?3, 'queued', ?4)
                     ON CONFLICT (collection, path) DO UPDATE
                     SET state = 'queued', detail = NULL, claimed_by = NULL",
                )?;
                for (path, name) in files {
                    insert.execute(params![collection, path, name, now])?;
                }
            }
            tx.commit()?;
            Ok(Some(files.len() as u64))
        })?
        .ok_or_else(|| KnowledgeProblem::NoCollection {
            name: collection.into(),
        })
    }

    /// Queue every document of `collection` to be read again (their passages answer
    /// until replaced); those being read now are left to finish. Returns how many.
    pub fn requeue(&self, collection: &str) -> Result<u64, KnowledgeProblem> {
        let n = self.with(|c| {
            c.execute(
                "UPDATE documents SET state = 'queued', detail = NULL, claimed_by = NULL
                 WHERE collection = ?1 AND state != 'indexing'",
                [collection],
            )
        })?;
        Ok(n as u64)
    }

    /// Keep `folder` (an absolute path) in sync with `collection`.
    pub fn keep_in_sync(&self, collection: &str, folder: &str) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            c.execute(
                "INSERT INTO folders (collection, path, added_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
                params![collection, folder, now_ms()],
            )
        })?;
        Ok(())
    }

    /// Stop keeping `folder` in sync (its documents stay, as they are).
    pub fn stop_syncing(&self, collection: &str, folder: &str) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            c.execute(
                "DELETE FROM folders WHERE collection = ?1 AND path = ?2",
                params![collection, folder],
            )
        })?;
        Ok(())
    }

    /// Every folder kept in sync, as `(collection, path)`, by path.
    pub fn synced_folders(&self) -> Result<Vec<(String, String)>, KnowledgeProblem> {
        self.with(|c| {
            c.prepare_cached("SELECT collection, path FROM folders ORDER BY path")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
    }

    /// The documents of `collection` at or under `folder`: id, path, the file as last
    /// seen, state.
    pub fn documents_under(
        &self,
        collection: &str,
        folder: &str,
    ) -> Result<Vec<(i64, String, Seen, DocumentState)>, KnowledgeProblem> {
        let prefix = folder_prefix(folder);
        self.with(|c| {
            c.prepare_cached(
                "SELECT id, path, size, modified, state FROM documents
                 WHERE collection = ?1 AND substr(path, 1, length(?2)) = ?2",
            )?
            .query_map(params![collection, prefix], |r| {
                let state: String = r.get(4)?;
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    Seen {
                        size: unsigned(r, 2)?,
                        modified: r.get(3)?,
                    },
                    DocumentState::parse(&state).unwrap_or(DocumentState::Failed),
                ))
            })?
            .collect()
        })
    }

    /// Whether a document of any collection is read from at or under `folder`.
    pub fn reads_under(&self, folder: &str) -> Result<bool, KnowledgeProblem> {
        let prefix = folder_prefix(folder);
        self.with(|c| {
            c.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM documents
                 WHERE substr(path, 1, length(?1)) = ?1)",
            )?
            .query_row(params![prefix], |r| r.get(0))
        })
    }

    /// Take documents `ids` and their passages out, in one transaction.
    pub fn remove_many(&self, ids: &[i64]) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut delete = tx.prepare_cached("DELETE FROM documents WHERE id = ?1")?;
                for id in ids {
                    delete.execute([id])?;
                }
            }
            tx.commit()
        })
    }

    /// Documents waiting or being read, in every collection.
    pub fn waiting(&self) -> Result<u64, KnowledgeProblem> {
        self.with(|c| {
            c.query_row(
                "SELECT count(*) FROM documents WHERE state IN ('queued', 'indexing')",
                [],
                |r| unsigned(r, 0),
            )
        })
    }

    /// Stop what is queued: a document never read is skipped, saying so; one queued to
    /// be read again keeps the passages of its last reading and is ready again.
    /// Returns how many were taken off the queue.
    pub fn cancel_queued(&self) -> Result<u64, KnowledgeProblem> {
        let n = self.with(|c| {
            c.execute(
                "UPDATE documents SET
                     state = CASE WHEN chunks > 0 THEN 'ready' ELSE 'skipped' END,
                     detail = CASE WHEN chunks > 0
                         THEN 'not read again: indexing was cancelled (Reindex reads it)'
                         ELSE 'indexing was cancelled (Reindex reads it)' END
                 WHERE state = 'queued'",
                [],
            )
        })?;
        Ok(n as u64)
    }

    /// Claim the oldest queued document for this process, if any.
    pub fn claim(&self) -> Result<Option<Claimed>, KnowledgeProblem> {
        let pid = i64::from(std::process::id());
        self.with(|c| {
            c.query_row(
                "UPDATE documents SET state = 'indexing', claimed_by = ?1
                 WHERE id = (SELECT id FROM documents WHERE state = 'queued' ORDER BY id LIMIT 1)
                 RETURNING id, path, name",
                [pid],
                |r| {
                    Ok(Claimed {
                        id: r.get(0)?,
                        path: r.get(1)?,
                        name: r.get(2)?,
                    })
                },
            )
            .optional()
        })
    }

    /// Replace document `id`'s passages with `chunks` and mark it ready, in one
    /// transaction.
    pub fn store(&self, id: i64, read: &Read, chunks: &[Chunk]) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM chunks WHERE document = ?1", [id])?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO chunks (document, ord, text, tokens, headings, page_from,
                                         page_to, line_from, line_to)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?;
                for chunk in chunks {
                    let headings = serde_json::to_string(&chunk.headings).unwrap_or_default();
                    insert.execute(params![
                        id,
                        chunk.ord,
                        chunk.text,
                        signed(chunk.tokens),
                        headings,
                        chunk.pages.map(|p| p.0),
                        chunk.pages.map(|p| p.1),
                        chunk.lines.0,
                        chunk.lines.1,
                    ])?;
                }
            }
            let tokens: u64 = chunks.iter().map(|c| c.tokens).sum();
            tx.execute(
                "UPDATE documents SET state = 'ready', detail = NULL, claimed_by = NULL,
                     size = ?2, modified = ?3, sha256 = ?4, pages = ?5, chunks = ?6, tokens = ?7
                 WHERE id = ?1",
                params![
                    id,
                    signed(read.size),
                    read.modified,
                    read.sha256,
                    read.pages,
                    signed(chunks.len() as u64),
                    signed(tokens)
                ],
            )?;
            tx.commit()
        })
    }

    /// Mark document `id` failed or skipped, saying why, with the file's size and time
    /// as it was (its passages, if any, go: what they came from can no longer be read).
    pub fn refuse(
        &self,
        id: i64,
        state: DocumentState,
        detail: &str,
        seen: Seen,
    ) -> Result<(), KnowledgeProblem> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute("DELETE FROM chunks WHERE document = ?1", [id])?;
            tx.execute(
                "UPDATE documents SET state = ?2, detail = ?3, claimed_by = NULL, chunks = 0,
                     tokens = 0, size = ?4, modified = ?5
                 WHERE id = ?1",
                params![id, state.as_str(), detail, signed(seen.size), seen.modified],
            )?;
            tx.commit()
        })
    }

    /// Take document `id` and its passages out of its collection.
    pub fn remove(&self, id: i64) -> Result<(), KnowledgeProblem> {
        match self.with(|c| c.execute("DELETE FROM documents WHERE id = ?1", [id]))? {
            0 => Err(KnowledgeProblem::NoDocument { id }),
            _ => Ok(()),
        }
    }

    /// The documents of `collection`, in the order they were added.
    pub fn documents(&self, collection: &str) -> Result<Vec<Document>, KnowledgeProblem> {
        self.with(|c| {
            c.prepare(
                "SELECT id, collection, path, name, size, state, detail, pages, chunks, tokens
                 FROM documents WHERE collection = ?1 ORDER BY id",
            )?
            .query_map([collection], document)?
            .collect()
        })
    }

    /// The document of passage `chunk`, with all its passages in order.
    pub fn passages(&self, chunk: i64) -> Result<Passages, KnowledgeProblem> {
        let document = self
            .with(|c| {
                c.query_row(
                    "SELECT d.id, d.collection, d.path, d.name, d.size, d.state, d.detail,
                            d.pages, d.chunks, d.tokens
                     FROM chunks ch JOIN documents d ON d.id = ch.document WHERE ch.id = ?1",
                    [chunk],
                    document,
                )
                .optional()
            })?
            .ok_or(KnowledgeProblem::NoPassage { chunk })?;
        let passages = self.with(|c| {
            c.prepare(
                "SELECT id, text, headings, page_from, page_to, line_from, line_to
                 FROM chunks WHERE document = ?1 ORDER BY ord",
            )?
            .query_map([document.id], |r| {
                Ok(Passage {
                    chunk: r.get(0)?,
                    place: stored_place(r, 2)?,
                    text: r.get(1)?,
                })
            })?
            .collect()
        })?;
        Ok(Passages { document, passages })
    }
}

/// What the paths at or under `folder` start with (the folder and a separator).
fn folder_prefix(folder: &str) -> String {
    format!(
        "{}{}",
        folder.trim_end_matches(std::path::MAIN_SEPARATOR),
        std::path::MAIN_SEPARATOR
    )
}

fn valid_name(name: &str) -> Result<String, KnowledgeProblem> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(KnowledgeProblem::BadName);
    }
    Ok(name.to_owned())
}

/// Where a stored passage is, as a citation says it, from its columns `headings,
/// page_from, page_to, line_from, line_to` read in that order from `first`.
fn stored_place(r: &Row<'_>, first: usize) -> rusqlite::Result<String> {
    let headings: String = r.get(first)?;
    let headings: Vec<String> = serde_json::from_str(&headings).unwrap_or_default();
    let pages = match (
        r.get::<_, Option<u32>>(first + 1)?,
        r.get::<_, Option<u32>>(first + 2)?,
    ) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    Ok(place(
        pages,
        (r.get(first + 3)?, r.get(first + 4)?),
        &headings,
    ))
}

/// A count or size stored as SQLite's signed integer (NULL, from an empty sum, is 0).
fn unsigned(r: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    Ok(r.get::<_, Option<i64>>(index)?
        .map_or(0, |v| u64::try_from(v).unwrap_or(0)))
}

/// A count or size as SQLite stores integers.
fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn document(r: &Row<'_>) -> rusqlite::Result<Document> {
    let state: String = r.get(5)?;
    Ok(Document {
        id: r.get(0)?,
        collection: r.get(1)?,
        path: r.get(2)?,
        name: r.get(3)?,
        size: unsigned(r, 4)?,
        state: DocumentState::parse(&state).unwrap_or(DocumentState::Failed),
        detail: r.get(6)?,
        pages: r.get(7)?,
        chunks: unsigned(r, 8)?,
        tokens: unsigned(r, 9)?,
    })
}

#[cfg(test)]
mod tests;
