//! The durable queue of spans waiting to be sent: a SQLite file of its own beside the
//! database (written as runs end, read and emptied by the sender, never on the agent's
//! write path). Each row is one run's spans as an encoded `resource_spans` entry, so a
//! batch is its rows' bytes one after another. Bounded: adding past the limit drops the
//! oldest rows and counts their spans. Every count — what waits (rows, spans) and what
//! was sent, dropped or refused — is kept in the queue's file and changed in the same
//! transaction as the rows, so what the status line says survives a restart and is
//! read without counting the rows.
//!
//! In front of the file, the runs that just ended wait in memory while the collector
//! takes what is sent ([`super::fresh`]): they reach the file only when it does not.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::fresh::{Fresh, FreshRun, Logged};

use rusqlite::{Connection, OptionalExtension, params};

/// The queue's file in a data directory.
pub const FILE: &str = "trace-outbox.sqlite";

/// Why the queue could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the trace queue: {0}")]
pub struct OutboxError(String);

impl OutboxError {
    /// A file around the queue could not be read.
    pub(super) fn io(path: &Path, e: &std::io::Error) -> Self {
        Self(format!("cannot read {}: {e}", path.display()))
    }
}

fn err(e: rusqlite::Error) -> OutboxError {
    OutboxError(e.to_string())
}

/// One queued run (or part of one), as taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its place in the queue (oldest first).
    pub id: i64,
    /// Spans in it.
    pub spans: u64,
    /// Bytes of its encoded `resource_spans` entry (the next ones in [`Rows::bytes`]).
    pub len: usize,
}

/// The oldest rows of the queue, taken to be sent: consecutive rows, and their entries
/// one after another in one buffer (a batch's body as it is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    /// The rows, oldest first.
    pub rows: Vec<Row>,
    /// Their entries.
    pub bytes: Vec<u8>,
}

impl Rows {
    /// Spans in them.
    pub fn spans(&self) -> u64 {
        self.rows.iter().map(|r| r.spans).sum()
    }
}

/// The queue's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs (or parts) waiting.
    pub rows: u64,
    /// Spans waiting.
    pub spans: u64,
    /// Spans the collector took, ever.
    pub sent: u64,
    /// Spans dropped because the queue was full, ever.
    pub dropped: u64,
    /// Spans the collector refused for good (a 4xx, or one too large to take), ever.
    pub refused: u64,
}

/// What is counted besides the rows.
#[derive(Debug, Clone, Copy)]
pub enum Tally {
    /// Taken by the collector.
    Sent,
    /// Dropped for room.
    Dropped,
    /// Refused by the collector.
    Refused,
}

impl Tally {
    fn key(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Dropped => "dropped",
            Self::Refused => "refused",
        }
    }
}

/// The tallies' keys for what waits.
const WAITING_ROWS: &str = "waiting_rows";
const WAITING_SPANS: &str = "waiting_spans";

/// The page size of a new queue file.
const PAGE_SIZE: i64 = 65_536;

/// The queue.
pub struct Outbox {
    conn: Mutex<Connection>,
    /// Runs in memory, in front of the file.
    fresh: Fresh,
    /// Spans the file may hold (the user's limit), for runs moved there from memory.
    limit: AtomicU64,
    /// The file's counts as last read (none after a change).
    counted: Mutex<Option<Counts>>,
    /// Runs with spans queued while they waited (`sent_early`), known without a read.
    early: Mutex<HashSet<String>>,
}

