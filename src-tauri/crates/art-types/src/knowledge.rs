//! Knowledge: collections of the user's documents, cut into passages and searched by the
//! agent's `search_knowledge` tool, `art kb` and the Knowledge page — all reading these
//! types.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A named set of documents searched together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Collection {
    /// Stable id (a UUID).
    pub id: String,
    /// Its name, unique whatever the case.
    pub name: String,
    /// When it was made (Unix ms).
    pub created_at: i64,
    /// Documents in it, by state.
    pub counts: StateCounts,
    /// Passages searchable now.
    pub chunks: u64,
    /// Folders kept in sync with it: files added, changed or deleted there are read
    /// again or taken out in the background.
    #[serde(default)]
    pub folders: Vec<String>,
    /// The model its passages are embedded with: [`BUILTIN_EMBEDDER`] or a provider's,
    /// as `provider:model`.
    #[serde(default = "builtin_embedder")]
    pub embedder: String,
    /// A change of model still under way, if one is.
    #[serde(default)]
    pub changing: Option<ModelChange>,
    /// Passages with a vector of its model: found by meaning too (the others by their
    /// words only, until they are embedded).
    #[serde(default)]
    pub embedded: u64,
}

/// The built-in embedding model (run in process, no server needed): what a new
/// collection is embedded with.
pub const BUILTIN_EMBEDDER: &str = "builtin:all-MiniLM-L6-v2";

fn builtin_embedder() -> String {
    BUILTIN_EMBEDDER.to_owned()
}

/// A collection's change of embedding model, under way: its passages get vectors of the
/// new model in the background while the model before answers its searches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChange {
    /// The model answering meanwhile.
    pub from: String,
    /// Passages with a vector of the new model so far (of the collection's `chunks`).
    pub embedded: u64,
}

/// A provider's embedding model as collections and vectors record it:
/// `provider:model` (`ollama:nomic-embed-text`).
pub fn provider_embedder(provider: &str, model: &str) -> String {
    format!("{provider}:{model}")
}

/// The provider and model a provider's embedding model id names
/// ([`provider_embedder`]); `None` for the built-in model or an id that names none.
pub fn provider_and_model(id: &str) -> Option<(&str, &str)> {
    id.split_once(':')
        .filter(|(p, m)| id != BUILTIN_EMBEDDER && !p.is_empty() && !m.is_empty())
}

/// How an embedding model is named to the user: the built-in one as such, a provider's
/// as `model (provider)`.
pub fn embedder_label(model: &str) -> String {
    if let Some(name) = BUILTIN_EMBEDDER
        .strip_prefix("builtin:")
        .filter(|_| model == BUILTIN_EMBEDDER)
    {
        return format!("{name} (built-in)");
    }
    match provider_and_model(model) {
        Some((provider, name)) => format!("{name} ({provider})"),
        None => model.to_owned(),
    }
}

/// The name the agent calls the knowledge search tool by (its card shows its sources).
pub const SEARCH_TOOL: &str = "search_knowledge";

/// What the `search_knowledge` tool returns to the model: the passages numbered for the
/// answer to cite, and what to do with them. The tool writes it and the tool card reads
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOutput {
    /// The passages, best first.
    pub results: Vec<Cited>,
    /// How to use them (or that nothing matched, and not to invent sources).
    pub note: String,
}

impl SearchOutput {
    /// What a call of `tool` returned, read as a search's passages: `None` for any other
    /// tool, or an output that is not one (the tool card, the Markdown export and the
    /// `art` printer all read a search's sources this way).
    pub fn of_tool(tool: &str, output: &serde_json::Value) -> Option<Self> {
        if tool != SEARCH_TOOL {
            return None;
        }
        serde_json::from_value::<Self>(output.clone()).ok()
    }
}

/// One passage as the model gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cited {
    /// The number the answer cites it by (`[1]`).
    #[serde(rename = "ref")]
    pub number: u64,
    /// The document's file name.
    pub document: String,
    /// Where in it (`p. 2, §Costs`).
    pub place: String,
    /// The passage.
    pub text: String,
    /// How well it matched (within this search).
    pub score: f64,
    /// The passage's id, to open it.
    pub chunk: i64,
}

