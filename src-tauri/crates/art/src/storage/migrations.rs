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
    // v2: observations get their own table. They are most of the rows and append-only,
    // so thread and run ids are interned as integers (`keys`, never deleted) and the
    // index entries shrink to a few bytes; existing observations move over with their
    // search text.
    "CREATE TABLE keys (key INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);
    CREATE TABLE observations (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        thread INTEGER,
        trace INTEGER,
        kind TEXT,
        ts INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX observations_thread_ts ON observations (thread, ts, kind);
    CREATE INDEX observations_trace_ts ON observations (trace, ts) WHERE trace IS NOT NULL;
    CREATE VIRTUAL TABLE observation_search USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
    INSERT OR IGNORE INTO keys (value)
        SELECT thread_id FROM records WHERE collection = 'observations' AND thread_id IS NOT NULL
        UNION SELECT trace_id FROM records WHERE collection = 'observations' AND trace_id IS NOT NULL;
    INSERT INTO observations (id, thread, trace, kind, ts, body)
        SELECT r.id, t.key, x.key, r.kind, r.ts, r.body FROM records r
        LEFT JOIN keys t ON t.value = r.thread_id
        LEFT JOIN keys x ON x.value = r.trace_id
        WHERE r.collection = 'observations' ORDER BY r.seq;
    INSERT INTO observation_search (rowid, text)
        SELECT o.seq, s.text FROM records r
        JOIN observations o ON o.id = r.id
        JOIN search_index s ON s.rowid = r.seq
        WHERE r.collection = 'observations';
    DELETE FROM search_index WHERE rowid IN (SELECT seq FROM records WHERE collection = 'observations');
    DELETE FROM records WHERE collection = 'observations';",
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Bring the database up to [`LATEST`]; each migration runs in its own transaction.
/// A database from a newer build is refused rather than damaged.
pub fn migrate(conn: &mut Connection) -> Result<i64, String> {
    migrate_to(conn, LATEST)
}

/// Bring the database up to `target` (tests use it to build databases of older builds).
pub fn migrate_to(conn: &mut Connection, target: i64) -> Result<i64, String> {
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if current > LATEST {
        return Err(format!(
            "the database has schema version {current}, newer than this app understands ({LATEST}); update the app"
        ));
    }
    let wanted = usize::try_from(target).unwrap_or(0).min(MIGRATIONS.len());
    for (index, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(wanted)
        .skip(current as usize)
    {
        let version = index as i64 + 1;
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(sql)
            .and_then(|()| tx.pragma_update(None, "user_version", version))
            .map_err(|e| format!("migration to version {version} failed: {e}"))?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(current.max(target.min(LATEST)))
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

    #[test]
    fn v2_moves_observations_with_their_search_text() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate_to(&mut conn, 1).unwrap(), 1);
        conn.execute_batch(
            "INSERT INTO records (seq, collection, id, thread_id, trace_id, kind, ts, body) VALUES
                (1, 'messages', 'm1', 't1', 'r1', 'USER', 5, '{}'),
                (2, 'observations', 'o1', 't1', 'r1', 'TOOL_CALL', 6, '{\"x\":1}'),
                (3, 'observations', 'o2', 't1', NULL, 'PLAN', 7, '{}');
             INSERT INTO search_index (rowid, text) VALUES (1, 'hello'), (2, 'calculator');",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), LATEST);
        let moved: Vec<(String, Option<String>, Option<String>, String)> = conn
            .prepare(
                "SELECT o.id, t.value, x.value, o.body FROM observations o
                 LEFT JOIN keys t ON t.key = o.thread LEFT JOIN keys x ON x.key = o.trace
                 ORDER BY o.seq",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let t1 = Some("t1".to_owned());
        assert_eq!(
            moved,
            [
                (
                    "o1".into(),
                    t1.clone(),
                    Some("r1".into()),
                    r#"{"x":1}"#.into()
                ),
                ("o2".into(), t1, None, "{}".into()),
            ]
        );
        let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(count("SELECT count(*) FROM records"), 1);
        assert_eq!(
            count("SELECT count(*) FROM search_index WHERE search_index MATCH 'hello'"),
            1
        );
        assert_eq!(count("SELECT count(*) FROM search_index"), 1);
        assert_eq!(
            count(
                "SELECT count(*) FROM observation_search JOIN observations o
                 ON o.seq = observation_search.rowid
                 WHERE observation_search MATCH 'calculator' AND o.id = 'o1'"
            ),
            1
        );
    }
}
