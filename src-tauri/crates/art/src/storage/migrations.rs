//! Versioned schema migrations, tracked in `PRAGMA user_version`. Append only: a
//! released migration is never edited.

use rusqlite::{Connection, TransactionBehavior};

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
    // v3: observations are no longer full-text indexed (indexing them cost a fifth of
    // the insert rate); tool calls are found through their TOOL messages, whose search
    // text now holds the tool name and arguments besides the result. Canonical UUID ids
    // of observations are stored as 16 bytes (see `sqlite::ids`).
    "DROP TABLE observation_search;
    DELETE FROM search_index WHERE rowid IN
        (SELECT seq FROM records WHERE collection = 'messages' AND kind = 'TOOL');
    INSERT INTO search_index (rowid, text)
        SELECT seq, concat_ws(' ', json_extract(body, '$.metadata.toolName'),
                              json_extract(body, '$.metadata.arguments'),
                              json_extract(body, '$.content'))
        FROM records WHERE collection = 'messages' AND kind = 'TOOL';
    UPDATE observations SET id = unhex(replace(id, '-', ''))
        WHERE length(id) = 36 AND id = lower(id)
          AND substr(id, 9, 1) = '-' AND substr(id, 14, 1) = '-'
          AND substr(id, 19, 1) = '-' AND substr(id, 24, 1) = '-'
          AND length(replace(id, '-', '')) = 32
          AND unhex(replace(id, '-', '')) IS NOT NULL;",
    // v4: messages form a tree. Each knows the message before it on its branch
    // (`parent_id`, also in its body as `parentId`), and each thread its active branch's
    // last message (`head` in its body). Threads so far are one branch: a message's
    // parent is the one before it, the head the newest. A thread's tree is read from an
    // index that holds it whole: the new column comes after the body, which a table
    // read steps over (overflow pages and all: 5,000 messages of 800-byte bodies read
    // in 3.0 ms from the table, 1.1 ms from the index, sqlite3 3.40 here). It replaces
    // the thread index it starts with.
    "ALTER TABLE records ADD COLUMN parent_id TEXT;
    DROP INDEX records_thread_ts;
    CREATE INDEX records_links ON records (collection, thread_id, ts, seq, id, parent_id, kind);
    WITH chain AS (
        SELECT seq, LAG(id) OVER (PARTITION BY thread_id ORDER BY ts, seq) AS parent
        FROM records WHERE collection = 'messages')
    UPDATE records SET parent_id = chain.parent, body = json_set(body, '$.parentId', chain.parent)
        FROM chain WHERE records.seq = chain.seq AND chain.parent IS NOT NULL;
    UPDATE records SET body = json_set(body, '$.head', (
            SELECT m.id FROM records m WHERE m.collection = 'messages' AND m.thread_id = records.id
            ORDER BY m.ts DESC, m.seq DESC LIMIT 1))
        WHERE collection = 'threads' AND EXISTS (
            SELECT 1 FROM records m WHERE m.collection = 'messages' AND m.thread_id = records.id);",
    // v5: the usage ledger. One row per finished run (`keys` interns its thread and run)
    // and two rollups kept by a trigger, so sums over many runs read few rows: per
    // thread, day, provider and model (a thread's totals, usage per thread), and per day,
    // provider and model (everything else). Runs finished before it are entered from
    // their FINAL_RESPONSE observations (usage, duration) and the model their last call
    // used.
    "CREATE TABLE usage (
        run INTEGER PRIMARY KEY,
        thread INTEGER NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        day TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        input INTEGER NOT NULL,
        cached INTEGER NOT NULL,
        output INTEGER NOT NULL,
        thinking INTEGER NOT NULL,
        cost INTEGER
    );
    CREATE TABLE usage_threads (
        thread INTEGER NOT NULL,
        day TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        runs INTEGER NOT NULL,
        input INTEGER NOT NULL,
        cached INTEGER NOT NULL,
        output INTEGER NOT NULL,
        thinking INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        cost INTEGER NOT NULL,
        cost_runs INTEGER NOT NULL,
        unreported_input INTEGER NOT NULL,
        unreported_output INTEGER NOT NULL,
        PRIMARY KEY (thread, day, provider, model)
    ) WITHOUT ROWID;
    CREATE TABLE usage_days (
        day TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        runs INTEGER NOT NULL,
        input INTEGER NOT NULL,
        cached INTEGER NOT NULL,
        output INTEGER NOT NULL,
        thinking INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        cost INTEGER NOT NULL,
        cost_runs INTEGER NOT NULL,
        unreported_input INTEGER NOT NULL,
        unreported_output INTEGER NOT NULL,
        PRIMARY KEY (day, provider, model)
    ) WITHOUT ROWID;
    CREATE TRIGGER usage_rollup AFTER INSERT ON usage BEGIN
        INSERT INTO usage_threads VALUES (NEW.thread, NEW.day, NEW.provider, NEW.model, 1,
            NEW.input, NEW.cached, NEW.output, NEW.thinking, NEW.duration_ms,
            coalesce(NEW.cost, 0), NEW.cost IS NOT NULL,
            iif(NEW.cost IS NULL, NEW.input, 0), iif(NEW.cost IS NULL, NEW.output + NEW.thinking, 0))
        ON CONFLICT (thread, day, provider, model) DO UPDATE SET
            runs = runs + 1, input = input + excluded.input, cached = cached + excluded.cached,
            output = output + excluded.output, thinking = thinking + excluded.thinking,
            duration_ms = duration_ms + excluded.duration_ms, cost = cost + excluded.cost,
            cost_runs = cost_runs + excluded.cost_runs,
            unreported_input = unreported_input + excluded.unreported_input,
            unreported_output = unreported_output + excluded.unreported_output;
        INSERT INTO usage_days VALUES (NEW.day, NEW.provider, NEW.model, 1,
            NEW.input, NEW.cached, NEW.output, NEW.thinking, NEW.duration_ms,
            coalesce(NEW.cost, 0), NEW.cost IS NOT NULL,
            iif(NEW.cost IS NULL, NEW.input, 0), iif(NEW.cost IS NULL, NEW.output + NEW.thinking, 0))
        ON CONFLICT (day, provider, model) DO UPDATE SET
            runs = runs + 1, input = input + excluded.input, cached = cached + excluded.cached,
            output = output + excluded.output, thinking = thinking + excluded.thinking,
            duration_ms = duration_ms + excluded.duration_ms, cost = cost + excluded.cost,
            cost_runs = cost_runs + excluded.cost_runs,
            unreported_input = unreported_input + excluded.unreported_input,
            unreported_output = unreported_output + excluded.unreported_output;
    END;
    INSERT OR IGNORE INTO usage
        SELECT o.trace, o.thread,
            coalesce((SELECT json_extract(e.body, '$.metadata.provider') FROM observations e
                      WHERE e.trace = o.trace AND e.kind = 'LLM_STREAM_END'
                      ORDER BY e.ts DESC LIMIT 1), ''),
            coalesce((SELECT json_extract(e.body, '$.metadata.model') FROM observations e
                      WHERE e.trace = o.trace AND e.kind = 'LLM_STREAM_END'
                      ORDER BY e.ts DESC LIMIT 1), ''),
            date(coalesce(json_extract(o.body, '$.span.startMs'), o.ts) / 1000, 'unixepoch', 'localtime'),
            coalesce(json_extract(o.body, '$.span.startMs'), o.ts),
            coalesce(json_extract(o.body, '$.content.metadata.totalDurationMs'), 0),
            coalesce(json_extract(o.body, '$.content.metadata.usage.inputTokens'), 0),
            coalesce(json_extract(o.body, '$.content.metadata.usage.cachedInputTokens'), 0),
            coalesce(json_extract(o.body, '$.content.metadata.usage.outputTokens'), 0),
            coalesce(json_extract(o.body, '$.content.metadata.usage.thinkingTokens'), 0),
            NULL
        FROM observations o
        WHERE o.kind = 'FINAL_RESPONSE' AND o.trace IS NOT NULL AND o.thread IS NOT NULL
          AND coalesce(json_extract(o.body, '$.content.metadata.status'), '') <> 'suspended'
        ORDER BY o.ts;",
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
    apply(conn, MIGRATIONS, target)
}

