//! Persistence behind one trait, [`StorageAdapter`] (ART's StorageAdapter): records in
//! named collections, with the few fields that are queried kept as indexed columns and
//! the rest as a JSON body.
//!
//! Implementations: [`sqlite::SqliteStorage`] (the app: one file, WAL, versioned
//! migrations, one batching writer thread, concurrent readers, FTS5 search) and
//! [`memory::MemoryStorage`] (unit tests).

pub mod ledger;
pub mod memory;
pub mod sqlite;

pub(crate) mod migrations;

/// The collections the framework keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collection {
    /// Thread list entries (title, created / updated).
    Threads,
    /// Conversation messages.
    Messages,
    /// Observations.
    Observations,
    /// Thread configuration, one record per thread (id = thread id).
    ThreadConfigs,
    /// Agent state, one record per thread (id = thread id).
    ThreadStates,
    /// The prompt library (named system prompts; no thread).
    Prompts,
    /// MCP servers the user added (id = server name; no secrets in them).
    McpServers,
    /// Runs waiting for a decision on a tool call, one per thread (id = thread id):
    /// what they need to go on after a restart.
    SuspendedRuns,
    /// The run each busy thread has, and the process running it (id = thread id): one
    /// run per thread across processes.
    ActiveRuns,
    /// The prices the user entered per model (id = `provider/model`; no thread).
    Prices,
    /// The app's settings (`art_types::AppSettings`), one record (id `app`).
    Settings,
    /// Answers to MCP servers' questions given from another process (`art answer`),
    /// until the process whose call waits takes them (id = question id).
    Answers,
    /// The process groups of the stdio MCP servers running (id = group id), with the
    /// process that started each: what a process that died left running is ended by
    /// the next one.
    McpProcesses,
}

impl Collection {
    /// Every collection.
    pub const ALL: [Self; 13] = [
        Self::Threads,
        Self::Messages,
        Self::Observations,
        Self::ThreadConfigs,
        Self::ThreadStates,
        Self::Prompts,
        Self::McpServers,
        Self::SuspendedRuns,
        Self::ActiveRuns,
        Self::Prices,
        Self::Settings,
        Self::Answers,
        Self::McpProcesses,
    ];

    /// Storage name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Threads => "threads",
            Self::Messages => "messages",
            Self::Observations => "observations",
            Self::ThreadConfigs => "thread_configs",
            Self::ThreadStates => "thread_states",
            Self::Prompts => "prompts",
            Self::McpServers => "mcp_servers",
            Self::SuspendedRuns => "suspended_runs",
            Self::ActiveRuns => "active_runs",
            Self::Prices => "prices",
            Self::Settings => "settings",
            Self::Answers => "answers",
            Self::McpProcesses => "mcp_processes",
        }
    }
}

/// One stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Unique within its collection.
    pub id: String,
    /// Owning thread (indexed; deleting a thread deletes its records).
    pub thread_id: Option<String>,
    /// Run id (indexed).
    pub trace_id: Option<String>,
    /// Kind (observation type, message role; indexed).
    pub kind: Option<String>,
    /// The record it follows in its thread's tree (a message: the one before it on its
    /// branch), read back by [`StorageAdapter::links`] without the bodies.
    pub parent: Option<String>,
    /// Unix ms (indexed; the sort key).
    pub timestamp: i64,
    /// Text indexed for full-text search, if any. Observations are never indexed (they
    /// are the bulk of all rows and are written in bursts): tool calls are found through
    /// their TOOL messages, which carry the tool name, arguments and result.
    pub search_text: Option<String>,
    /// The document, as JSON text (stored as is: no intermediate `serde_json::Value`).
    pub body: String,
}

impl Record {
    /// Decode the body into `T`; a body that does not decode is [`StorageError::Corrupt`].
    pub fn decode<T: serde::de::DeserializeOwned>(
        &self,
        collection: Collection,
    ) -> Result<T, StorageError> {
        serde_json::from_str(&self.body).map_err(|e| StorageError::Corrupt {
            collection: collection.as_str(),
            id: self.id.clone(),
            message: e.to_string(),
        })
    }
}

/// Encode a document as JSON text. The framework's types serialise infallibly (string
/// map keys only), so a failure here is a bug, reported as a database error.
pub fn encode<T: serde::Serialize>(value: &T) -> Result<String, StorageError> {
    serde_json::to_string(value)
        .map_err(|e| StorageError::Database(format!("cannot encode a record: {e}")))
}

/// What [`StorageAdapter::swap`] refuses: observations (their own table, never
/// claimed) and a new record under another id.
pub(crate) fn check_swap(
    collection: Collection,
    id: &str,
    new: Option<&Record>,
) -> Result<(), StorageError> {
    if collection == Collection::Observations {
        return Err(StorageError::Database(
            "observations cannot be compared and swapped".into(),
        ));
    }
    match new {
        Some(record) if record.id != id => Err(StorageError::Database(format!(
            "a swap of {id:?} cannot write {:?}",
            record.id
        ))),
        _ => Ok(()),
    }
}

/// Sort order by timestamp (ties broken by insertion order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    #[default]
    Ascending,
    /// Newest first.
    Descending,
}