const SCHEMA: &str = "
-- Ids need not be AUTOINCREMENT's (a page more written each run): the newest row is never
-- dropped, so a new row's id is above every row a batch on its way has taken.
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY,
    trace_id TEXT NOT NULL,
    spans INTEGER NOT NULL,
    bytes BLOB NOT NULL
);
-- What waits is counted in `tallies` (files from before counted it from this index).
DROP INDEX IF EXISTS queue_spans;
CREATE TABLE IF NOT EXISTS tallies (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sent_early (
    trace_id TEXT NOT NULL,
    span_id BLOB NOT NULL,
    PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;
";

impl Outbox {
    /// Open (creating if needed) the queue at `path`.
    pub fn open(path: &Path) -> Result<Self, OutboxError> {
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        // Pages of 64 KB (a new file's; set before WAL): a run's row fits in one, so
        // reading a batch and deleting it touch no overflow chains; and reads through
        // a memory map rather than a copy per page (sending was a quarter `pread`).
        // Pages of 16 KB sent 7 % fewer spans a second and made no difference to what
        // a run's commit costs (`cargo xtask bench push`, 2026-12-01).
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(err)?;
        crate::storage::sqlite::wal_mode(&conn, Duration::from_secs(5)).map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .and_then(|()| conn.pragma_update(None, "mmap_size", 256_i64 << 20))
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        // A file from before what waits was tallied: counted once, from its rows.
        conn.execute(
            "INSERT OR IGNORE INTO tallies (key, value) \
             SELECT ?1, COUNT(*) FROM queue UNION ALL SELECT ?2, COALESCE(SUM(spans), 0) FROM queue",
            params![WAITING_ROWS, WAITING_SPANS],
        )
        .map_err(err)?;
        let early = {
            let mut read = conn
                .prepare("SELECT DISTINCT trace_id FROM sent_early")
                .map_err(err)?;
            let ids = read.query_map([], |r| r.get(0)).map_err(err)?;
            ids.collect::<rusqlite::Result<HashSet<String>>>()
                .map_err(err)?
        };
        Ok(Self {
            conn: Mutex::new(conn),
            fresh: Fresh::open(&path.with_extension("pending"))?,
            limit: AtomicU64::new(art_types::push::PushSettings::default().queue_limit),
            counted: Mutex::new(None),
            early: Mutex::new(early),
        })
    }

    /// Spans the file may hold, for runs moved there from memory (the user's limit;
    /// [`Self::add`] takes its own).
    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit.max(1), Ordering::Relaxed);
    }

    /// Keep a run that ended in memory for the sender (see [`super::fresh`]); given back
    /// when memory is full, to be queued in the file with [`Self::add`].
    pub fn add_fresh(&self, run: FreshRun) -> Result<Option<FreshRun>, OutboxError> {
        Ok(self.fresh.add(run)?.err())
    }

    /// Spans the file may hold, as last set.
    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// The oldest runs in memory that fit in `max_bytes` (at least one, when any wait),
    /// now on their way; none when some already are.
    pub fn take_fresh(&self, max_bytes: usize) -> Vec<Arc<FreshRun>> {
        self.fresh.take(max_bytes)
    }

    /// The runs on their way from memory were taken by the collector, `rejected` of
    /// their spans refused (OTLP's partial success): counted, and forgotten.
    pub fn fresh_taken(&self, spans: u64, rejected: u64) -> Result<(), OutboxError> {
        let rejected = rejected.min(spans);
        let counted = self.with(|conn| {
            let tx = conn.transaction()?;
            bump(&tx, Tally::Sent.key(), (spans - rejected) as i64)?;
            if rejected > 0 {
                bump(&tx, Tally::Refused.key(), rejected as i64)?;
            }
            tx.commit()
        });
        // Forgotten even if not counted: sending them again would not count them either.
        self.fresh.done()?;
        counted
    }

    /// The runs on their way from memory were refused for good: counted, and forgotten.
    pub fn fresh_refused(&self, spans: u64) -> Result<(), OutboxError> {
        let counted = self.with(|conn| bump(conn, Tally::Refused.key(), spans as i64));
        self.fresh.done()?;
        counted
    }

    /// Move every run in memory (on its way or waiting) into the file, where the limit
    /// applies: the collector did not take them, or the app quits. Returns the spans
    /// dropped for room.
    pub fn spill(&self) -> Result<u64, OutboxError> {
        let runs = self.fresh.drain();
        if runs.is_empty() {
            return Ok(0);
        }
        let rows: Vec<(String, u64, Vec<u8>)> = runs
            .iter()
            .map(|r| (r.trace_id.clone(), r.spans, r.bytes.clone()))
            .collect();
        let dropped = self.add(&rows, self.limit())?;
        self.fresh.done()?;
        Ok(dropped)
    }

    /// Run `trace_id` of `thread_id` starts (its spans to carry content or not): named
    /// in the log until [`Self::run_settled`], so a crash mid-run leaves it to recover.
    pub fn run_started(
        &self,
        trace_id: &str,
        thread_id: &str,
        content: bool,
    ) -> Result<(), OutboxError> {
        self.fresh.start(Logged {
            trace_id: trace_id.to_owned(),
            thread_id: thread_id.to_owned(),
            content,
        })
    }

    /// Run `trace_id` is queued (ended, or waiting with its spans so far): no longer
    /// one a crash would lose.
    pub fn run_settled(&self, trace_id: &str) -> Result<(), OutboxError> {
        self.fresh.settle(trace_id)
    }

    /// The app quits in good order: the runs under way are not named for recovery.
    pub fn forget_started(&self) -> Result<(), OutboxError> {
        self.fresh.forget_started()
    }

    /// Runs an earlier process kept in memory and did not see sent (it crashed): to be
    /// queued again from the database ([`super::TracePush::recover`]).
    pub fn left(&self) -> Vec<Logged> {
        self.fresh.left()
    }

    /// Queue `rows` made of runs an earlier process left ([`Self::left`]), and forget
    /// those runs.
    pub fn add_left(
        &self,
        runs: &[Logged],
        rows: &[(String, u64, Vec<u8>)],
    ) -> Result<u64, OutboxError> {
        let dropped = self.add(rows, self.limit())?;
        self.fresh.recovered(runs)?;
        Ok(dropped)
    }

    /// Whether run `trace_id` had spans queued while it waited.
    pub fn has_early(&self, trace_id: &str) -> bool {
        self.early
            .lock()
            .map_or(true, |early| early.contains(trace_id))
    }

    fn with<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, OutboxError> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| OutboxError("a writer panicked".into()))?;
        let done = work(&mut conn).map_err(err);
        // Counts are read again after any change (reads clear nothing they keep).
        if let Ok(mut counted) = self.counted.lock() {
            *counted = None;
        }
        done
    }

    /// Queue `rows` (trace id, spans, bytes) in order, then drop the oldest rows while
    /// more than `limit` spans wait (never the newest row: a run larger than the whole
    /// limit is still sent). Returns the spans dropped.
    pub fn add(&self, rows: &[(String, u64, Vec<u8>)], limit: u64) -> Result<u64, OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let mut added = 0;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO queue (trace_id, spans, bytes) VALUES (?, ?, ?)",
                )?;
                for (trace, spans, bytes) in rows {
                    insert.execute(params![trace, *spans as i64, bytes])?;
                    added += spans;
                }
            }
            let mut waiting = tally(&tx, WAITING_SPANS)? + added;
            let (mut dropped, mut dropped_rows) = (0u64, 0u64);
            while waiting > limit {
                let oldest: Option<(i64, i64)> = tx
                    .query_row(
                        "SELECT id, spans FROM queue WHERE id < (SELECT MAX(id) FROM queue) \
                         ORDER BY id LIMIT 1",
                        [],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                let Some((id, spans)) = oldest else { break };
                tx.execute("DELETE FROM queue WHERE id = ?", [id])?;
                waiting = waiting.saturating_sub(spans as u64);
                dropped += spans as u64;
                dropped_rows += 1;
            }
            if dropped > 0 {
                bump(&tx, Tally::Dropped.key(), dropped as i64)?;
            }
            waited(
                &tx,
                rows.len() as i64 - dropped_rows as i64,
                added as i64 - dropped as i64,
            )?;
            tx.commit()?;
            Ok(dropped)
        })
    }

    /// The oldest rows (after row `after`, when given), as many as fit in `max_bytes`
    /// (at least one, when any wait), read straight into one buffer.
    pub fn take(&self, max_bytes: usize, after: Option<i64>) -> Result<Rows, OutboxError> {
        self.with(|conn| {
            let mut read = conn.prepare_cached(
                "SELECT id, spans, bytes FROM queue WHERE id > ? ORDER BY id LIMIT 4096",
            )?;
            let mut rows = read.query([after.unwrap_or(i64::MIN)])?;
            let mut out = Rows {
                rows: Vec::new(),
                bytes: Vec::with_capacity(max_bytes.min(crate::push::BATCH_BYTES)),
            };
            while let Some(r) = rows.next()? {
                let entry = match r.get_ref(2)? {
                    rusqlite::types::ValueRef::Blob(entry) => entry,
                    _ => &[],
                };
                if !out.rows.is_empty() && out.bytes.len() + entry.len() > max_bytes {
                    break;
                }
                out.bytes.extend_from_slice(entry);
                out.rows.push(Row {
                    id: r.get(0)?,
                    spans: r.get::<_, i64>(1)? as u64,
                    len: entry.len(),
                });
            }
            Ok(out)
        })
    }

    /// Remove `rows` from the queue, counting their spans as `tally`.
    pub fn remove(&self, rows: &[Row], tally: Tally) -> Result<(), OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let (_, spans) = delete(&tx, rows)?;
            bump(&tx, tally.key(), spans as i64)?;
            tx.commit()
        })
    }

    /// Remove `rows` the collector took, `rejected` of their spans refused by it
    /// (OTLP's partial success) and the rest sent.
    pub fn remove_taken(&self, rows: &[Row], rejected: u64) -> Result<(), OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let (_, spans) = delete(&tx, rows)?;
            let rejected = rejected.min(spans);
            bump(&tx, Tally::Sent.key(), (spans - rejected) as i64)?;
            if rejected > 0 {
                bump(&tx, Tally::Refused.key(), rejected as i64)?;
            }
            tx.commit()
        })
    }

    /// Put `parts` (trace id, spans, bytes) in the place of `row`, in order: a run too
    /// large for the collector, split.
    pub fn split(&self, row: &Row, parts: &[(String, u64, Vec<u8>)]) -> Result<(), OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            // The parts take the row's place at the front: ids below the oldest.
            let first: i64 =
                tx.query_row("SELECT COALESCE(MIN(id), 1) FROM queue", [], |r| r.get(0))?;
            let (gone, _) = delete(&tx, std::slice::from_ref(row))?;
            if gone == 0 {
                // Already gone (sent or dropped meanwhile): nothing to put back.
                return tx.commit();
            }
            waited(
                &tx,
                parts.len() as i64,
                parts.iter().map(|(_, spans, _)| *spans as i64).sum(),
            )?;
            let start = first.min(row.id) - parts.len() as i64;
            for (i, (trace, spans, bytes)) in parts.iter().enumerate() {
                tx.execute(
                    "INSERT INTO queue (id, trace_id, spans, bytes) VALUES (?, ?, ?, ?)",
                    params![start + i as i64, trace, *spans as i64, bytes],
                )?;
            }
            tx.commit()
        })
    }

    /// The spans of run `trace_id` queued while it waited (ids as bytes).
    pub fn sent_early(&self, trace_id: &str) -> Result<Vec<Vec<u8>>, OutboxError> {
        self.with(|conn| {
            let mut read =
                conn.prepare_cached("SELECT span_id FROM sent_early WHERE trace_id = ?")?;
            let ids = read.query_map([trace_id], |r| r.get(0))?;
            ids.collect()
        })
    }

    /// Remember `span_ids` of run `trace_id` as queued while it waited (none: forget
    /// the run's, once it ended).
    pub fn mark_early(&self, trace_id: &str, span_ids: &[Vec<u8>]) -> Result<(), OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            if span_ids.is_empty() {
                tx.execute("DELETE FROM sent_early WHERE trace_id = ?", [trace_id])?;
            }
            {
                let mut insert = tx.prepare_cached(
                    "INSERT OR IGNORE INTO sent_early (trace_id, span_id) VALUES (?, ?)",
                )?;
                for id in span_ids {
                    insert.execute(params![trace_id, id])?;
                }
            }
            tx.commit()
        })?;
        if let Ok(mut early) = self.early.lock() {
            if span_ids.is_empty() {
                early.remove(trace_id);
            } else {
                early.insert(trace_id.to_owned());
            }
        }
        Ok(())
    }

    /// The counts now: those of the file (its tallies, read again only after a change,
    /// never counting its rows) and the runs in memory.
    pub fn counts(&self) -> Result<Counts, OutboxError> {
        let mut counts = {
            let conn = self
                .conn
                .lock()
                .map_err(|_| OutboxError("a writer panicked".into()))?;
            let mut counted = self
                .counted
                .lock()
                .map_err(|_| OutboxError("a reader panicked".into()))?;
            match *counted {
                Some(counts) => counts,
                None => {
                    let counts = read_counts(&conn).map_err(err)?;
                    *counted = Some(counts);
                    counts
                }
            }
        };
        let (runs, spans) = self.fresh.counts();
        counts.rows += runs;
        counts.spans += spans;
        Ok(counts)
    }
}

