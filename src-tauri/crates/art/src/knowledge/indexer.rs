//! The background indexer: one thread per process that reads queued documents one at a
//! time while the queue has any, then sleeps until woken. Runs and the UI never wait on
//! it (it has its own database connection to the knowledge file, apart from the
//! conversations'); what it is doing is published as an [`IndexProgress`] to watch.
//!
//! Once the queue is empty it gives passages their vectors (the built-in embedder, its
//! weights downloaded on first need), a batch at a time, yielding to documents queued
//! meanwhile: a new document is searchable by its words first, by meaning soon after.
//!
//! A document is claimed before it is read, so the app and `art kb` can index one
//! collection together without reading a file twice; a process killed mid-document
//! leaves a claim that the next [`KnowledgeStore::open`] gives back to the queue.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use art_types::knowledge::{EmbedderState, IndexProgress};
use tokio::sync::watch;

use super::embed::provider::ProviderModels;
use super::embed::{self, EmbedderHome};
use super::sync::{self, Synced};
use super::{KnowledgeStore, index_claimed};

/// Handle on the indexing thread: wake it when something is queued, cancel what is
/// queued, watch its progress. Dropping it stops the thread after its current document.
pub struct Indexer {
    shared: Arc<Shared>,
    progress: watch::Receiver<IndexProgress>,
}

struct Shared {
    store: Arc<KnowledgeStore>,
    /// The built-in embedder's weights (`None`: words only).
    home: Option<EmbedderHome>,
    /// Connects providers' embedding models, for collections that use one.
    providers: RwLock<Option<Arc<ProviderModels>>>,
    /// When a model last failed to connect or embed.
    failed: Mutex<HashMap<String, Instant>>,
    flags: Mutex<Flags>,
    signal: Condvar,
    progress: watch::Sender<IndexProgress>,
}

#[derive(Default)]
struct Flags {
    /// Something may be queued.
    wake: bool,
    /// Take what is queued off the queue.
    cancel: bool,
    /// Rescan the synced folders now.
    sync: bool,
    /// The handle is gone.
    stop: bool,
    /// Try to load (download) the embedder again: at start and when documents are
    /// added, not on every rescan after a failed download.
    retry_embedder: bool,
}

/// After a database error, how long before the queue is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// After a model failed to connect or embed, how long before it is tried again.
const RETRY_EMBEDDER_AFTER: Duration = Duration::from_secs(60);

/// How often the synced folders are rescanned.
pub const SYNC_EVERY: Duration = Duration::from_secs(30);

/// What the thread was woken for.
enum Wake {
    Work,
    Cancel,
    Sync,
}

impl Indexer {
    /// Start the thread over `store`, rescanning synced folders every [`SYNC_EVERY`],
    /// embedding passages with the weights in `home` (`None`: words only).
    pub fn start(store: Arc<KnowledgeStore>, home: Option<EmbedderHome>) -> std::io::Result<Self> {
        Self::start_with(store, home, SYNC_EVERY)
    }

    /// Start the thread over `store`: it rescans the synced folders at once (what
    /// changed while the app was closed) and then every `sync_every`, and reads what is
    /// queued (also documents left queued by an earlier run, or given back from a dead
    /// process).
    pub fn start_with(
        store: Arc<KnowledgeStore>,
        home: Option<EmbedderHome>,
        sync_every: Duration,
    ) -> std::io::Result<Self> {
        let (sender, progress) = watch::channel(IndexProgress::default());
        let shared = Arc::new(Shared {
            store,
            home,
            providers: RwLock::new(None),
            failed: Mutex::new(HashMap::new()),
            flags: Mutex::new(Flags {
                retry_embedder: true,
                ..Flags::default()
            }),
            signal: Condvar::new(),
            progress: sender,
        });
        let worker = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("knowledge-indexer".into())
            .spawn(move || worker.run(sync_every))?;
        Ok(Self { shared, progress })
    }

    /// Embed the collections that use a provider's model through `providers` (else they
    /// are searched by their words only).
    pub fn connect_providers(&self, providers: Arc<ProviderModels>) {
        *self
            .shared
            .providers
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(providers);
        self.wake();
    }

    /// Look at the queue again (call after queueing documents); a model that failed is
    /// tried again at once.
    pub fn wake(&self) {
        self.shared
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.shared.set(|f| {
            f.wake = true;
            f.retry_embedder = true;
        });
    }

    /// Rescan the synced folders now (then read what changed).
    pub fn sync_now(&self) {
        self.shared.set(|f| f.sync = true);
    }

