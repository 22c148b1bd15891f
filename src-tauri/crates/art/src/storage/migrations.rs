//! Versioned schema migrations, tracked in `PRAGMA user_version`. Append only: a
//! released migration is never edited.

use rusqlite::Connection;

/// Migrations in order; index + 1 is the schema version each one produces.
const MIGRATIONS: &[&str] = &[
    // v1: generic records with indexed columns, and a full-text index.
    "CREATE TABLE records (
        seq INTEGER PRIMARY KEY,
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        thread_id TEXT,
        trace_id TEXT,
        kind TEXT,
        ts INTEGER NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (collection, id)
    );
    CREATE INDEX records_thread_kind_ts ON records (collection, thread_id, kind, ts);
    CREATE INDEX records_thread_ts ON records (collection, thread_id, ts);
    CREATE INDEX records_trace_ts ON records (collection, trace_id, ts) WHERE trace_id IS NOT NULL;
    CREATE VIRTUAL TABLE search_index USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');",
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Bring the database up to [`LATEST`]; each migration runs in its own transaction.
/// A database from a newer build is refused rather than damaged.
pub fn migrate(conn: &mut Connection) -> Result<i64, String> {
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if current > LATEST {
        return Err(format!(
            "the database has schema version {current}, newer than this app understands ({LATEST}); update the app"
        ));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index as i64 + 1;
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(sql)
            .and_then(|()| tx.pragma_update(None, "user_version", version))
            .map_err(|e| format!("migration to version {version} failed: {e}"))?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(LATEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_once_and_is_idempotent() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), LATEST);
        assert_eq!(migrate(&mut conn).unwrap(), LATEST);
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, LATEST);
    }

    #[test]
    fn refuses_a_newer_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", LATEST + 1)
            .unwrap();
        let err = migrate(&mut conn).unwrap_err();
        assert!(err.contains("newer"), "{err}");
    }
}