/// How many documents of a collection are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateCounts {
    /// Waiting to be read.
    pub queued: u64,
    /// Being read now.
    pub indexing: u64,
    /// Searchable.
    pub ready: u64,
    /// Could not be read (each says why).
    pub failed: u64,
    /// Left out on purpose (each says why).
    pub skipped: u64,
}

impl StateCounts {
    /// The counts in words, ready first, the other states only when not zero:
    /// `["12 ready", "2 queued", "1 failed"]`.
    pub fn parts(&self) -> Vec<String> {
        let mut parts = vec![format!("{} ready", self.ready)];
        for (count, state) in [
            (self.queued, DocumentState::Queued),
            (self.indexing, DocumentState::Indexing),
            (self.failed, DocumentState::Failed),
            (self.skipped, DocumentState::Skipped),
        ] {
            if count > 0 {
                parts.push(format!("{count} {state}"));
            }
        }
        parts
    }
}

/// Where a document is on its way to being searchable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentState {
    /// Waiting to be read.
    Queued,
    /// Being read and cut into passages.
    Indexing,
    /// Its passages are searchable.
    Ready,
    /// Could not be read; the document's detail says why and what to do.
    Failed,
    /// Left out on purpose (an image, an empty file); the detail says why.
    Skipped,
}

impl DocumentState {
    /// Every state, in the order a document goes through them.
    pub const ALL: [Self; 5] = [
        Self::Queued,
        Self::Indexing,
        Self::Ready,
        Self::Failed,
        Self::Skipped,
    ];

    /// Its name in storage and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Indexing => "indexing",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for DocumentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so a column width given by the caller (`{:<8}`) is kept.
        f.pad(self.as_str())
    }
}

/// One document of a collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    /// Its id in the collection's database.
    pub id: i64,
    /// The collection it is in.
    pub collection: String,
    /// Where it was read from.
    pub path: String,
    /// Its file name.
    pub name: String,
    /// Bytes, when last seen.
    pub size: u64,
    /// Its state.
    pub state: DocumentState,
    /// Why it failed or was skipped, in words.
    pub detail: Option<String>,
    /// Pages, for paged formats.
    pub pages: Option<u32>,
    /// Its passages.
    pub chunks: u64,
    /// Estimated tokens of its text.
    pub tokens: u64,
}

/// A passage found by a search, with where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// The passage's id.
    pub chunk: i64,
    /// The document it is from.
    pub document: i64,
    /// That document's file name.
    pub name: String,
    /// And its path.
    pub path: String,
    /// Where in the document, as a citation says it (`p. 12, §Install`).
    pub place: String,
    /// The passage.
    pub text: String,
    /// How well it matches: higher is better (comparable within one search).
    pub score: f64,
    /// How the search found it: by its words, by its meaning, or both.
    #[serde(default)]
    pub matched: Matched,
}

/// How a search found a passage (what a result's badges say).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Matched {
    /// Its place among the passages ranked by their words (BM25), from 1.
    pub words: Option<u32>,
    /// Its cosine with the question, when it was found by meaning.
    pub meaning: Option<f32>,
}

/// What a search found, and how much of what it searched could only be searched by
/// words.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Searched {
    /// The passages, best first.
    pub hits: Vec<Hit>,
    /// Passages searched by their words only: not embedded yet, or no embedder loaded.
    pub words_only: u64,
}

/// One passage of a document, as the source viewer shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Passage {
    /// The passage's id (a search's `Hit::chunk`).
    pub chunk: i64,
    /// Where in the document (`p. 12, §Install`).
    pub place: String,
    /// The passage.
    pub text: String,
}

/// A document with its passages in order: what a cited source opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Passages {
    /// The document.
    pub document: Document,
    /// Its passages, first to last (neighbours overlap by a few lines).
    pub passages: Vec<Passage>,
}

