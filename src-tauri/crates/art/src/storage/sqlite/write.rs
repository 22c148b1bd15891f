//! The write side: one thread owns the writing connection and runs queued jobs in
//! batches (one transaction per batch); another checkpoints the WAL so the
//! writer never waits for an fsync.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rusqlite::types::ToSql;
use rusqlite::{CachedStatement, Transaction, TransactionBehavior};
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::{db_err, ids};
use crate::storage::ledger::UsageRecord;
use crate::storage::{Collection, Record, StorageError};

/// At most this many queued writes share one transaction.
const MAX_BATCH: usize = 512;

/// Least time between two checkpoints while writes keep coming.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

pub(super) enum WriteOp {
    Set(Collection, Vec<Record>),
    Delete(Collection, String),
    /// Compare and swap one record of `records` (see `StorageAdapter::swap`).
    Swap {
        collection: Collection,
        id: String,
        expected: Option<String>,
        new: Option<Record>,
    },
    DeleteThread(String),
    Clear(Collection),
    Usage(Vec<UsageRecord>),
}

pub(super) struct Job {
    pub(super) op: WriteOp,
    pub(super) reply: oneshot::Sender<Result<bool, StorageError>>,
}

/// Interned thread / run ids of the observations table. Keys are never deleted, so a
/// cached key stays valid unless the transaction that created it rolled back.
#[derive(Default)]
struct Keys(HashMap<String, i64>);

impl Keys {
    fn get(
        &mut self,
        tx: &Transaction<'_>,
        value: Option<&str>,
    ) -> Result<Option<i64>, StorageError> {
        let Some(value) = value else { return Ok(None) };
        if let Some(key) = self.0.get(value) {
            return Ok(Some(*key));
        }
        tx.prepare_cached("INSERT INTO keys (value) VALUES (?1) ON CONFLICT (value) DO NOTHING")
            .and_then(|mut s| s.execute([value]))
            .map_err(db_err)?;
        let key: i64 = tx
            .prepare_cached("SELECT key FROM keys WHERE value = ?1")
            .and_then(|mut s| s.query_row([value], |row| row.get(0)))
            .map_err(db_err)?;
        self.0.insert(value.to_owned(), key);
        Ok(Some(key))
    }
}

pub(super) fn writer_loop(mut conn: Connection, jobs: mpsc::Receiver<Job>, tick: mpsc::Sender<()>) {
    let mut keys = Keys::default();
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let outcomes = run_batch(&mut conn, &batch, &mut keys);
        if outcomes.iter().any(Result::is_err) {
            // A rolled-back transaction may have interned keys that are not in the file.
            keys.0.clear();
        }
        let _ = tick.send(());
        for (job, outcome) in batch.into_iter().zip(outcomes) {
            let _ = job.reply.send(outcome);
        }
    }
}

