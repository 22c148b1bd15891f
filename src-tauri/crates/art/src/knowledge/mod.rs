//! Knowledge: the user's documents in named collections, cut into passages that keep
//! their place ([`chunk`]), stored with a full-text index ([`store`]) and searched by
//! the agent's `search_knowledge` tool, `art kb` and the Knowledge page. Documents are
//! read with the attachments' extractors ([`crate::attachments::document`]), in the
//! order they were queued, by whichever process claims them.

pub mod attached;
pub mod chunk;
pub mod embed;
pub mod files;
pub mod indexer;
mod schema;
pub mod store;
pub mod sync;

use std::path::{Path, PathBuf};

use art_types::knowledge::{Added, DocumentState, KnowledgeProblem};

use crate::attachments::{BlobId, document, sniff};
use chunk::Layout;
pub use indexer::Indexer;
pub use store::KnowledgeStore;
use store::{Claimed, Read};

/// The knowledge database's file in a data directory.
pub const DATABASE_FILE: &str = "knowledge.db";

/// What became of one claimed document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    /// The document.
    pub id: i64,
    /// Its file name.
    pub name: String,
    /// Where it ended up.
    pub state: DocumentState,
    /// Passages made (ready), or why not (failed, skipped).
    pub detail: String,
}

/// Queue the files at or under `paths` in `collection` (a file added again is read
/// again); with `keep_in_sync`, each folder among them is kept in sync from now on
/// ([`sync`]). The indexer, or [`index_next`], reads them.
pub fn add(
    store: &KnowledgeStore,
    collection: &str,
    paths: &[PathBuf],
    keep_in_sync: bool,
) -> Result<Added, KnowledgeProblem> {
    let mut added = Added::default();
    let mut queue = Vec::new();
    for path in paths {
        let unreadable = |e: std::io::Error| KnowledgeProblem::Unreadable {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        let found = files::find(path).map_err(unreadable)?;
        if keep_in_sync && path.is_dir() {
            let folder = std::path::absolute(path).map_err(unreadable)?;
            store.keep_in_sync(collection, &folder.to_string_lossy())?;
        }
        queue.extend(
            found
                .files
                .iter()
                .map(|f| (f.to_string_lossy().into_owned(), files::name_of(f))),
        );
        added.left_out.extend(found.left_out);
    }
    added.queued = store.queue_many(collection, &queue)?;
    Ok(added)
}

/// Index the oldest queued document, if any: read it whole, extract its text, cut it
/// into passages and store them. `None` when the queue is empty.
pub fn index_next(store: &KnowledgeStore) -> Result<Option<Indexed>, KnowledgeProblem> {
    match store.claim()? {
        Some(claimed) => index_claimed(store, claimed).map(Some),
        None => Ok(None),
    }
}

/// Index a document this process has claimed.
pub fn index_claimed(
    store: &KnowledgeStore,
    claimed: Claimed,
) -> Result<Indexed, KnowledgeProblem> {
    let path = Path::new(&claimed.path);
    let seen = std::fs::metadata(path).map(|meta| Seen::of(&meta));
    let outcome = match &seen {
        Ok(seen) => read(&claimed, *seen),
        Err(e) => Err((DocumentState::Failed, format!("cannot read it: {e}"))),
    };
    // What a refused file looked like, so that a rescan reads it again only once it
    // changes.
    let seen = seen.unwrap_or_default();
    let (state, detail) = match outcome {
        Ok((_, chunks)) if chunks.is_empty() => {
            let why = "no text to search (the file is empty)";
            store.refuse(claimed.id, DocumentState::Skipped, why, seen)?;
            (DocumentState::Skipped, why.to_owned())
        }
        Ok((facts, chunks)) => {
            store.store(claimed.id, &facts, &chunks)?;
            let passages = match chunks.len() {
                1 => "1 passage".to_owned(),
                n => format!("{n} passages"),
            };
            (DocumentState::Ready, passages)
        }
        Err((state, why)) => {
            store.refuse(claimed.id, state, &why, seen)?;
            (state, why)
        }
    };
    Ok(Indexed {
        id: claimed.id,
        name: claimed.name,
        state,
        detail,
    })
}

/// A file's size and modification time, as the database keeps them to notice a change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// Bytes.
    pub size: u64,
    /// Modification time (Unix ms; 0 when the system does not say).
    pub modified: i64,
}

impl Seen {
    /// From a file's metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self {
            size: meta.len(),
            modified,
        }
    }
}

/// The facts and passages of a claimed document (`seen` as it was just before), or the
/// state it ends in and why.
fn read(
    claimed: &Claimed,
    seen: Seen,
) -> Result<(Read, Vec<chunk::Chunk>), (DocumentState, String)> {
    let path = Path::new(&claimed.path);
    let failed = |why: String| (DocumentState::Failed, why);
    let bytes = std::fs::read(path).map_err(|e| failed(format!("cannot read it: {e}")))?;
    let format = sniff::sniff(&claimed.name, &bytes).map_err(|p| failed(p.to_string()))?;
    if format.is_image() {
        return Err((
            DocumentState::Skipped,
            "an image: only documents' text is searched".into(),
        ));
    }
    let extracted =
        document::extract(&claimed.name, format, &bytes).map_err(|p| failed(p.to_string()))?;
    let layout = match format {
        sniff::Format::Text if !is_markdown(&claimed.name) => Layout::Plain,
        _ => Layout::Headed,
    };
    let chunks = chunk::chunk(&extracted.text, layout);
    let facts = Read {
        size: bytes.len() as u64,
        modified: seen.modified,
        sha256: BlobId::of(&bytes).to_string(),
        pages: extracted.pages,
    };
    Ok((facts, chunks))
}

fn is_markdown(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".md", ".markdown", ".mdx"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

#[cfg(test)]
mod tests;
