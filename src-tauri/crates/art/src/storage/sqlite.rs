//! SQLite storage: one file in WAL mode, one writer thread that batches writes into
//! transactions, and a small pool of read-only connections for concurrent reads.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params, params_from_iter};
use tokio::sync::oneshot;

use super::{
    Collection, Order, Query, Record, SearchHit, StorageAdapter, StorageError, migrations,
};

/// At most this many queued writes share one transaction.
const MAX_BATCH: usize = 512;

enum WriteOp {
    Set(Collection, Vec<Record>),
    Delete(Collection, String),
    DeleteThread(String),
    Clear(Collection),
}

struct Job {
    op: WriteOp,
    reply: oneshot::Sender<Result<bool, StorageError>>,
}

/// [`StorageAdapter`] over a SQLite file.
pub struct SqliteStorage {
    path: PathBuf,
    writer: Option<mpsc::Sender<Job>>,
    writer_thread: Option<JoinHandle<()>>,
    readers: Arc<Mutex<Vec<Connection>>>,
}

fn db_err(e: rusqlite::Error) -> StorageError {
    StorageError::Database(e.to_string())
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")
}

impl SqliteStorage {
    /// Open (creating if needed) and migrate the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        let path = path.as_ref().to_path_buf();
        let open_err = |message: String| StorageError::Open {
            path: path.display().to_string(),
            message,
        };
        let mut conn = Connection::open(&path).map_err(|e| open_err(e.to_string()))?;
        configure(&conn).map_err(|e| open_err(e.to_string()))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(|e| open_err(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_err(format!(
                "WAL mode refused (journal mode is {mode})"
            )));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .and_then(|()| conn.pragma_update(None, "cache_size", -32_000))
            .map_err(|e| open_err(e.to_string()))?;
        migrations::migrate(&mut conn).map_err(open_err)?;

        let (sender, receiver) = mpsc::channel::<Job>();
        let writer_thread = std::thread::Builder::new()
            .name("art-sqlite-writer".into())
            .spawn(move || writer_loop(conn, receiver))
            .map_err(|e| open_err(format!("cannot start the writer thread: {e}")))?;
        Ok(Self {
            path,
            writer: Some(sender),
            writer_thread: Some(writer_thread),
            readers: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Path of the database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn write(&self, op: WriteOp) -> Result<bool, StorageError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .as_ref()
            .ok_or(StorageError::Closed)?
            .send(Job { op, reply })
            .map_err(|_| StorageError::Closed)?;
        answer.await.map_err(|_| StorageError::Closed)?
    }

    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let readers = Arc::clone(&self.readers);
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let conn = match pooled {
                Some(conn) => conn,
                None => {
                    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                    let conn = Connection::open_with_flags(&path, flags).map_err(db_err)?;
                    configure(&conn).map_err(db_err)?;
                    conn
                }
            };
            let result = work(&conn);
            readers.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            result
        })
        .await
        .map_err(|e| StorageError::Database(format!("read task failed: {e}")))?
    }
}

impl Drop for SqliteStorage {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish queued work and exit.
        self.writer.take();
        if let Some(thread) = self.writer_thread.take() {
            let _ = thread.join();
        }
    }
}

fn writer_loop(mut conn: Connection, receiver: mpsc::Receiver<Job>) {
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let outcomes = run_batch(&mut conn, &batch);
        for (job, outcome) in batch.into_iter().zip(outcomes) {
            let _ = job.reply.send(outcome);
        }
    }
}

/// Run jobs in one transaction; each job in a savepoint so one failure spares the rest.
/// Callers are answered only after the commit: what they were told is on disk.
fn run_batch(conn: &mut Connection, batch: &[Job]) -> Vec<Result<bool, StorageError>> {
    let mut tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => {
            let message = e.to_string();
            return batch
                .iter()
                .map(|_| Err(StorageError::Database(message.clone())))
                .collect();
        }
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    for job in batch {
        let outcome = tx.savepoint().map_err(db_err).and_then(|mut sp| {
            let done = apply(&mut sp, &job.op)?;
            sp.commit().map_err(db_err)?;
            Ok(done)
        });
        outcomes.push(outcome);
    }
    if let Err(e) = tx.commit() {
        let message = e.to_string();
        return batch
            .iter()
            .map(|_| Err(StorageError::Database(message.clone())))
            .collect();
    }
    outcomes
}