/// Checkpoint (PASSIVE: never blocks the writer or readers) after commits, at most every
/// [`CHECKPOINT_EVERY`]; when the writer is gone, checkpoint everything and truncate the WAL.
pub(super) fn checkpoint_loop(conn: Connection, ticks: mpsc::Receiver<()>) {
    let checkpoint = |mode: &str| {
        let sql = format!("PRAGMA wal_checkpoint({mode})");
        if let Err(e) = conn.query_row(&sql, [], |_| Ok(())) {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
    };
    let mut open = ticks.recv().is_ok();
    while open {
        checkpoint("PASSIVE");
        let deadline = Instant::now() + CHECKPOINT_EVERY;
        let mut more = false;
        loop {
            match ticks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(()) => more = true,
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if open && !more {
            open = ticks.recv().is_ok();
        }
    }
    checkpoint("TRUNCATE");
}

/// Run jobs in one transaction; callers are answered only after the commit, so what
/// they were told is on disk. When a job fails, the transaction is rolled back and each
/// job reruns alone, so one bad job spares the rest (failures are rare: the fast path
/// pays for no savepoints).
fn run_batch(
    conn: &mut Connection,
    batch: &[Job],
    keys: &mut Keys,
) -> Vec<Result<bool, StorageError>> {
    let all = transaction(conn, batch.iter(), keys);
    if all.iter().all(Result::is_ok) || batch.len() == 1 {
        return all;
    }
    keys.0.clear();
    batch
        .iter()
        .map(|job| transaction(conn, std::iter::once(job), keys).remove(0))
        .collect()
}

/// Apply jobs in one transaction: all committed, or none (each failed job keeps its own
/// error; the others are told the batch was rolled back).
fn transaction<'a>(
    conn: &mut Connection,
    jobs: impl ExactSizeIterator<Item = &'a Job>,
    keys: &mut Keys,
) -> Vec<Result<bool, StorageError>> {
    let count = jobs.len();
    let fail_all = |e: rusqlite::Error| {
        let message = e.to_string();
        (0..count)
            .map(|_| Err(StorageError::Database(message.clone())))
            .collect()
    };
    // IMMEDIATE: take the write lock first, waiting (busy timeout) while another process
    // holds it. A deferred transaction would read first and then try to upgrade, and in
    // WAL mode SQLite fails that upgrade at once when another writer committed meanwhile.
    let tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return fail_all(e),
    };
    let mut outcomes = Vec::with_capacity(count);
    for job in jobs {
        outcomes.push(apply(&tx, &job.op, keys));
    }
    if outcomes.iter().any(Result::is_err) {
        drop(tx); // rolls back
        return outcomes
            .into_iter()
            .map(|o| {
                o.and(Err(StorageError::Database(
                    "rolled back with a failed write in the same batch".into(),
                )))
            })
            .collect();
    }
    match tx.commit() {
        Ok(()) => outcomes,
        Err(e) => fail_all(e),
    }
}

/// The prepared statements that write `records` rows with their search text, for one
/// batch: insert-if-new, update-existing (returning its rowid), and the FTS index.
struct Upsert<'t> {
    insert: CachedStatement<'t>,
    update: CachedStatement<'t>,
    unindex: CachedStatement<'t>,
    index: CachedStatement<'t>,
}

impl<'t> Upsert<'t> {
    fn prepare(tx: &'t Transaction<'_>) -> Result<Self, StorageError> {
        let prepare = |sql: &str| tx.prepare_cached(sql).map_err(db_err);
        Ok(Self {
            insert: prepare(
                "INSERT INTO records (collection, id, thread_id, trace_id, kind, ts, body, parent_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (collection, id) DO NOTHING",
            )?,
            update: prepare(
                "UPDATE records SET thread_id = ?3, trace_id = ?4, kind = ?5, ts = ?6, body = ?7,
                 parent_id = ?8 WHERE collection = ?1 AND id = ?2 RETURNING seq",
            )?,
            unindex: prepare("DELETE FROM search_index WHERE rowid = ?1")?,
            index: prepare("INSERT INTO search_index (rowid, text) VALUES (?1, ?2)")?,
        })
    }

    /// Insert or replace one row and its search text. New rows (the common case) take
    /// one INSERT; only an existing row pays for the UPDATE and re-indexing.
    fn row(
        &mut self,
        tx: &Transaction<'_>,
        values: &[&dyn ToSql],
        search_text: Option<&str>,
    ) -> Result<(), StorageError> {
        let inserted = self.insert.execute(values).map_err(db_err)? == 1;
        // RETURNING costs more than the insert itself; ask the connection instead.
        let seq = match inserted {
            true => tx.last_insert_rowid(),
            false => {
                let seq: i64 = self
                    .update
                    .query_row(values, |row| row.get(0))
                    .map_err(db_err)?;
                self.unindex.execute([seq]).map_err(db_err)?;
                seq
            }
        };
        if let Some(text) = search_text.filter(|t| !t.is_empty()) {
            self.index.execute(params![seq, text]).map_err(db_err)?;
        }
        Ok(())
    }
}

/// Observations per multi-row INSERT: one statement run per 64 rows instead of per row
/// (6 parameters each, far below SQLite's limit).
const OBSERVATION_CHUNK: usize = 64;

