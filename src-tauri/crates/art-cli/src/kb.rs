//! `art kb …`: knowledge collections from the command line, on the same database the
//! app's agent searches (`search_knowledge`): make a collection, add files and folders
//! (indexed at once, one line per document), see each document's state, search.

use std::path::PathBuf;

use anyhow::bail;
use art::knowledge::{self, KnowledgeStore};
use art::tools::search_knowledge::NOTHING_FOUND;
use art_types::knowledge::{Collection, DocumentState};
use clap::Subcommand;

use crate::out::{noteln, sayln};

/// What `art kb` can do.
#[derive(Subcommand)]
pub enum Command {
    /// Make an empty collection.
    Create {
        /// Its name (unique, whatever the case).
        name: String,
    },
    /// The collections, with how many documents are in each state.
    List,
    /// Add files, or folders (every file under them, hidden ones and links aside), to a
    /// collection, and index them now. A file added again is read again.
    Add {
        /// The collection (name or id).
        collection: String,
        /// Files and folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Keep the folders in sync: the app rescans them in the background (and `art kb
        /// sync` now), reading new and changed files and taking out deleted ones.
        #[arg(long)]
        sync: bool,
    },
    /// Rescan the folders kept in sync (every collection's), and index what changed.
    Sync,
    /// The documents of a collection, each with its state and, when it failed or was
    /// skipped, why.
    Status {
        /// The collection (name or id).
        collection: String,
    },
    /// The passages that best match a query, numbered, with their document and place.
    Search {
        /// What to look for.
        query: String,
        /// Only this collection (name or id); default: all.
        #[arg(long)]
        collection: Option<String>,
        /// How many passages.
        #[arg(short, long, default_value_t = 5)]
        k: usize,
    },
    /// Delete a collection and its passages (the files themselves are not touched).
    Remove {
        /// The collection (name or id).
        collection: String,
    },
    /// Read every document of a collection again.
    Reindex {
        /// The collection (name or id).
        collection: String,
    },
}

/// Run `art kb` on `store`.
pub fn kb(store: &KnowledgeStore, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Create { name } => {
            let made = store.create(&name)?;
            sayln!("Created {} ({})", made.name, made.id);
        }
        Command::List => {
            let list = store.collections()?;
            if list.is_empty() {
                sayln!("No collections yet: art kb create NAME, then art kb add NAME FOLDER");
            }
            for c in list {
                sayln!("{}  {}", c.id, summary(&c));
            }
        }
        Command::Add {
            collection,
            paths,
            sync,
        } => {
            let c = store.find(&collection)?;
            let added = knowledge::add(store, &c.id, &paths, sync)?;
            for why in &added.left_out {
                noteln!("art: left out {why}");
            }
            if added.queued == 0 {
                bail!("no files under {}", paths[0].display());
            }
            noteln!("art: {} queued in {}", files(added.queued), c.name);
            index(store)?;
            sayln!("{}", summary(&store.find(&c.id)?));
        }
        Command::Sync => {
            let synced = knowledge::sync::sync_all(store)?;
            noteln!(
                "art: {} new or changed, {} gone",
                files(synced.queued),
                synced.removed
            );
            index(store)?;
        }
        Command::Status { collection } => {
            let c = store.find(&collection)?;
            sayln!("{}", summary(&c));
            for folder in &c.folders {
                sayln!("  kept in sync: {folder}");
            }
            for d in store.documents(&c.id)? {
                let facts = match (d.state, d.pages) {
                    (DocumentState::Ready, Some(p)) => {
                        format!("{p} pages, {} passages, ~{} tokens", d.chunks, d.tokens)
                    }
                    (DocumentState::Ready, None) => {
                        format!("{} passages, ~{} tokens", d.chunks, d.tokens)
                    }
                    _ => d.detail.clone().unwrap_or_default(),
                };
                sayln!("  {:<8}  {}  {}", d.state, d.path, facts);
            }
        }
        Command::Search {
            query,
            collection,
            k,
        } => {
            let hits = store.search(&query, collection.as_deref(), k)?;
            if hits.is_empty() {
                sayln!("{NOTHING_FOUND}");
            }
            for (i, h) in hits.iter().enumerate() {
                sayln!(
                    "[{}] {}, {}  (score {:.2})",
                    i + 1,
                    h.name,
                    h.place,
                    h.score
                );
                for line in h.text.lines() {
                    sayln!("    {line}");
                }
            }
        }
        Command::Remove { collection } => {
            let c = store.find(&collection)?;
            store.delete(&c.id)?;
            sayln!("Removed {} ({} passages)", c.name, c.chunks);
        }
        Command::Reindex { collection } => {
            let c = store.find(&collection)?;
            store.requeue(&c.id)?;
            index(store)?;
            sayln!("{}", summary(&store.find(&c.id)?));
        }
    }
    Ok(())
}

/// "1 file", "3 files".
fn files(n: u64) -> String {
    match n {
        1 => "1 file".to_owned(),
        n => format!("{n} files"),
    }
}

/// Index every queued document, a line for each.
fn index(store: &KnowledgeStore) -> anyhow::Result<()> {
    while let Some(done) = knowledge::index_next(store)? {
        let verb = match done.state {
            DocumentState::Ready => "indexed",
            DocumentState::Skipped => "skipped",
            _ => "failed",
        };
        noteln!("art: {verb} {}: {}", done.name, done.detail);
    }
    Ok(())
}

/// A collection on one line: its name, documents by state, passages.
fn summary(c: &Collection) -> String {
    let counts = c.counts.parts().join(", ");
    format!("{}: {counts}; {} passages", c.name, c.chunks)
}