fn apply(tx: &mut rusqlite::Savepoint<'_>, op: &WriteOp) -> Result<bool, StorageError> {
    match op {
        WriteOp::Set(collection, records) => {
            // New records (the common case: observations, messages) take one INSERT;
            // only an existing record pays for the UPDATE and re-indexing.
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO records (collection, id, thread_id, trace_id, kind, ts, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (collection, id) DO NOTHING",
                )
                .map_err(db_err)?;
            let mut update = tx
                .prepare_cached(
                    "UPDATE records SET thread_id = ?3, trace_id = ?4, kind = ?5, ts = ?6, body = ?7
                     WHERE collection = ?1 AND id = ?2
                     RETURNING seq",
                )
                .map_err(db_err)?;
            let mut unindex = tx
                .prepare_cached("DELETE FROM search_index WHERE rowid = ?1")
                .map_err(db_err)?;
            let mut index = tx
                .prepare_cached("INSERT INTO search_index (rowid, text) VALUES (?1, ?2)")
                .map_err(db_err)?;
            for r in records {
                let body = r.body.to_string();
                let values = params![
                    collection.as_str(),
                    r.id,
                    r.thread_id,
                    r.trace_id,
                    r.kind,
                    r.timestamp,
                    body
                ];
                // RETURNING costs more than the insert itself here; ask the connection.
                let inserted = insert.execute(values).map_err(db_err)? == 1;
                let seq = match inserted {
                    true => tx.last_insert_rowid(),
                    false => {
                        let seq: i64 =
                            update.query_row(values, |row| row.get(0)).map_err(db_err)?;
                        unindex.execute([seq]).map_err(db_err)?;
                        seq
                    }
                };
                if let Some(text) = r.search_text.as_deref().filter(|t| !t.is_empty()) {
                    index.execute(params![seq, text]).map_err(db_err)?;
                }
            }
            Ok(true)
        }
        WriteOp::Delete(collection, id) => {
            tx.execute(
                "DELETE FROM search_index WHERE rowid IN
                   (SELECT seq FROM records WHERE collection = ?1 AND id = ?2)",
                params![collection.as_str(), id],
            )
            .map_err(db_err)?;
            let n = tx
                .execute(
                    "DELETE FROM records WHERE collection = ?1 AND id = ?2",
                    params![collection.as_str(), id],
                )
                .map_err(db_err)?;
            Ok(n > 0)
        }
        WriteOp::DeleteThread(thread_id) => {
            tx.execute(
                "DELETE FROM search_index WHERE rowid IN (SELECT seq FROM records WHERE thread_id = ?1)",
                [thread_id],
            )
            .map_err(db_err)?;
            let n = tx
                .execute("DELETE FROM records WHERE thread_id = ?1", [thread_id])
                .map_err(db_err)?;
            Ok(n > 0)
        }
        WriteOp::Clear(collection) => {
            tx.execute(
                "DELETE FROM search_index WHERE rowid IN (SELECT seq FROM records WHERE collection = ?1)",
                [collection.as_str()],
            )
            .map_err(db_err)?;
            tx.execute(
                "DELETE FROM records WHERE collection = ?1",
                [collection.as_str()],
            )
            .map_err(db_err)?;
            Ok(true)
        }
    }
}

fn row_to_record(collection: Collection, row: &rusqlite::Row<'_>) -> Result<Record, StorageError> {
    let id: String = row.get(0).map_err(db_err)?;
    let body: String = row.get(5).map_err(db_err)?;
    let body = serde_json::from_str(&body).map_err(|e| StorageError::Corrupt {
        collection: collection.as_str(),
        id: id.clone(),
        message: e.to_string(),
    })?;
    Ok(Record {
        thread_id: row.get(1).map_err(db_err)?,
        trace_id: row.get(2).map_err(db_err)?,
        kind: row.get(3).map_err(db_err)?,
        timestamp: row.get(4).map_err(db_err)?,
        search_text: None,
        body,
        id,
    })
}

const COLUMNS: &str = "id, thread_id, trace_id, kind, ts, body";

/// Turn user text into a safe FTS5 expression: every word a quoted prefix, all required.
fn fts_expression(text: &str) -> Result<String, StorageError> {
    let terms: Vec<String> = text
        .split_whitespace()
        .map(|w| w.replace('"', ""))
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\"*"))
        .collect();
    if terms.is_empty() {
        return Err(StorageError::InvalidSearch("type at least one word".into()));
    }
    Ok(terms.join(" "))
}