/// `INSERT … VALUES (…), … (rows times) …` replacing an existing observation in place
/// (its `seq` is kept). Observations have no full-text index, so no rowids are needed.
fn observation_upsert(rows: usize) -> String {
    let values = vec!["(?, ?, ?, ?, ?, ?)"; rows].join(", ");
    format!(
        "INSERT INTO observations (id, thread, trace, kind, ts, body) VALUES {values}
         ON CONFLICT (id) DO UPDATE SET thread = excluded.thread, trace = excluded.trace,
             kind = excluded.kind, ts = excluded.ts, body = excluded.body"
    )
}

/// Write observations in chunks of [`OBSERVATION_CHUNK`] rows (the rest one by one, so
/// only two statements are ever prepared).
fn set_observations(
    tx: &Transaction<'_>,
    records: &[Record],
    keys: &mut Keys,
) -> Result<(), StorageError> {
    // Consecutive observations nearly always share thread and run: reuse the last keys.
    let mut last: [(Option<&str>, Option<i64>); 2] = [(None, None); 2];
    let mut interned = Vec::with_capacity(records.len());
    for r in records {
        let mut pair = [None; 2];
        for (slot, value) in [r.thread_id.as_deref(), r.trace_id.as_deref()]
            .into_iter()
            .enumerate()
        {
            if value.is_none() || last[slot].0 != value {
                last[slot] = (value, keys.get(tx, value)?);
            }
            pair[slot] = last[slot].1;
        }
        interned.push((ids::stored(&r.id), pair[0], pair[1]));
    }
    let mut chunk = tx
        .prepare_cached(&observation_upsert(OBSERVATION_CHUNK))
        .map_err(db_err)?;
    let mut single = tx.prepare_cached(&observation_upsert(1)).map_err(db_err)?;
    let rows = records.chunks(OBSERVATION_CHUNK);
    for (records, interned) in rows.zip(interned.chunks(OBSERVATION_CHUNK)) {
        let mut values: Vec<&dyn ToSql> = Vec::with_capacity(records.len() * 6);
        for (r, (id, thread, trace)) in records.iter().zip(interned) {
            values.extend_from_slice(&[id, thread, trace, &r.kind, &r.timestamp, &r.body]);
        }
        match records.len() {
            OBSERVATION_CHUNK => chunk.execute(&*values),
            _ => values
                .chunks(6)
                .try_for_each(|row| single.execute(row).map(drop))
                .map(|()| 0),
        }
        .map_err(db_err)?;
    }
    Ok(())
}

/// Delete the records `rows` selects and their search text: `rows` is a `WHERE` clause
/// over `records` with one `?1` parameter.
fn delete_records(
    tx: &Transaction<'_>,
    rows: &str,
    arg: &dyn ToSql,
) -> Result<usize, StorageError> {
    tx.execute(
        &format!("DELETE FROM search_index WHERE rowid IN (SELECT seq FROM records WHERE {rows})"),
        [arg],
    )
    .map_err(db_err)?;
    tx.execute(&format!("DELETE FROM records WHERE {rows}"), [arg])
        .map_err(db_err)
}

/// Delete the observations `rows` selects (a `WHERE` clause with one `?1` parameter).
fn delete_observations(
    tx: &Transaction<'_>,
    rows: &str,
    arg: &dyn ToSql,
) -> Result<usize, StorageError> {
    tx.execute(&format!("DELETE FROM observations WHERE {rows}"), [arg])
        .map_err(db_err)
}

/// Compare and swap inside the batch's IMMEDIATE transaction: no other process writes
/// between the read and the write, so two claims on one record cannot both succeed.
fn swap(
    tx: &Transaction<'_>,
    collection: Collection,
    id: &str,
    expected: Option<&str>,
    new: Option<&Record>,
) -> Result<bool, StorageError> {
    let current: Option<String> = tx
        .prepare_cached("SELECT body FROM records WHERE collection = ?1 AND id = ?2")
        .and_then(|mut s| {
            s.query_row(params![collection.as_str(), id], |row| row.get(0))
                .optional()
        })
        .map_err(db_err)?;
    if current.as_deref() != expected {
        return Ok(false);
    }
    match new {
        Some(record) => set_records(tx, collection, std::slice::from_ref(record))?,
        None => {
            delete_record(tx, collection, id)?;
        }
    }
    Ok(true)
}

