//! The durable queue of spans waiting to be sent: a SQLite file of its own beside the
//! database (written as runs end, read and emptied by the sender, never on the agent's
//! write path). Each row is one run's spans as an encoded `resource_spans` entry, so a
//! batch is its rows' bytes one after another. Bounded: adding past the limit drops the
//! oldest rows and counts their spans, and the counts (sent, dropped, refused) are kept
//! with the queue, so what the status line says survives a restart.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

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

/// One queued run (or part of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its place in the queue (oldest first).
    pub id: i64,
    /// The run.
    pub trace_id: String,
    /// Spans in it.
    pub spans: u64,
    /// One encoded `resource_spans` entry.
    pub bytes: Vec<u8>,
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

/// The queue.
pub struct Outbox {
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL,
    spans INTEGER NOT NULL,
    bytes BLOB NOT NULL
);
-- What waits, counted from an index (never from the rows, which hold the spans).
CREATE INDEX IF NOT EXISTS queue_spans ON queue (id, spans);
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
        conn.pragma_update(None, "page_size", 65_536).map_err(err)?;
        crate::storage::sqlite::wal_mode(&conn, Duration::from_secs(5)).map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .and_then(|()| conn.pragma_update(None, "mmap_size", 256_i64 << 20))
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn with<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, OutboxError> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| OutboxError("a writer panicked".into()))?;
        work(&mut conn).map_err(err)
    }

    /// Queue `rows` (trace id, spans, bytes) in order, then drop the oldest rows while
    /// more than `limit` spans wait (never the newest row: a run larger than the whole
    /// limit is still sent). Returns the spans dropped.
    pub fn add(&self, rows: &[(String, u64, Vec<u8>)], limit: u64) -> Result<u64, OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            {
                let mut insert = tx.prepare_cached(
                    "INSERT INTO queue (trace_id, spans, bytes) VALUES (?, ?, ?)",
                )?;
                for (trace, spans, bytes) in rows {
                    insert.execute(params![trace, *spans as i64, bytes])?;
                }
            }
            let mut dropped = 0u64;
            let mut waiting: i64 =
                tx.query_row("SELECT COALESCE(SUM(spans), 0) FROM queue", [], |r| {
                    r.get(0)
                })?;
            while waiting as u64 > limit {
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
                waiting -= spans;
                dropped += spans as u64;
            }
            if dropped > 0 {
                bump(&tx, Tally::Dropped, dropped)?;
            }
            tx.commit()?;
            Ok(dropped)
        })
    }

    /// The oldest rows (after row `after`, when given), as many as fit in `max_bytes`
    /// (at least one, when any wait).
    pub fn take(&self, max_bytes: usize, after: Option<i64>) -> Result<Vec<Row>, OutboxError> {
        self.with(|conn| {
            let mut read = conn.prepare_cached(
                "SELECT id, trace_id, spans, bytes FROM queue WHERE id > ? ORDER BY id LIMIT 4096",
            )?;
            let mut rows = read.query([after.unwrap_or(i64::MIN)])?;
            let mut out = Vec::new();
            let mut size = 0;
            while let Some(r) = rows.next()? {
                let bytes: Vec<u8> = r.get(3)?;
                if !out.is_empty() && size + bytes.len() > max_bytes {
                    break;
                }
                size += bytes.len();
                out.push(Row {
                    id: r.get(0)?,
                    trace_id: r.get(1)?,
                    spans: r.get::<_, i64>(2)? as u64,
                    bytes,
                });
            }
            Ok(out)
        })
    }

    /// Remove `rows` from the queue, counting their spans as `tally`.
    pub fn remove(&self, rows: &[Row], tally: Tally) -> Result<(), OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let spans = delete(&tx, rows)?;
            bump(&tx, tally, spans)?;
            tx.commit()
        })
    }

    /// Remove `rows` the collector took, `rejected` of their spans refused by it
    /// (OTLP's partial success) and the rest sent.
    pub fn remove_taken(&self, rows: &[Row], rejected: u64) -> Result<(), OutboxError> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            let spans = delete(&tx, rows)?;
            let rejected = rejected.min(spans);
            bump(&tx, Tally::Sent, spans - rejected)?;
            if rejected > 0 {
                bump(&tx, Tally::Refused, rejected)?;
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
            tx.execute("DELETE FROM queue WHERE id = ?", [row.id])?;
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
        })
    }

    /// The counts now.
    pub fn counts(&self) -> Result<Counts, OutboxError> {
        self.with(|conn| {
            let (rows, spans): (i64, i64) = conn.query_row(
                "SELECT COUNT(*), COALESCE(SUM(spans), 0) FROM queue",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let tally = |t: Tally| -> rusqlite::Result<u64> {
                let value: Option<i64> = conn
                    .query_row("SELECT value FROM tallies WHERE key = ?", [t.key()], |r| {
                        r.get(0)
                    })
                    .optional()?;
                Ok(value.unwrap_or(0) as u64)
            };
            Ok(Counts {
                rows: rows as u64,
                spans: spans as u64,
                sent: tally(Tally::Sent)?,
                dropped: tally(Tally::Dropped)?,
                refused: tally(Tally::Refused)?,
            })
        })
    }
}

/// Delete `rows`; the spans of those that were there.
fn delete(conn: &Connection, rows: &[Row]) -> rusqlite::Result<u64> {
    let mut statement = conn.prepare_cached("DELETE FROM queue WHERE id = ?")?;
    let mut spans = 0;
    for row in rows {
        spans += row.spans * statement.execute([row.id])? as u64;
    }
    Ok(spans)
}

fn bump(conn: &Connection, tally: Tally, by: u64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO tallies (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = value + ?2",
        params![tally.key(), by as i64],
    )?;
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
        let rows = queue.take(usize::MAX, None).unwrap();
        assert_eq!(
            rows.iter().map(|r| r.trace_id.as_str()).collect::<Vec<_>>(),
            ["huge"]
        );
        queue.remove(&rows, Tally::Sent).unwrap();
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
        assert_eq!(first.len(), 2, "two rows of 4 bytes fit in 8");
        assert_eq!(
            queue.take(1, None).unwrap().len(),
            1,
            "at least one, even when too large"
        );
        // Read ahead: the rows after a batch on its way.
        let after = queue.take(100, Some(first[1].id)).unwrap();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].trace_id, "cccc");
        queue
            .split(&first[0], &[row("a1", 1), row("a2", 1)])
            .unwrap();
        let order: Vec<String> = queue
            .take(usize::MAX, None)
            .unwrap()
            .into_iter()
            .map(|r| r.trace_id)
            .collect();
        assert_eq!(order, ["a1", "a2", "bbbb", "cccc"]);
    }
}