    /// Take every queued document off the queue (the one being read now is finished).
    pub fn cancel(&self) {
        self.shared.set(|f| {
            f.cancel = true;
            f.wake = true;
        });
    }

    /// Progress now, and as it changes.
    pub fn progress(&self) -> watch::Receiver<IndexProgress> {
        self.progress.clone()
    }
}

impl Drop for Indexer {
    fn drop(&mut self) {
        self.shared.set(|f| f.stop = true);
    }
}

impl Shared {
    fn set(&self, change: impl FnOnce(&mut Flags)) {
        let mut flags = self.flags.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut flags);
        self.signal.notify_all();
    }

    /// Wait until woken or `deadline`; `None` when the handle is gone.
    fn wait(&self, deadline: Instant) -> Option<Wake> {
        let mut flags = self.flags.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if flags.stop {
                return None;
            }
            if std::mem::take(&mut flags.cancel) {
                flags.wake = false;
                return Some(Wake::Cancel);
            }
            if std::mem::take(&mut flags.sync) {
                return Some(Wake::Sync);
            }
            if std::mem::take(&mut flags.wake) {
                return Some(Wake::Work);
            }
            let now = Instant::now();
            if now >= deadline {
                return Some(Wake::Sync);
            }
            flags = self
                .signal
                .wait_timeout(flags, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Whether anything asks the thread to turn to other work (documents queued, a
    /// rescan, a cancel, a stop), without taking it.
    fn wanted_elsewhere(&self) -> bool {
        let flags = self.flags.lock().unwrap_or_else(|p| p.into_inner());
        flags.wake || flags.sync || flags.cancel || flags.stop
    }

    /// Whether a cancel or a stop came in since the last look.
    fn interrupted(&self) -> (bool, bool) {
        let mut flags = self.flags.lock().unwrap_or_else(|p| p.into_inner());
        (std::mem::take(&mut flags.cancel), flags.stop)
    }

    fn publish(&self, change: impl FnOnce(&mut IndexProgress)) {
        self.progress.send_modify(change);
    }

    fn run(&self, sync_every: Duration) {
        // The first rescan at once: files may have changed while the app was closed.
        let mut next_sync = Instant::now();
        while let Some(wake) = self.wait(next_sync) {
            match wake {
                Wake::Cancel => self.cancel_queued(),
                Wake::Work => {
                    self.round();
                    self.embed();
                }
                Wake::Sync => {
                    match sync::sync_all(&self.store) {
                        Ok(synced) if synced != Synced::default() => {
                            tracing::info!(
                                queued = synced.queued,
                                removed = synced.removed,
                                "synced folders changed"
                            );
                        }
                        Ok(_) => {}
                        Err(e) => tracing::warn!("the synced folders were not rescanned: {e}"),
                    }
                    next_sync = Instant::now() + sync_every;
                    self.round();
                    self.embed();
                }
            }
        }
    }

    /// Read documents until the queue is empty, a cancel comes or the handle goes.
    fn round(&self) {
        // Nothing to do (most rescans): nothing to show either.
        if self.store.waiting().is_ok_and(|n| n == 0) {
            return;
        }
        let mut done = 0;
        self.publish(|p| {
            *p = IndexProgress {
                running: true,
                embedder: p.embedder.clone(),
                ..IndexProgress::default()
            }
        });
        loop {
            match self.interrupted() {
                (_, true) => return,
                (true, _) => {
                    self.cancel_queued();
                    break;
                }
                _ => {}
            }
            let claimed = match self.store.claim() {
                Ok(Some(claimed)) => claimed,
                Ok(None) => break,
                Err(e) => {
                    self.stop_early(format!("{e}"));
                    std::thread::sleep(RETRY_AFTER);
                    // Try again later: another wake, or the next add.
                    return;
                }
            };
            let waiting = self.store.waiting().unwrap_or(1);
            self.publish(|p| {
                p.done = done;
                p.total = done + waiting.max(1);
                p.current = Some(claimed.name.clone());
            });
            if let Err(e) = index_claimed(&self.store, claimed) {
                tracing::warn!("indexing stopped on a database error: {e}");
                self.stop_early(e.to_string());
                return;
            }
            done += 1;
        }
        self.publish(|p| {
            p.running = false;
            p.current = None;
            p.done = done;
            p.total = p.total.max(done);
        });
    }

    /// Give waiting passages their vectors, model by model (each collection's), until
    /// none waits or other work comes in.
    fn embed(&self) {
        let models = match self.store.models_in_use() {
            Ok(models) => models,
            Err(e) => {
                tracing::warn!("the collections' models could not be read: {e}");
                return;
            }
        };
        for model in models {
            if self.wanted_elsewhere() {
                return;
            }
            // Loaded (connected) whenever its collections have passages: searches need it
            // to embed questions, also when every passage has its vector (after a
            // restart).
            let counted = self.store.waiting_for_vectors(&model).and_then(|waiting| {
                let needed = waiting > 0
                    || self.store.embedder_for(&model).is_some()
                    || self.store.passages_of_model(&model)? > 0;
                Ok((waiting, needed))
            });
            let waiting = match counted {
                Ok((_, false)) => continue,
                Ok((waiting, true)) => waiting,
                Err(e) => {
                    tracing::warn!("passages to embed could not be counted: {e}");
                    return;
                }
            };
            let Some(embedder) = self.embedder(&model) else {
                continue;
            };
            if waiting == 0 {
                continue;
            }
            self.publish(|p| {
                p.running = true;
                p.embedded = 0;
                p.to_embed = waiting;
            });
            let outcome = embed::embed_waiting(
                &self.store,
                embedder.as_ref(),
                |done, of| {
                    self.publish(|p| {
                        p.embedded = done;
                        p.to_embed = of;
                    });
                },
                || !self.wanted_elsewhere(),
            );
            if let Err(e) = &outcome {
                // What was embedded is kept; the rest waits for the next try.
                tracing::warn!("embedding with {model} stopped: {e}");
                self.publish(|p| p.stopped = Some(format!("embedding with {model} stopped: {e}")));
            }
            if let Err(embed::EmbedStop::Embedder(_)) = outcome {
                // A provider that failed mid-collection is connected again later.
                self.failed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(model.clone(), Instant::now());
                self.store.forget_embedder(&model);
            }
            self.publish(|p| p.running = false);
        }
    }

    /// The embedder of `model`: loaded already, else the built-in one loaded (its weights
    /// downloaded) or a provider's model connected — not more often than every
    /// [`RETRY_EMBEDDER_AFTER`] after a failure.
    fn embedder(&self, model: &str) -> Option<Arc<dyn embed::Embedder>> {
        if let Some(embedder) = self.store.embedder_for(model) {
            return Some(embedder);
        }
        if model == embed::minilm::MODEL {
            return self.load(self.home.as_ref()?);
        }
        let providers = self
            .providers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if failed
            .get(model)
            .is_some_and(|at| at.elapsed() < RETRY_EMBEDDER_AFTER)
        {
            return None;
        }
        match providers.connect(model) {
            Ok(embedder) => {
                failed.remove(model);
                let embedder: Arc<dyn embed::Embedder> = Arc::new(embedder);
                self.store.set_embedder(Arc::clone(&embedder));
                Some(embedder)
            }
            Err(e) => {
                tracing::warn!("{model} is unavailable: {e}");
                failed.insert(model.to_owned(), Instant::now());
                self.publish(|p| p.stopped = Some(format!("{model} is unavailable: {e}")));
                None
            }
        }
    }

    /// Load the built-in embedder, downloading its weights first if need be; says why
    /// not in the progress when it cannot (and waits for new documents to try again).
    fn load(&self, home: &EmbedderHome) -> Option<Arc<dyn embed::Embedder>> {
        if !std::mem::take(
            &mut self
                .flags
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retry_embedder,
        ) {
            return None;
        }
        self.publish(|p| {
            p.embedder = EmbedderState::Downloading {
                done: 0,
                total: embed::download::MINILM.size(),
            }
        });
        let progress = |done, total| {
            self.publish(|p| p.embedder = EmbedderState::Downloading { done, total });
        };
        let stop = || self.flags.lock().unwrap_or_else(|p| p.into_inner()).stop;
        match home.load(&progress, &stop) {
            Ok(embedder) => {
                self.store.set_embedder(Arc::clone(&embedder));
                self.publish(|p| p.embedder = EmbedderState::Ready);
                Some(embedder)
            }
            Err(e) => {
                tracing::warn!("the embedder is unavailable: {e}");
                self.publish(|p| {
                    p.embedder = EmbedderState::Unavailable {
                        reason: e.to_string(),
                    }
                });
                None
            }
        }
    }

    fn cancel_queued(&self) {
        let outcome = self.store.cancel_queued();
        self.publish(|p| {
            p.running = false;
            p.current = None;
            p.stopped = Some(match outcome {
                Ok(n) => format!("cancelled: {n} documents were not read"),
                Err(e) => format!("cancelling failed: {e}"),
            });
        });
    }

    fn stop_early(&self, why: String) {
        self.publish(|p| {
            p.running = false;
            p.current = None;
            p.stopped = Some(why);
        });
    }
}

#[cfg(test)]
mod tests;
