//! The knowledge database's schema (`<data dir>/knowledge.db`, apart from the
//! conversations' database so indexing never waits on, or holds up, a run's writes).
//! Versioned in `PRAGMA user_version`; append only.

use rusqlite::Connection;

/// Migrations in order; index + 1 is the version each one produces.
const MIGRATIONS: &[&str] = &[
    // v1: collections, their documents and the documents' passages, the passages'
    // full-text index (kept in step by triggers) and their vectors per embedding model.
    // Ids are never reused (AUTOINCREMENT): a citation kept in a run's record must never
    // open another passage than the one the model read.
    "CREATE TABLE collections (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE COLLATE NOCASE,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        collection TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        name TEXT NOT NULL,
        size INTEGER NOT NULL DEFAULT 0,
        modified INTEGER NOT NULL DEFAULT 0,
        sha256 TEXT,
        state TEXT NOT NULL,
        detail TEXT,
        pages INTEGER,
        chunks INTEGER NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        claimed_by INTEGER,
        added_at INTEGER NOT NULL,
        UNIQUE (collection, path)
    );
    CREATE INDEX documents_state ON documents (state, collection);
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        document INTEGER NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        ord INTEGER NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        headings TEXT NOT NULL,
        page_from INTEGER,
        page_to INTEGER,
        line_from INTEGER NOT NULL,
        line_to INTEGER NOT NULL,
        UNIQUE (document, ord)
    );
    CREATE VIRTUAL TABLE chunk_text USING fts5 (
        text, content = 'chunks', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER chunks_indexed AFTER INSERT ON chunks BEGIN
        INSERT INTO chunk_text (rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER chunks_unindexed AFTER DELETE ON chunks BEGIN
        INSERT INTO chunk_text (chunk_text, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    CREATE TABLE vectors (
        chunk INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (chunk, model)
    ) WITHOUT ROWID;",
    // v2: folders kept in sync with their collection (rescanned in the background).
    "CREATE TABLE folders (
        collection TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (collection, path)
    ) WITHOUT ROWID;",
    // v3: the model each collection's passages are embedded with (vectors of others may
    // stay while a change of model is re-embedding, and keep answering until it is done).
    "ALTER TABLE collections ADD COLUMN embedder TEXT NOT NULL
        DEFAULT 'builtin:all-MiniLM-L6-v2';",
    // v4: the model whose complete vectors answer while a change of model re-embeds the
    // collection (NULL when none is pending).
    "ALTER TABLE collections ADD COLUMN previous_embedder TEXT;",
];

/// Bring `conn`'s schema up to date (as the conversations' database is: each migration
/// in its own transaction, safe when processes open a new data directory at once).
pub fn migrate(conn: &mut Connection) -> Result<(), String> {
    crate::storage::migrations::apply(conn, MIGRATIONS, MIGRATIONS.len() as i64).map(|_| ())
}