/// What went wrong with a knowledge request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KnowledgeProblem {
    /// No collection has that name or id.
    #[error("there is no collection {name:?}")]
    NoCollection {
        /// What was asked for.
        name: String,
    },
    /// Another collection has that name.
    #[error("a collection named {name:?} exists already")]
    NameTaken {
        /// The name.
        name: String,
    },
    /// A name that cannot be one.
    #[error("a collection's name is 1 to 80 characters, not only spaces")]
    BadName,
    /// No document has that id (removed meanwhile).
    #[error("there is no document {id} in the collections: it was removed")]
    NoDocument {
        /// What was asked for.
        id: i64,
    },
    /// A passage that is no longer there (its document was read again or removed).
    #[error(
        "that passage is no longer in its collection: its document was read again or removed; search again"
    )]
    NoPassage {
        /// The passage's id.
        chunk: i64,
    },
    /// Attachments offered to a collection among which is no document (images have no
    /// text to search).
    #[error("none of these is a document: only a document's text can be searched")]
    NoDocuments,
    /// A search with nothing to look for.
    #[error("the search has no words to look for")]
    EmptyQuery,
    /// The file or folder could not be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The path.
        path: String,
        /// Why, from the system.
        reason: String,
    },
    /// The embedding model asked for cannot be used (no such provider or model, a key
    /// refused, the server not answering): nothing was changed.
    #[error("cannot embed with {model}: {reason}")]
    EmbedderUnavailable {
        /// The model, as `provider:model`.
        model: String,
        /// Why, from the provider or the check.
        reason: String,
    },
    /// The knowledge database failed.
    #[error("the knowledge database failed: {0}")]
    Database(String),
}

/// How far the background indexer is with its queue, for a progress bar: the documents
/// finished since the queue was last empty, of all those queued meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexProgress {
    /// Documents finished (ready, failed or skipped) in this round.
    pub done: u64,
    /// Those plus the ones still waiting.
    pub total: u64,
    /// The file being read now.
    pub current: Option<String>,
    /// Whether the indexer is at work (else the queue is empty).
    pub running: bool,
    /// Why the last round stopped early, if it did (cancelled, the database failed).
    pub stopped: Option<String>,
    /// Passages given a vector since the indexer last had none to embed.
    #[serde(default)]
    pub embedded: u64,
    /// Those plus the passages still waiting for one (searched by their words only
    /// meanwhile).
    #[serde(default)]
    pub to_embed: u64,
    /// The built-in embedder: not needed yet, being downloaded, ready, or unavailable.
    #[serde(default)]
    pub embedder: EmbedderState,
}

/// The built-in embedder as the indexer sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum EmbedderState {
    /// Not loaded: nothing has needed it yet.
    #[default]
    Idle,
    /// Its weights are being downloaded (bytes so far, of all).
    Downloading {
        /// Bytes in place.
        done: u64,
        /// Bytes in all.
        total: u64,
    },
    /// Loaded: passages and questions are embedded.
    Ready,
    /// It cannot be used now (offline, a corrupt download, a broken file); searches use
    /// words only until it can.
    Unavailable {
        /// Why, in words for the user.
        reason: String,
    },
}

impl IndexProgress {
    /// Finished share of the round, 0.0 to 1.0 (1.0 when there is nothing to do).
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            (self.done as f64 / self.total as f64).min(1.0)
        }
    }
}

/// Where a question's documents went when added to the thread's knowledge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddedAttached {
    /// The collection they were queued in (now searched by the thread).
    pub collection: Collection,
    /// Whether the collection was made for them.
    pub created: bool,
    /// What was queued and left out.
    pub added: Added,
}

/// What adding files or a folder to a collection did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// Files queued for indexing.
    pub queued: u64,
    /// Paths left out, each with why (unreadable folders; links, which may loop).
    pub left_out: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedding_model_id_names_its_provider_and_model_or_the_built_in_one() {
        let id = provider_embedder("ollama", "nomic-embed-text");
        assert_eq!(id, "ollama:nomic-embed-text");
        assert_eq!(
            provider_and_model(&id),
            Some(("ollama", "nomic-embed-text"))
        );
        assert_eq!(embedder_label(&id), "nomic-embed-text (ollama)");
        assert_eq!(provider_and_model(BUILTIN_EMBEDDER), None);
        assert_eq!(
            embedder_label(BUILTIN_EMBEDDER),
            "all-MiniLM-L6-v2 (built-in)"
        );
        for bad in ["ollama:", ":model", "no-colon"] {
            assert_eq!(provider_and_model(bad), None, "{bad}");
        }
    }
}