/// Insert or replace records of a collection kept in `records` (not observations).
fn set_records(
    tx: &Transaction<'_>,
    collection: Collection,
    records: &[Record],
) -> Result<(), StorageError> {
    let mut upsert = Upsert::prepare(tx)?;
    for r in records {
        let values: [&dyn ToSql; 8] = [
            &collection.as_str(),
            &r.id,
            &r.thread_id,
            &r.trace_id,
            &r.kind,
            &r.timestamp,
            &r.body,
            &r.parent,
        ];
        upsert.row(tx, &values, r.search_text.as_deref())?;
    }
    Ok(())
}

/// Delete one record of a collection kept in `records`; whether it was there.
fn delete_record(
    tx: &Transaction<'_>,
    collection: Collection,
    id: &str,
) -> Result<bool, StorageError> {
    let rows = format!("collection = '{}' AND id = ?1", collection.as_str());
    Ok(delete_records(tx, &rows, &id)? > 0)
}

const THREAD_KEY: &str = "thread = (SELECT key FROM keys WHERE value = ?1)";

fn apply(tx: &Transaction<'_>, op: &WriteOp, keys: &mut Keys) -> Result<bool, StorageError> {
    match op {
        WriteOp::Set(Collection::Observations, records) => {
            set_observations(tx, records, keys)?;
            Ok(true)
        }
        WriteOp::Set(collection, records) => {
            set_records(tx, *collection, records)?;
            Ok(true)
        }
        WriteOp::Delete(Collection::Observations, id) => {
            Ok(delete_observations(tx, "id = ?1", &ids::stored(id))? > 0)
        }
        WriteOp::Delete(collection, id) => delete_record(tx, *collection, id),
        WriteOp::Swap {
            collection,
            id,
            expected,
            new,
        } => swap(tx, *collection, id, expected.as_deref(), new.as_ref()),
        WriteOp::DeleteThread(thread_id) => {
            let records = delete_records(tx, "thread_id = ?1", thread_id)?;
            let observations = delete_observations(tx, THREAD_KEY, thread_id)?;
            Ok(records + observations > 0)
        }
        WriteOp::Clear(Collection::Observations) => {
            tx.execute("DELETE FROM observations", []).map_err(db_err)?;
            Ok(true)
        }
        WriteOp::Clear(collection) => {
            delete_records(tx, "collection = ?1", &collection.as_str())?;
            Ok(true)
        }
        WriteOp::Usage(records) => {
            super::ledger::record(tx, records)?;
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str) -> Job {
        let record = Record {
            id: id.into(),
            thread_id: Some("t1".into()),
            trace_id: None,
            kind: None,
            parent: None,
            timestamp: 1,
            search_text: None,
            body: "{}".into(),
        };
        Job {
            op: WriteOp::Set(Collection::Messages, vec![record]),
            reply: oneshot::channel().0,
        }
    }

    #[test]
    fn a_failing_job_spares_the_rest_of_its_batch() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::storage::migrations::migrate(&mut conn).unwrap();
        conn.execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON records WHEN NEW.id = 'bad'
             BEGIN SELECT RAISE(ABORT, 'refused by test'); END;",
        )
        .unwrap();
        let batch = [job("a"), job("bad"), job("b")];
        let outcomes = run_batch(&mut conn, &batch, &mut Keys::default());
        assert!(outcomes[0].is_ok() && outcomes[2].is_ok(), "{outcomes:?}");
        let err = outcomes[1].as_ref().unwrap_err().to_string();
        assert!(err.contains("refused by test"), "{err}");
        let ids: Vec<String> = conn
            .prepare("SELECT id FROM records ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ids, ["a", "b"]);
    }
}
