//! `art kb …`: knowledge collections from the command line, on the same database the
//! app's agent searches (`search_knowledge`): make a collection, add files and folders
//! (indexed at once, one line per document), see each document's state, search.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
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
    },
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
        Command::Add { collection, paths } => {
            let c = store.find(&collection)?;
            let mut files = Vec::new();
            for path in &paths {
                collect(path, &mut files)
                    .with_context(|| format!("cannot read {}", path.display()))?;
            }
            if files.is_empty() {
                bail!("no files under {}", paths[0].display());
            }
            for file in &files {
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let full = std::path::absolute(file).unwrap_or_else(|_| file.clone());
                store.queue(&c.id, &full.to_string_lossy(), &name)?;
            }
            noteln!("art: {} files queued in {}", files.len(), c.name);
            index(store)?;
            sayln!("{}", summary(&store.find(&c.id)?));
        }
        Command::Status { collection } => {
            let c = store.find(&collection)?;
            sayln!("{}", summary(&c));
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
            for d in store.documents(&c.id)? {
                store.queue(&c.id, &d.path, &d.name)?;
            }
            index(store)?;
            sayln!("{}", summary(&store.find(&c.id)?));
        }
    }
    Ok(())
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
    let n = &c.counts;
    let mut parts = vec![format!("{} ready", n.ready)];
    for (count, word) in [
        (n.queued, "queued"),
        (n.indexing, "indexing"),
        (n.failed, "failed"),
        (n.skipped, "skipped"),
    ] {
        if count > 0 {
            parts.push(format!("{count} {word}"));
        }
    }
    format!("{}: {}; {} passages", c.name, parts.join(", "), c.chunks)
}

/// The files at or under `path`: hidden entries and symbolic links are left out (a link
/// may loop back).
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_file() {
        out.push(path.to_path_buf());
    } else if meta.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        entries.sort();
        for entry in entries {
            // An unreadable folder inside is left out, not the whole add.
            if let Err(e) = collect(&entry, out) {
                noteln!("art: left out {}: {e}", entry.display());
            }
        }
    }
    Ok(())
}
