//! The read side: queries run on pooled read-only connections, concurrently with the
//! writer (WAL readers see the last committed state).

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params, params_from_iter};

use super::{db_err, ids};
use crate::storage::{Collection, Link, Order, Query, Record, SearchHit, StorageError};

/// How to read one collection: the `SELECT … FROM … WHERE` producing
/// `id, thread id, trace id, kind, ts, body, parent` (taking the collection name as its first
/// parameter when `by_collection`), and its filter expressions.
struct Source {
    select: &'static str,
    by_collection: bool,
    thread: &'static str,
    /// Any of some ids; `{}` stands for the list of placeholders.
    ids: &'static str,
    /// Any of some runs; `{}` stands for the list of placeholders.
    traces: &'static str,
    id: &'static str,
    /// Any of some kinds; `{}` stands for the list of placeholders.
    kinds: &'static str,
    ts: &'static str,
    seq: &'static str,
    /// Tie-breaks after the timestamp in the order of its thread index, so a scan
    /// reads the index in order instead of sorting each run of equal timestamps.
    index_ties: &'static str,
    /// The id as the table stores it.
    id_value: fn(&str) -> SqlValue,
}

const RECORDS: Source = Source {
    select: "SELECT id, thread_id, trace_id, kind, ts, body, parent_id FROM records WHERE collection = ?",
    by_collection: true,
    thread: "thread_id = ?",
    ids: "id IN ({})",
    traces: "trace_id IN ({})",
    id: "id = ?",
    kinds: "kind IN ({})",
    ts: "ts",
    seq: "seq",
    index_ties: "seq",
    id_value: |id| SqlValue::Text(id.to_owned()),
};

const OBSERVATIONS: Source = Source {
    select: "SELECT o.id, t.value, x.value, o.kind, o.ts, o.body, NULL FROM observations o
             LEFT JOIN keys t ON t.key = o.thread LEFT JOIN keys x ON x.key = o.trace
             WHERE TRUE",
    by_collection: false,
    thread: "o.thread = (SELECT key FROM keys WHERE value = ?)",
    ids: "o.id IN ({})",
    traces: "o.trace IN (SELECT key FROM keys WHERE value IN ({}))",
    id: "o.id = ?",
    kinds: "o.kind IN ({})",
    ts: "o.ts",
    seq: "o.seq",
    index_ties: "o.kind {dir}, o.seq",
    id_value: |id| ids::stored(id).to_value(),
};

/// The source of a collection and the arguments its `select` takes.
fn source(collection: Collection) -> (&'static Source, Vec<SqlValue>) {
    let src = match collection {
        Collection::Observations => &OBSERVATIONS,
        _ => &RECORDS,
    };
    let args = match src.by_collection {
        true => vec![collection.as_str().to_owned().into()],
        false => Vec::new(),
    };
    (src, args)
}

fn row_to_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
    Ok(Record {
        id: ids::read(row.get_ref(0)?).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, e.into())
        })?,
        thread_id: row.get(1)?,
        trace_id: row.get(2)?,
        kind: row.get(3)?,
        timestamp: row.get(4)?,
        search_text: None,
        body: row.get(5)?,
        parent: row.get(6)?,
    })
}

fn collect(conn: &Connection, sql: &str, args: Vec<SqlValue>) -> Result<Vec<Record>, StorageError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
    let rows = stmt
        .query_map(params_from_iter(args), row_to_record)
        .map_err(db_err)?;
    rows.collect::<Result<_, _>>().map_err(db_err)
}

pub(super) fn get(
    conn: &Connection,
    collection: Collection,
    id: &str,
) -> Result<Option<Record>, StorageError> {
    let (src, mut args) = source(collection);
    let sql = format!("{} AND {}", src.select, src.id);
    args.push((src.id_value)(id));
    Ok(collect(conn, &sql, args)?.pop())
}

/// How records with the same timestamp are ordered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ties {
    /// In insertion order.
    Inserted,
    /// In the thread index's order (cheaper; stable, but by kind first for observations).
    Indexed,
}

/// The SQL and arguments of `query` over `collection`.
fn statement(collection: Collection, query: &Query, ties: Ties) -> (String, Vec<SqlValue>) {
    let (src, mut args) = source(collection);
    let mut sql = src.select.to_owned();
    let mut filter = |clause: &str, arg: SqlValue| {
        sql.push_str(" AND ");
        sql.push_str(clause);
        args.push(arg);
    };
    if let Some(thread) = &query.thread_id {
        // With runs named, their index finds the rows (a run is in one thread): `+`
        // keeps the thread's term from picking the thread's index, which reads the
        // whole thread — one run's export (each run's, when traces are pushed) would
        // cost as much as its thread is long.
        let clause = match query.trace_ids.is_empty() {
            true => src.thread.to_owned(),
            false => format!("+{}", src.thread),
        };
        filter(&clause, thread.clone().into());
    }
    if let Some(before) = query.before {
        filter(&format!("{} < ?", src.ts), before.into());
    }
    if let Some(after) = query.after {
        filter(&format!("{} > ?", src.ts), after.into());
    }
    if !query.ids.is_empty() {
        let marks = vec!["?"; query.ids.len()].join(", ");
        sql.push_str(" AND ");
        sql.push_str(&src.ids.replace("{}", &marks));
        args.extend(query.ids.iter().map(|id| (src.id_value)(id)));
    }
    let mut any_of = |clause: &str, values: &[String]| {
        if !values.is_empty() {
            let marks = vec!["?"; values.len()].join(", ");
            sql.push_str(" AND ");
            sql.push_str(&clause.replace("{}", &marks));
            args.extend(values.iter().cloned().map(Into::into));
        }
    };
    any_of(src.traces, &query.trace_ids);
    any_of(src.kinds, &query.kinds);
    let direction = match query.order {
        Order::Ascending => "ASC",
        Order::Descending => "DESC",
    };
    let ties = match ties {
        Ties::Inserted => src.seq.to_owned(),
        Ties::Indexed => src.index_ties.replace("{dir}", direction),
    };
    sql.push_str(&format!(
        " ORDER BY {ts} {direction}, {ties} {direction}",
        ts = src.ts,
    ));
    if let Some(limit) = query.limit {
        sql.push_str(" LIMIT ?");
        args.push(i64::try_from(limit).unwrap_or(i64::MAX).into());
    }
    (sql, args)
}

