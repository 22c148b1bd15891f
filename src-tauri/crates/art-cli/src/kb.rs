//! `art kb …`: knowledge collections from the command line, on the same database the
//! app's agent searches (`search_knowledge`): make a collection, add files and folders
//! (indexed at once, one line per document, then embedded for searching by meaning —
//! the search model downloaded the first time), see each document's state, search.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;
use art::knowledge::embed::provider::ProviderModels;
use art::knowledge::embed::{self, Embedder, EmbedderHome};
use art::knowledge::{self, KnowledgeStore};
use art::tools::search_knowledge::NOTHING_FOUND;
use art_types::knowledge::{Collection, DocumentState, embedder_label};
use clap::Subcommand;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::out::{noteln, sayln};

/// What `art kb` can do.
#[derive(Subcommand)]
pub enum Command {
    /// Make an empty collection.
    Create {
        /// Its name (unique, whatever the case).
        name: String,
        /// The model its passages are embedded with: the built-in one by default
        /// (builtin:all-MiniLM-L6-v2), or a provider's, as provider:model
        /// (ollama:nomic-embed-text, openai:text-embedding-3-small,
        /// gemini:gemini-embedding-001).
        #[arg(long)]
        embedder: Option<String>,
    },
    /// Embed a collection with another model (as `create --embedder` names them), now:
    /// its old vectors answer searches until the new ones are complete.
    Embedder {
        /// The collection (name or id).
        collection: String,
        /// The model, provider:model or builtin:all-MiniLM-L6-v2.
        model: String,
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

/// The models that embed passages: the built-in one (its weights in `home`) and the
/// providers' (connected through `providers`).
pub struct Models<'a> {
    /// The built-in embedder's weights.
    pub home: &'a EmbedderHome,
    /// Providers' embedding models.
    pub providers: &'a ProviderModels,
}

impl Models<'_> {
    /// The embedder of `model` to embed passages with: the built-in one (its weights
    /// downloaded first when they are not there), or a provider's, connected; `None`,
    /// said on stderr, when it cannot be had (its passages are searched by their words).
    fn embedder(&self, model: &str) -> Option<Arc<dyn Embedder>> {
        if model == embed::minilm::MODEL {
            return load(self.home);
        }
        match self.providers.connect(model) {
            Ok(embedder) => Some(Arc::new(embedder)),
            Err(e) => {
                noteln!("art: {model} is unavailable ({e}): searched by words only");
                None
            }
        }
    }
}

/// Run `art kb` on `store`, embedding with `models`.
pub fn kb(store: &KnowledgeStore, models: &Models<'_>, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Create { name, embedder } => {
            let made = store.create(&name)?;
            if let Some(model) = embedder {
                store.change_embedder(&made.id, &model)?;
            }
            sayln!("Created {} ({})", made.name, made.id);
        }
        Command::Embedder { collection, model } => {
            let c = store.find(&collection)?;
            store.change_embedder(&c.id, &model)?;
            noteln!("art: {} is embedded with {model} from now on", c.name);
            embed_waiting(store, models)?;
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
            noteln!("art: {} queued in {}", count(added.queued, "file"), c.name);
            index(store)?;
            embed_waiting(store, models)?;
            sayln!("{}", summary(&store.find(&c.id)?));
        }
        Command::Sync => {
            let synced = knowledge::sync::sync_all(store)?;
            noteln!(
                "art: {} new or changed, {} gone",
                count(synced.queued, "file"),
                synced.removed
            );
            index(store)?;
            embed_waiting(store, models)?;
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
            // By meaning too where the store can have the models (its source: the stack's,
            // as for `art run` and the app; the built-in one is never downloaded to search).
            let found = store.search_scoped(&query, &[], collection.as_deref(), k)?;
            if found.words_only > 0 {
                noteln!(
                    "art: {} matched by their words only (not embedded yet: art kb reindex, or \
                     the app, embeds them)",
                    count(found.words_only, "passage")
                );
            }
            let hits = found.hits;
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
            embed_waiting(store, models)?;
            sayln!("{}", summary(&store.find(&c.id)?));
        }
    }
    Ok(())
}

/// "1 file", "3 passages": a count and its noun.
fn count(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// The built-in embedder, its weights downloaded first if need be (with a progress bar);
/// `None`, said on stderr, when it cannot be had. On a thread of its own: the download
/// runs its own event loop, which cannot start inside the CLI's.
fn load(home: &EmbedderHome) -> Option<Arc<dyn Embedder>> {
    let bar = ProgressBar::hidden().with_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} search model ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    if !home.is_downloaded() {
        noteln!(
            "art: downloading the search model (all-MiniLM-L6-v2, 91 MB) from {}",
            home.endpoint
        );
        bar.set_draw_target(ProgressDrawTarget::stderr());
    }
    let progress = |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let loaded = std::thread::scope(|s| {
        s.spawn(|| home.load(&progress, &|| false))
            .join()
            .unwrap_or_else(|_| Err(embed::EmbedError::Failed("the loader panicked".into())))
    });
    bar.finish_and_clear();
    match loaded {
        Ok(embedder) => Some(embedder),
        Err(e) => {
            noteln!("art: {e}");
            None
        }
    }
}

/// Give the passages waiting for a vector one, model by model, with a progress bar;
/// when a model cannot be had, its passages stay searchable by their words.
fn embed_waiting(store: &KnowledgeStore, models: &Models<'_>) -> anyhow::Result<()> {
    for model in store.models_in_use()? {
        let waiting = store.waiting_for_vectors(&model)?;
        if waiting == 0 {
            continue;
        }
        let Some(embedder) = models.embedder(&model) else {
            continue;
        };
        let bar = ProgressBar::new(waiting).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} passages embedded ({eta} left)")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let done = embed::embed_waiting(
            store,
            embedder.as_ref(),
            |done, of| {
                bar.set_length(of);
                bar.set_position(done);
            },
            || true,
        );
        bar.finish_and_clear();
        noteln!(
            "art: embedded {} with {model} to search by meaning",
            count(done?, "passage")
        );
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

/// A collection on one line: its name, documents by state, passages, and how they are
/// found — by meaning only as far as they are embedded.
fn summary(c: &Collection) -> String {
    let counts = c.counts.parts().join(", ");
    let model = embedder_label(&c.embedder);
    let found = match (c.embedded, c.chunks) {
        (_, 0) => format!("by meaning with {model} once embedded"),
        (0, _) => format!("by words only: none embedded with {model} yet"),
        (e, n) if e >= n => format!("by meaning with {model}"),
        (e, n) => format!("by meaning with {model} ({e} of {n} embedded; the rest by words)"),
    };
    let mut line = format!("{}: {counts}; {} passages; {found}", c.name, c.chunks);
    if let Some(change) = &c.changing {
        line.push_str(&format!(
            " ({} of {} embedded so far; {} answers meanwhile)",
            change.embedded,
            c.chunks,
            embedder_label(&change.from)
        ));
    }
    line
}