/// A query over one collection. Empty fields do not filter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Only these ids (empty: all).
    pub ids: Vec<String>,
    /// Only this thread.
    pub thread_id: Option<String>,
    /// Only these runs (empty: all).
    pub trace_ids: Vec<String>,
    /// Only these kinds.
    pub kinds: Vec<String>,
    /// Only records strictly older than this (unix ms).
    pub before: Option<i64>,
    /// Only records strictly newer than this (unix ms).
    pub after: Option<i64>,
    /// Sort order.
    pub order: Order,
    /// At most this many.
    pub limit: Option<usize>,
}

impl Query {
    /// Records of one thread.
    pub fn thread(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: Some(thread_id.into()),
            ..Self::default()
        }
    }

    /// Whether a record passes the filters (used by the in-memory store and tests).
    pub fn matches(&self, record: &Record) -> bool {
        let eq = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        };
        eq(&self.thread_id, &record.thread_id)
            && (self.ids.is_empty() || self.ids.contains(&record.id))
            && (self.trace_ids.is_empty()
                || record
                    .trace_id
                    .as_ref()
                    .is_some_and(|t| self.trace_ids.contains(t)))
            && (self.kinds.is_empty()
                || record.kind.as_ref().is_some_and(|k| self.kinds.contains(k)))
            && self.before.is_none_or(|b| record.timestamp < b)
            && self.after.is_none_or(|a| record.timestamp > a)
    }
}

/// A record's place in its thread's tree, without its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Record id.
    pub id: String,
    /// The record it follows ([`Record::parent`]).
    pub parent: Option<String>,
    /// Its kind (a message's role).
    pub kind: Option<String>,
    /// Unix ms.
    pub timestamp: i64,
}

/// A full-text search hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// Collection of the matching record.
    pub collection: Collection,
    /// Record id.
    pub id: String,
    /// Its thread.
    pub thread_id: Option<String>,
    /// Its kind (for messages, the role).
    pub kind: Option<String>,
    /// Excerpt with the match marked by `[` and `]`.
    pub snippet: String,
}

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The database file could not be opened or migrated.
    #[error("cannot open the database at {path}: {message}")]
    Open {
        /// Database path.
        path: String,
        /// What failed.
        message: String,
    },
    /// A query or write failed.
    #[error("database error: {0}")]
    Database(String),
    /// A stored document could not be decoded.
    #[error("stored data is corrupt in {collection}/{id}: {message}")]
    Corrupt {
        /// Collection.
        collection: &'static str,
        /// Record id.
        id: String,
        /// Decoder message.
        message: String,
    },
    /// A search expression was not understood.
    #[error("invalid search: {0}")]
    InvalidSearch(String),
    /// The storage was shut down.
    #[error("the storage has been closed")]
    Closed,
}

/// Batches of records as a scan reads them (see [`StorageAdapter::scan`]).
pub type RecordStream = tokio::sync::mpsc::Receiver<Result<Vec<Record>, StorageError>>;

/// Batches a scan reads ahead of its consumer.
pub const SCAN_QUEUE: usize = 4;

/// Persistence used by the repositories (ART's StorageAdapter).
#[async_trait::async_trait]
pub trait StorageAdapter: Send + Sync {
    /// One record by id.
    async fn get(&self, collection: Collection, id: &str) -> Result<Option<Record>, StorageError>;
    /// Insert or replace records, atomically as one batch.
    async fn set(&self, collection: Collection, records: Vec<Record>) -> Result<(), StorageError>;
    /// Remove one record; `false` if it was not there.
    async fn delete(&self, collection: Collection, id: &str) -> Result<bool, StorageError>;
    /// Compare and swap, atomically across processes: if record `id`'s body is
    /// `expected` (`None`: there is no such record), replace it with `new` (`None`:
    /// remove it) and answer `true`; otherwise change nothing and answer `false`. A
    /// `new` record must have id `id`. What one-of-a-kind claims are made of.
    async fn swap(
        &self,
        collection: Collection,
        id: &str,
        expected: Option<&str>,
        new: Option<Record>,
    ) -> Result<bool, StorageError>;
    /// Records matching a query.
    async fn query(
        &self,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Record>, StorageError>;
    /// The links of one thread's records, oldest first (ties in insertion order): its
    /// tree, read without a single body.
    async fn links(
        &self,
        collection: Collection,
        thread_id: &str,
    ) -> Result<Vec<Link>, StorageError>;
    /// How many records match a query (its order and limit aside).
    async fn count(&self, collection: Collection, query: &Query) -> Result<u64, StorageError>;
    /// Records matching a query, in batches of at most `batch`, read while the consumer
    /// works (records with the same timestamp in an order that is stable for the same
    /// data but, unlike [`Self::query`], not necessarily insertion order): at most [`SCAN_QUEUE`] batches wait, so exporting millions of records
    /// holds only a few thousand in memory. Dropping the stream stops the read. Needs
    /// a Tokio runtime.
    fn scan(&self, collection: Collection, query: Query, batch: usize) -> RecordStream;
    /// Record finished runs' usage; a run already recorded is left as it was.
    async fn record_usage(&self, records: Vec<ledger::UsageRecord>) -> Result<(), StorageError>;
    /// Usage summed as `query` asks, groups in key order.
    async fn usage(
        &self,
        query: &ledger::UsageQuery,
    ) -> Result<Vec<ledger::UsageSum>, StorageError>;
    /// Remove every record of a thread in every collection (cascade delete; the usage
    /// ledger keeps its runs).
    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError>;
    /// Remove everything in a collection.
    async fn clear(&self, collection: Collection) -> Result<(), StorageError>;
    /// Full-text search over indexed text; words are matched as prefixes.
    async fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>, StorageError>;
}