pub(super) fn query(
    conn: &Connection,
    collection: Collection,
    query: &Query,
) -> Result<Vec<Record>, StorageError> {
    let (sql, args) = statement(collection, query, Ties::Inserted);
    collect(conn, &sql, args)
}

/// The links of a thread's records in `collection` (not observations), oldest first.
pub(super) fn links(
    conn: &Connection,
    collection: Collection,
    thread_id: &str,
) -> Result<Vec<Link>, StorageError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, parent_id, kind, ts FROM records WHERE collection = ?1 AND thread_id = ?2
             ORDER BY ts, seq",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![collection.as_str(), thread_id], |row| {
            Ok(Link {
                id: row.get(0)?,
                parent: row.get(1)?,
                kind: row.get(2)?,
                timestamp: row.get(3)?,
            })
        })
        .map_err(db_err)?;
    rows.collect::<Result<_, _>>().map_err(db_err)
}

/// How many records match `query` (order and limit aside).
pub(super) fn count(
    conn: &Connection,
    collection: Collection,
    query: &Query,
) -> Result<u64, StorageError> {
    let all = Query {
        limit: None,
        ..query.clone()
    };
    let (sql, args) = statement(collection, &all, Ties::Indexed);
    let sql = format!("SELECT COUNT(*) FROM ({sql})");
    let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
    let n: i64 = stmt
        .query_row(params_from_iter(args), |row| row.get(0))
        .map_err(db_err)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Hand the records of `query` to `deliver` in batches of `batch`, as they are read
/// (records with the same timestamp in the thread index's order);
/// stops early (without error) when `deliver` returns `false`.
pub(super) fn scan(
    conn: &Connection,
    collection: Collection,
    query: &Query,
    batch: usize,
    deliver: &mut dyn FnMut(Vec<Record>) -> bool,
) -> Result<(), StorageError> {
    let (sql, args) = statement(collection, query, Ties::Indexed);
    let mut stmt = conn.prepare(&sql).map_err(db_err)?;
    let mut rows = stmt.query(params_from_iter(args)).map_err(db_err)?;
    let mut chunk = Vec::with_capacity(batch);
    while let Some(row) = rows.next().map_err(db_err)? {
        chunk.push(row_to_record(row).map_err(db_err)?);
        if chunk.len() == batch
            && !deliver(std::mem::replace(&mut chunk, Vec::with_capacity(batch)))
        {
            return Ok(());
        }
    }
    if !chunk.is_empty() {
        deliver(chunk);
    }
    Ok(())
}

/// Turn user text into a safe FTS5 expression: every word a quoted prefix, all required.
pub(super) fn fts_expression(text: &str) -> Result<String, StorageError> {
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

/// Best matches by FTS5 rank (messages, including the TOOL messages that carry each
/// tool call's name, arguments and result).
pub(super) fn search(
    conn: &Connection,
    expression: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, StorageError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT r.collection, r.id, r.thread_id, r.kind,
                    snippet(search_index, 0, '[', ']', '…', 12)
             FROM search_index JOIN records r ON r.seq = search_index.rowid
             WHERE search_index MATCH ?1
             ORDER BY search_index.rank LIMIT ?2",
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
                row.get(4)?,
            ))
        })
        .map_err(db_err)?;
    let mut hits = Vec::new();
    for row in rows {
        let (collection, id, thread_id, kind, snippet) = row.map_err(db_err)?;
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
            kind,
            snippet,
        });
    }
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan SQLite picks for `query` on a real database file.
    fn plan(query: &Query, collection: Collection) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.sqlite3");
        drop(crate::storage::sqlite::SqliteStorage::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        let (sql, args) = statement(collection, query, Ties::Indexed);
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt
            .query_map(params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn a_runs_rows_are_found_by_the_runs_index_not_by_reading_its_thread() {
        let run = Query {
            trace_ids: vec!["run-1".into()],
            ..Query::thread("thread-1")
        };
        let observations = plan(&run, Collection::Observations);
        assert!(
            observations.contains("observations_trace_ts"),
            "{observations}"
        );
        let messages = plan(&run, Collection::Messages);
        assert!(messages.contains("records_trace_ts"), "{messages}");
        // A thread alone still reads its own index.
        let thread = plan(&Query::thread("thread-1"), Collection::Observations);
        assert!(thread.contains("observations_thread_ts"), "{thread}");
    }
}
