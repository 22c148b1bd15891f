//! The Knowledge page's commands: collections, their documents, adding files or a
//! folder (chosen in the system's picker and read by the backend: the page never names
//! a path), the background indexer's progress and cancel, and a search to try a
//! collection out. A refusal is a `KNOWLEDGE` error whose details are the
//! [`KnowledgeProblem`](crate::knowledge::KnowledgeProblem).

use serde::{Deserialize, Serialize};

/// Every collection, by name, with its documents counted by state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListCollections {}

/// Make an empty collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCollection {
    /// Its name: 1 to 80 characters, unique whatever the case.
    pub name: String,
}

/// Rename a collection; returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameCollection {
    /// The collection's id.
    pub id: String,
    /// Its new name.
    pub name: String,
}

/// Embed a collection with another model: the built-in one
/// ([`BUILTIN_EMBEDDER`](crate::knowledge::BUILTIN_EMBEDDER)) or a provider's, as
/// `provider:model`. A provider's model is tried first (one short text embedded), so a
/// missing model or a refused key is said at once and nothing changes; then its passages
/// are embedded again in the background while the old vectors answer. Returns the
/// collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetCollectionEmbedder {
    /// The collection's id.
    pub id: String,
    /// The model.
    pub model: String,
}

/// Delete a collection with its passages (the files themselves are not touched).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteCollection {
    /// The collection's id.
    pub id: String,
}

/// A collection's documents, in the order they were added, each with its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListDocuments {
    /// The collection's id.
    pub collection: String,
}

/// Choose files (or a folder: every file under it) in the system's picker and queue
/// them in a collection; the background indexer reads them. Nothing when the picker is
/// closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddToCollection {
    /// The collection's id.
    pub collection: String,
    /// Choose a folder rather than files.
    #[serde(default)]
    pub folder: bool,
    /// Keep the folder in sync: files added, changed or deleted there later are read
    /// again or taken out in the background, also after a restart.
    #[serde(default)]
    pub keep_in_sync: bool,
}

/// Add a question's documents to the thread's knowledge instead of sending them whole
/// (the offer made when they are longer than the model's window): into the first
/// collection the thread searches, else into a new one named after the thread; the
/// thread then searches it (its `search_knowledge` tool enabled). Images are left out
/// (no text to search).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddAttachedToKnowledge {
    /// The thread.
    pub thread_id: String,
    /// The question's attachments, as its message carries them.
    pub attachments: Vec<crate::Attachment>,
}

/// Stop keeping a folder in sync with its collection (its documents stay as they are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopSyncing {
    /// The collection's id.
    pub collection: String,
    /// The folder, as the collection lists it.
    pub folder: String,
}

/// Rescan every synced folder now rather than at the next interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncFolders {}

/// Take a document and its passages out of its collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveDocument {
    /// The document's id.
    pub id: i64,
}

/// Read every document of a collection again (its passages answer meanwhile).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReindexCollection {
    /// The collection's id.
    pub id: String,
}

/// Where the background indexer is (also sent as the `KNOWLEDGE` event as it moves).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexingStatus {}

/// Stop indexing: what is queued is taken off the queue (the document being read is
/// finished), each saying so.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelIndexing {}

/// The passages that best match a query, as the agent's `search_knowledge` finds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchKnowledge {
    /// What to look for.
    pub query: String,
    /// Only this collection (id); default: all.
    #[serde(default)]
    pub collection: Option<String>,
    /// How many passages (1 to 20; default 5).
    #[serde(default)]
    pub k: Option<u32>,
}

/// A cited passage's document, all its passages in order, to show the passage where it
/// is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadPassages {
    /// The cited passage's id.
    pub chunk: i64,
}