#[async_trait::async_trait]
impl StorageAdapter for SqliteStorage {
    async fn get(&self, collection: Collection, id: &str) -> Result<Option<Record>, StorageError> {
        let id = id.to_owned();
        self.read(move |conn| {
            let sql = format!("SELECT {COLUMNS} FROM records WHERE collection = ?1 AND id = ?2");
            let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
            let mut rows = stmt
                .query(params![collection.as_str(), id])
                .map_err(db_err)?;
            match rows.next().map_err(db_err)? {
                Some(row) => row_to_record(collection, row).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn set(&self, collection: Collection, records: Vec<Record>) -> Result<(), StorageError> {
        if records.is_empty() {
            return Ok(());
        }
        self.write(WriteOp::Set(collection, records))
            .await
            .map(drop)
    }

    async fn delete(&self, collection: Collection, id: &str) -> Result<bool, StorageError> {
        self.write(WriteOp::Delete(collection, id.to_owned())).await
    }

    async fn query(
        &self,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Record>, StorageError> {
        let query = query.clone();
        self.read(move |conn| {
            let mut sql = format!("SELECT {COLUMNS} FROM records WHERE collection = ?");
            let mut args: Vec<rusqlite::types::Value> = vec![collection.as_str().to_owned().into()];
            if let Some(thread) = &query.thread_id {
                sql.push_str(" AND thread_id = ?");
                args.push(thread.clone().into());
            }
            if let Some(trace) = &query.trace_id {
                sql.push_str(" AND trace_id = ?");
                args.push(trace.clone().into());
            }
            if !query.kinds.is_empty() {
                let marks = vec!["?"; query.kinds.len()].join(", ");
                sql.push_str(&format!(" AND kind IN ({marks})"));
                args.extend(query.kinds.iter().cloned().map(Into::into));
            }
            if let Some(before) = query.before {
                sql.push_str(" AND ts < ?");
                args.push(before.into());
            }
            if let Some(after) = query.after {
                sql.push_str(" AND ts > ?");
                args.push(after.into());
            }
            sql.push_str(match query.order {
                Order::Ascending => " ORDER BY ts ASC, seq ASC",
                Order::Descending => " ORDER BY ts DESC, seq DESC",
            });
            if let Some(limit) = query.limit {
                sql.push_str(" LIMIT ?");
                args.push(i64::try_from(limit).unwrap_or(i64::MAX).into());
            }
            let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
            let mut rows = stmt.query(params_from_iter(args)).map_err(db_err)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(db_err)? {
                out.push(row_to_record(collection, row)?);
            }
            Ok(out)
        })
        .await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError> {
        self.write(WriteOp::DeleteThread(thread_id.to_owned()))
            .await
            .map(drop)
    }

    async fn clear(&self, collection: Collection) -> Result<(), StorageError> {
        self.write(WriteOp::Clear(collection)).await.map(drop)
    }

    async fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError> {
        let expression = fts_expression(text)?;
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT r.collection, r.id, r.thread_id,
                            snippet(search_index, 0, '[', ']', '…', 12)
                     FROM search_index JOIN records r ON r.seq = search_index.rowid
                     WHERE search_index MATCH ?1 ORDER BY rank LIMIT ?2",
                )
                .map_err(db_err)?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![expression, limit], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                    ))
                })
                .map_err(db_err)?;
            let mut hits = Vec::new();
            for row in rows {
                let (collection, id, thread_id, snippet) = row.map_err(db_err)?;
                let Some(collection) = Collection::ALL
                    .into_iter()
                    .find(|c| c.as_str() == collection)
                else {
                    continue;
                };
                hits.push(SearchHit {
                    collection,
                    id,
                    thread_id,
                    snippet,
                });
            }
            Ok(hits)
        })
        .await
    }
}

/// Check the file's integrity (`PRAGMA integrity_check`); `Ok(())` when it says ok.
pub fn integrity_check(path: &Path) -> Result<(), StorageError> {
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(db_err)?;
    let verdict: Option<String> = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .optional()
        .map_err(db_err)?;
    match verdict.as_deref() {
        Some("ok") => Ok(()),
        other => Err(StorageError::Database(format!(
            "integrity check: {other:?}"
        ))),
    }
}
