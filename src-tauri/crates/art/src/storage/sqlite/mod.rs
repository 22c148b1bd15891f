//! SQLite storage: one file in WAL mode, one writer thread that batches writes into
//! transactions, a checkpointer thread that moves the WAL into the database off the
//! writer's path, and a small pool of read-only connections for concurrent reads.
//!
//! Observations live in their own table with interned thread / run keys (they are most
//! of the rows); every other collection shares the generic `records` table.

mod ids;
mod ledger;
mod read;
mod write;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use tokio::sync::oneshot;

use super::ledger::{UsageQuery, UsageRecord, UsageSum};
use super::{
    Collection, Link, Query, Record, RecordStream, SCAN_QUEUE, SearchHit, StorageAdapter,
    StorageError, check_swap, migrations,
};
use write::{Job, WriteOp};

/// [`StorageAdapter`] over a SQLite file.
pub struct SqliteStorage {
    path: PathBuf,
    writer: Option<mpsc::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    readers: Arc<Mutex<Vec<Connection>>>,
}

pub(super) fn db_err(e: rusqlite::Error) -> StorageError {
    StorageError::Database(e.to_string())
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")
}

/// Turn on WAL mode; returns the journal mode now in force. Switching a new file to WAL
/// needs its exclusive lock, and when two connections (two processes starting at once)
/// both hold a shared lock and want it, SQLite answers one of them "database is locked"
/// at once instead of calling the busy handler (so as not to deadlock): that one waits a
/// moment and asks again, for as long as `patience`.
pub(crate) fn wal_mode(conn: &Connection, patience: Duration) -> rusqlite::Result<String> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && started.elapsed() < patience =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            answer => return answer,
        }
    }
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
        let mode = wal_mode(&conn, Duration::from_secs(5)).map_err(|e| open_err(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(open_err(format!(
                "WAL mode refused (journal mode is {mode})"
            )));
        }
        // Commits append to the WAL without fsync (durable against a process crash,
        // which is what matters for a desktop app); the checkpointer thread syncs.
        // The writer's cache stays at 8 MB: every commit scans the whole page-cache hash
        // table, and at 32 MB that scan cost a quarter of the insert rate (measured).
        conn.pragma_update(None, "synchronous", "NORMAL")
            .and_then(|()| conn.pragma_update(None, "cache_size", -8_000))
            .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", 0))
            .and_then(|()| conn.pragma_update(None, "temp_store", "MEMORY"))
            .map_err(|e| open_err(e.to_string()))?;
        migrations::migrate(&mut conn).map_err(open_err)?;
        let checkpoint_conn = Connection::open(&path)
            .and_then(|c| configure(&c).map(|()| c))
            .map_err(|e| open_err(e.to_string()))?;

        let spawn = |name: &str, work: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(work)
                .map_err(|e| open_err(format!("cannot start the {name} thread: {e}")))
        };
        let (tick, ticks) = mpsc::channel::<()>();
        let checkpointer = spawn(
            "art-sqlite-checkpoint",
            Box::new(move || write::checkpoint_loop(checkpoint_conn, ticks)),
        )?;
        let (sender, receiver) = mpsc::channel::<Job>();
        let writer = spawn(
            "art-sqlite-writer",
            Box::new(move || write::writer_loop(conn, receiver, tick)),
        )?;
        Ok(Self {
            path,
            writer: Some(sender),
            // Joined in this order on drop: the writer, then the checkpointer.
            threads: vec![writer, checkpointer],
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

    /// Run `work` on a pooled read-only connection, on a blocking thread.
    fn reading<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StorageError> + Send + 'static,
    ) -> tokio::task::JoinHandle<Result<T, StorageError>> {
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
    }

    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        self.reading(work)
            .await
            .map_err(|e| StorageError::Database(format!("read task failed: {e}")))?
    }
}

impl Drop for SqliteStorage {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish queued work and exit; its exit
        // closes the checkpointer's channel, which then checkpoints and truncates the WAL.
        self.writer.take();
        self.readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[async_trait::async_trait]
impl StorageAdapter for SqliteStorage {
    async fn get(&self, collection: Collection, id: &str) -> Result<Option<Record>, StorageError> {
        let id = id.to_owned();
        self.read(move |conn| read::get(conn, collection, &id))
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

    async fn swap(
        &self,
        collection: Collection,
        id: &str,
        expected: Option<&str>,
        new: Option<Record>,
    ) -> Result<bool, StorageError> {
        check_swap(collection, id, new.as_ref())?;
        self.write(WriteOp::Swap {
            collection,
            id: id.to_owned(),
            expected: expected.map(str::to_owned),
            new,
        })
        .await
    }

    async fn query(
        &self,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Record>, StorageError> {
        let query = query.clone();
        self.read(move |conn| read::query(conn, collection, &query))
            .await
    }

    async fn links(
        &self,
        collection: Collection,
        thread_id: &str,
    ) -> Result<Vec<Link>, StorageError> {
        let thread_id = thread_id.to_owned();
        self.read(move |conn| read::links(conn, collection, &thread_id))
            .await
    }

    async fn count(&self, collection: Collection, query: &Query) -> Result<u64, StorageError> {
        let query = query.clone();
        self.read(move |conn| read::count(conn, collection, &query))
            .await
    }

    fn scan(&self, collection: Collection, query: Query, batch: usize) -> RecordStream {
        let (sender, stream) = tokio::sync::mpsc::channel(SCAN_QUEUE);
        let failed = sender.clone();
        let reading = self.reading(move |conn| {
            let mut deliver = |chunk| sender.blocking_send(Ok(chunk)).is_ok();
            read::scan(conn, collection, &query, batch.max(1), &mut deliver)
        });
        tokio::spawn(async move {
            let error = match reading.await {
                Ok(Ok(())) => return,
                Ok(Err(e)) => e,
                Err(e) => StorageError::Database(format!("read task failed: {e}")),
            };
            let _ = failed.send(Err(error)).await;
        });
        stream
    }

    async fn record_usage(&self, records: Vec<UsageRecord>) -> Result<(), StorageError> {
        if records.is_empty() {
            return Ok(());
        }
        self.write(WriteOp::Usage(records)).await.map(drop)
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Vec<UsageSum>, StorageError> {
        let query = query.clone();
        self.read(move |conn| ledger::sum(conn, &query)).await
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
        let expression = read::fts_expression(text)?;
        self.read(move |conn| read::search(conn, &expression, limit))
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
