//! Knowledge: the user's documents in named collections, cut into passages that keep
//! their place ([`chunk`]), stored with a full-text index ([`store`]) and searched by
//! the agent's `search_knowledge` tool, `art kb` and the Knowledge page. Documents are
//! read with the attachments' extractors ([`crate::attachments::document`]), in the
//! order they were queued, by whichever process claims them.

pub mod chunk;
mod schema;
pub mod store;

use std::path::Path;

use art_types::knowledge::{DocumentState, KnowledgeProblem};

use crate::attachments::{BlobId, document, sniff};
use chunk::Layout;
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

/// Index the oldest queued document, if any: read it whole, extract its text, cut it
/// into passages and store them. `None` when the queue is empty.
pub fn index_next(store: &KnowledgeStore) -> Result<Option<Indexed>, KnowledgeProblem> {
    let Some(claimed) = store.claim()? else {
        return Ok(None);
    };
    let outcome = read(&claimed);
    let (state, detail) = match outcome {
        Ok((_, chunks)) if chunks.is_empty() => {
            let why = "no text to search (the file is empty)";
            store.refuse(claimed.id, DocumentState::Skipped, why)?;
            (DocumentState::Skipped, why.to_owned())
        }
        Ok((facts, chunks)) => {
            store.store(claimed.id, &facts, &chunks)?;
            (DocumentState::Ready, format!("{} passages", chunks.len()))
        }
        Err((state, why)) => {
            store.refuse(claimed.id, state, &why)?;
            (state, why)
        }
    };
    Ok(Some(Indexed {
        id: claimed.id,
        name: claimed.name,
        state,
        detail,
    }))
}

/// The facts and passages of a claimed document, or the state it ends in and why.
fn read(claimed: &Claimed) -> Result<(Read, Vec<chunk::Chunk>), (DocumentState, String)> {
    let path = Path::new(&claimed.path);
    let failed = |why: String| (DocumentState::Failed, why);
    let meta = std::fs::metadata(path).map_err(|e| failed(format!("cannot read it: {e}")))?;
    let bytes = std::fs::read(path).map_err(|e| failed(format!("cannot read it: {e}")))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
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
        modified,
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