/// The tallies.
fn read_counts(conn: &Connection) -> rusqlite::Result<Counts> {
    let mut read = conn.prepare_cached("SELECT key, value FROM tallies")?;
    let mut rows = read.query([])?;
    let mut counts = Counts::default();
    while let Some(row) = rows.next()? {
        let key: String = row.get(0)?;
        let value = row.get::<_, i64>(1)?.max(0) as u64;
        match key.as_str() {
            WAITING_ROWS => counts.rows = value,
            WAITING_SPANS => counts.spans = value,
            "sent" => counts.sent = value,
            "dropped" => counts.dropped = value,
            "refused" => counts.refused = value,
            _ => {}
        }
    }
    Ok(counts)
}

/// Delete `rows` — consecutive rows as taken, in one statement over their ids (rows
/// queued since have higher ids; a split's parts, lower ones) — and count them out of
/// what waits; how many were still there, and their spans.
fn delete(conn: &Connection, rows: &[Row]) -> rusqlite::Result<(u64, u64)> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok((0, 0));
    };
    let mut statement =
        conn.prepare_cached("DELETE FROM queue WHERE id BETWEEN ? AND ? RETURNING spans")?;
    let (mut gone, mut spans) = (0u64, 0u64);
    let mut deleted = statement.query([first.id, last.id])?;
    while let Some(row) = deleted.next()? {
        gone += 1;
        spans += row.get::<_, i64>(0)?.max(0) as u64;
    }
    drop(deleted);
    waited(conn, -(gone as i64), -(spans as i64))?;
    Ok((gone, spans))
}

