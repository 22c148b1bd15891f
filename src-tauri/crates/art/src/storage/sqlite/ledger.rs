//! The usage ledger in SQLite: runs are written to `usage` (a trigger keeps the
//! `usage_threads` and `usage_days` rollups), sums are read from a rollup.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, Transaction, params, params_from_iter};

use super::db_err;
use crate::storage::StorageError;
use crate::storage::ledger::{UsageKey, UsageQuery, UsageRecord, UsageSum};

/// The key's value of `value` (a thread or run id), interned if new.
fn key(tx: &Transaction<'_>, value: &str) -> Result<i64, StorageError> {
    tx.prepare_cached("INSERT INTO keys (value) VALUES (?1) ON CONFLICT (value) DO NOTHING")
        .and_then(|mut s| s.execute([value]))
        .map_err(db_err)?;
    tx.prepare_cached("SELECT key FROM keys WHERE value = ?1")
        .and_then(|mut s| s.query_row([value], |row| row.get(0)))
        .map_err(db_err)
}

/// Write runs; one already there is left as it was (and not counted twice).
pub(super) fn record(tx: &Transaction<'_>, records: &[UsageRecord]) -> Result<(), StorageError> {
    let as_sql = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    for r in records {
        let run = key(tx, &r.trace_id)?;
        let thread = key(tx, &r.thread_id)?;
        tx.prepare_cached(
            "INSERT OR IGNORE INTO usage (run, thread, provider, model, day, started_at,
                duration_ms, input, cached, output, thinking, cost)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )
        .and_then(|mut s| {
            s.execute(params![
                run,
                thread,
                r.provider,
                r.model,
                r.day,
                r.started_at,
                as_sql(r.duration_ms),
                as_sql(r.input_tokens),
                as_sql(r.cached_input_tokens),
                as_sql(r.output_tokens),
                as_sql(r.thinking_tokens),
                r.cost_nanos.map(as_sql),
            ])
        })
        .map_err(db_err)?;
    }
    Ok(())
}

fn column(key: UsageKey) -> &'static str {
    match key {
        UsageKey::Day => "d.day",
        UsageKey::Thread => "t.value",
        UsageKey::Provider => "d.provider",
        UsageKey::Model => "d.model",
    }
}

/// Sums from a rollup, grouped as asked, in key order: per thread from
/// `usage_threads`, everything else from the smaller `usage_days`.
pub(super) fn sum(conn: &Connection, query: &UsageQuery) -> Result<Vec<UsageSum>, StorageError> {
    let by_thread = query.group.contains(&UsageKey::Thread);
    let per_thread = by_thread || query.thread_id.is_some();
    let keys: Vec<&str> = query.group.iter().map(|k| column(*k)).collect();
    let mut sql = String::from("SELECT ");
    for k in &keys {
        sql.push_str(k);
        sql.push_str(", ");
    }
    sql.push_str(
        "sum(d.runs), sum(d.input), sum(d.cached), sum(d.output), sum(d.thinking),
         sum(d.duration_ms), sum(d.cost), sum(d.cost_runs), sum(d.unreported_input),
         sum(d.unreported_output) FROM ",
    );
    sql.push_str(match (per_thread, by_thread) {
        (false, _) => "usage_days d",
        (true, false) => "usage_threads d",
        (true, true) => "usage_threads d JOIN keys t ON t.key = d.thread",
    });
    sql.push_str(" WHERE TRUE");
    let mut args: Vec<SqlValue> = Vec::new();
    if let Some(thread) = &query.thread_id {
        sql.push_str(" AND d.thread = (SELECT key FROM keys WHERE value = ?)");
        args.push(thread.clone().into());
    }
    if let Some(day) = &query.since_day {
        sql.push_str(" AND d.day >= ?");
        args.push(day.clone().into());
    }
    if !keys.is_empty() {
        let list = keys.join(", ");
        sql.push_str(&format!(" GROUP BY {list} ORDER BY {list}"));
    }
    let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
    let n = keys.len();
    let count = |row: &rusqlite::Row<'_>, i: usize| -> rusqlite::Result<u64> {
        let v: Option<i64> = row.get(n + i)?;
        Ok(u64::try_from(v.unwrap_or(0)).unwrap_or(0))
    };
    let rows = stmt
        .query_map(params_from_iter(args), |row| {
            Ok(UsageSum {
                keys: (0..n).map(|i| row.get(i)).collect::<Result<_, _>>()?,
                runs: count(row, 0)?,
                input_tokens: count(row, 1)?,
                cached_input_tokens: count(row, 2)?,
                output_tokens: count(row, 3)?,
                thinking_tokens: count(row, 4)?,
                duration_ms: count(row, 5)?,
                reported_cost_nanos: count(row, 6)?,
                reported_runs: count(row, 7)?,
                unreported_input_tokens: count(row, 8)?,
                unreported_output_tokens: count(row, 9)?,
            })
        })
        .map_err(db_err)?;
    let sums: Vec<UsageSum> = rows.collect::<Result<_, _>>().map_err(db_err)?;
    // Without grouping, SQL answers one row of nothing for an empty ledger.
    Ok(sums.into_iter().filter(|s| s.runs > 0).collect())
}