/// Bring a database whose schema is `migrations` (index + 1 is the version each one
/// produces, kept in `PRAGMA user_version`) up to `target`, each migration in its own
/// transaction; a database from a newer build is refused rather than damaged. Also the
/// knowledge database's (`knowledge::schema`).
pub(crate) fn apply(
    conn: &mut Connection,
    migrations: &[&str],
    target: i64,
) -> Result<i64, String> {
    let latest = migrations.len() as i64;
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if current > latest {
        return Err(format!(
            "the database has schema version {current}, newer than this app understands ({latest}); update the app"
        ));
    }
    let wanted = usize::try_from(target).unwrap_or(0).min(migrations.len());
    for (index, sql) in migrations
        .iter()
        .enumerate()
        .take(wanted)
        .skip(current as usize)
    {
        let version = index as i64 + 1;
        // The write lock first, then the version again: another process opening the same
        // file at the same moment may have applied this step while we waited.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| e.to_string())?;
        let applied: i64 = tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(|e| e.to_string())?;
        if applied >= version {
            continue;
        }
        tx.execute_batch(sql)
            .and_then(|()| tx.pragma_update(None, "user_version", version))
            .map_err(|e| format!("migration to version {version} failed: {e}"))?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(current.max(target.min(latest)))
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
        assert_eq!(migrate_to(&mut conn, 2).unwrap(), 2);
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

    #[test]
    fn v3_makes_tool_messages_searchable_by_tool_name_and_arguments() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate_to(&mut conn, 2).unwrap(), 2);
        conn.execute_batch(
            r#"INSERT INTO records (seq, collection, id, thread_id, trace_id, kind, ts, body) VALUES
                (1, 'messages', 'm1', 't1', 'r1', 'USER', 5, '{"content":"what is 6*7"}'),
                (2, 'messages', 'm2', 't1', 'r1', 'TOOL', 6,
                 '{"content":"{\"value\":42}","metadata":{"toolName":"calculator","arguments":{"expression":"6*7"}}}');
             INSERT INTO search_index (rowid, text) VALUES (1, 'what is 6*7'), (2, '{"value":42}');
             INSERT INTO observations (id, thread, trace, kind, ts, body) VALUES
                ('0190f3a2-7b1c-7def-8123-456789abcdef', NULL, NULL, 'PLAN', 1, '{}'),
                ('0190F3A2-7B1C-7DEF-8123-456789ABCDEF', NULL, NULL, 'PLAN', 2, '{}'),
                ('obs-1', NULL, NULL, 'PLAN', 3, '{}');"#,
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), LATEST);
        let hits = |word: &str| -> Vec<String> {
            conn.prepare(
                "SELECT r.id FROM search_index JOIN records r ON r.seq = search_index.rowid
                 WHERE search_index MATCH ?1 ORDER BY r.seq",
            )
            .unwrap()
            .query_map([word], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        assert_eq!(hits("calculator"), ["m2"]);
        assert_eq!(hits("expression"), ["m2"]);
        assert_eq!(hits("42"), ["m2"]);
        assert_eq!(hits("what"), ["m1"]);
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'observation_search'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0);
        // canonical UUID ids become their 16 bytes; anything else stays text
        let stored: Vec<(String, String)> = conn
            .prepare("SELECT typeof(id), hex(id) FROM observations ORDER BY ts")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let kinds: Vec<&str> = stored.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["blob", "text", "text"]);
        assert_eq!(stored[0].1, "0190F3A27B1C7DEF8123456789ABCDEF");
    }

    #[test]
    fn v4_makes_each_thread_one_branch_ending_at_its_newest_message() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate_to(&mut conn, 3).unwrap(), 3);
        conn.execute_batch(
            r#"INSERT INTO records (seq, collection, id, thread_id, trace_id, kind, ts, body) VALUES
                (1, 'threads', 't1', 't1', NULL, NULL, 9, '{"threadId":"t1","title":"a"}'),
                (2, 'threads', 't2', 't2', NULL, NULL, 9, '{"threadId":"t2","title":"b"}'),
                (3, 'messages', 'q1', 't1', 'r1', 'USER', 5, '{"messageId":"q1"}'),
                (4, 'messages', 'x1', 't3', 'r9', 'USER', 5, '{"messageId":"x1"}'),
                (5, 'messages', 'a1', 't1', 'r1', 'AI', 5, '{"messageId":"a1"}'),
                (6, 'messages', 'q2', 't1', 'r2', 'USER', 7, '{"messageId":"q2"}'),
                (7, 'thread_configs', 't1', 't1', NULL, NULL, 1, '{}');"#,
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), LATEST);
        let rows: Vec<(String, Option<String>, Option<String>)> = conn
            .prepare(
                "SELECT id, parent_id, json_extract(body, '$.parentId') FROM records
                 WHERE collection = 'messages' ORDER BY seq",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            rows,
            [
                ("q1".into(), None, None),
                ("x1".into(), None, None),
                ("a1".into(), some("q1"), some("q1")),
                ("q2".into(), some("a1"), some("a1")),
            ]
        );
        let head = |thread: &str| -> Option<String> {
            conn.query_row(
                "SELECT json_extract(body, '$.head') FROM records WHERE collection = 'threads' AND id = ?1",
                [thread],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(head("t1"), some("q2"));
        assert_eq!(head("t2"), None, "an empty thread has no head");
        let title: String = conn
            .query_row(
                "SELECT json_extract(body, '$.title') FROM records WHERE id = 't1' AND collection = 'threads'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(title, "a");
    }
}