/// Change what waits by `rows` and `spans`.
fn waited(conn: &Connection, rows: i64, spans: i64) -> rusqlite::Result<()> {
    if rows != 0 {
        bump(conn, WAITING_ROWS, rows)?;
    }
    if spans != 0 {
        bump(conn, WAITING_SPANS, spans)?;
    }
    Ok(())
}

fn tally(conn: &Connection, key: &str) -> rusqlite::Result<u64> {
    let value: Option<i64> = conn
        .prepare_cached("SELECT value FROM tallies WHERE key = ?")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    Ok(value.unwrap_or(0).max(0) as u64)
}

fn bump(conn: &Connection, key: &str, by: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO tallies (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = value + ?2",
    )?
    .execute(params![key, by])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: &str, spans: u64) -> (String, u64, Vec<u8>) {
        (trace.to_owned(), spans, trace.as_bytes().to_vec())
    }

    #[test]
    fn the_oldest_are_dropped_past_the_limit_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let queue = Outbox::open(&dir.path().join(FILE)).unwrap();
        assert_eq!(queue.add(&[row("a", 4), row("b", 4)], 10).unwrap(), 0);
        // A third run of 4: 12 > 10, the oldest goes.
        assert_eq!(queue.add(&[row("c", 4)], 10).unwrap(), 4);
        // A run larger than the whole limit is kept (everything older goes).
        assert_eq!(queue.add(&[row("huge", 50)], 10).unwrap(), 8);
        let taken = queue.take(usize::MAX, None).unwrap();
        assert_eq!(taken.bytes, b"huge");
        queue.remove(&taken.rows, Tally::Sent).unwrap();
        let counts = queue.counts().unwrap();
        assert_eq!(
            (counts.rows, counts.spans, counts.sent, counts.dropped),
            (0, 0, 50, 12)
        );
        // Counts survive reopening.
        drop(queue);
        let queue = Outbox::open(&dir.path().join(FILE)).unwrap();
        assert_eq!(queue.counts().unwrap().dropped, 12);
    }

    #[test]
    fn take_fills_a_batch_and_a_split_keeps_the_place_in_line() {
        let dir = tempfile::tempdir().unwrap();
        let queue = Outbox::open(&dir.path().join(FILE)).unwrap();
        queue
            .add(&[row("aaaa", 2), row("bbbb", 2), row("cccc", 2)], 100)
            .unwrap();
        let first = queue.take(8, None).unwrap();
        assert_eq!(first.rows.len(), 2, "two rows of 4 bytes fit in 8");
        assert_eq!(first.rows.iter().map(|r| r.len).collect::<Vec<_>>(), [4, 4]);
        assert_eq!(first.bytes, b"aaaabbbb");
        assert_eq!(
            queue.take(1, None).unwrap().rows.len(),
            1,
            "at least one, even when too large"
        );
        // Read ahead: the rows after a batch on its way.
        let after = queue.take(100, Some(first.rows[1].id)).unwrap();
        assert_eq!(after.bytes, b"cccc");
        queue
            .split(&first.rows[0], &[row("a1", 1), row("a2", 1)])
            .unwrap();
        let all = queue.take(usize::MAX, None).unwrap();
        assert_eq!(all.bytes, b"a1a2bbbbcccc");
        assert_eq!(all.spans(), 6);
        // A batch's rows are removed together; what came after stays.
        queue.remove_taken(&all.rows[..3], 1).unwrap();
        assert_eq!(queue.take(usize::MAX, None).unwrap().bytes, b"cccc");
        let counts = queue.counts().unwrap();
        assert_eq!((counts.rows, counts.sent, counts.refused), (1, 3, 1));
    }

    /// What waits, counted from the rows themselves.
    fn counted(queue: &Outbox) -> (u64, u64) {
        queue
            .with(|c| {
                c.query_row(
                    "SELECT COUNT(*), COALESCE(SUM(spans), 0) FROM queue",
                    [],
                    |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
                )
            })
            .unwrap()
    }

    #[test]
    fn what_waits_is_tallied_with_every_change_and_counted_once_in_an_older_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let queue = Outbox::open(&path).unwrap();
        let waiting = |q: &Outbox| {
            let c = q.counts().unwrap();
            (c.rows, c.spans)
        };
        queue.add(&[row("a", 3), row("b", 5)], 100).unwrap();
        assert_eq!(waiting(&queue), (2, 8));
        queue.add(&[row("c", 96)], 100).unwrap(); // drops a and b
        assert_eq!(waiting(&queue), (1, 96));
        assert_eq!(waiting(&queue), counted(&queue));
        let taken = queue.take(usize::MAX, None).unwrap().rows;
        queue
            .split(&taken[0], &[row("c1", 40), row("c2", 56)])
            .unwrap();
        assert_eq!(waiting(&queue), (2, 96));
        // A row already gone (sent, or dropped for room) is not split back in.
        queue.split(&taken[0], &[row("x", 1), row("y", 1)]).unwrap();
        assert_eq!(waiting(&queue), (2, 96));
        let taken = queue.take(usize::MAX, None).unwrap().rows;
        queue.remove_taken(&taken[..1], 0).unwrap();
        // Removing a row twice counts it once.
        queue.remove(&taken[..1], Tally::Refused).unwrap();
        assert_eq!(waiting(&queue), (1, 56));
        assert_eq!(waiting(&queue), counted(&queue));
        let c = queue.counts().unwrap();
        assert_eq!((c.sent, c.dropped, c.refused), (40, 8, 0));
        // A file from before the tallies: what waits is counted once, at open.
        queue
            .with(|c| c.execute("DELETE FROM tallies WHERE key LIKE 'waiting_%'", []))
            .unwrap();
        drop(queue);
        let queue = Outbox::open(&path).unwrap();
        assert_eq!(waiting(&queue), (1, 56));
        assert_eq!(queue.counts().unwrap().sent, 40);
    }
}
