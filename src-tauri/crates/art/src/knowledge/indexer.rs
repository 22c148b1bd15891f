//! The background indexer: one thread per process that reads queued documents one at a
//! time while the queue has any, then sleeps until woken. Runs and the UI never wait on
//! it (it has its own database connection to the knowledge file, apart from the
//! conversations'); what it is doing is published as an [`IndexProgress`] to watch.
//!
//! A document is claimed before it is read, so the app and `art kb` can index one
//! collection together without reading a file twice; a process killed mid-document
//! leaves a claim that the next [`KnowledgeStore::open`] gives back to the queue.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use art_types::knowledge::IndexProgress;
use tokio::sync::watch;

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
}

/// After a database error, how long before the queue is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// How often the synced folders are rescanned.
pub const SYNC_EVERY: Duration = Duration::from_secs(30);

/// What the thread was woken for.
enum Wake {
    Work,
    Cancel,
    Sync,
}

impl Indexer {
    /// Start the thread over `store`, rescanning synced folders every [`SYNC_EVERY`].
    pub fn start(store: Arc<KnowledgeStore>) -> std::io::Result<Self> {
        Self::start_with(store, SYNC_EVERY)
    }

    /// Start the thread over `store`: it rescans the synced folders at once (what
    /// changed while the app was closed) and then every `sync_every`, and reads what is
    /// queued (also documents left queued by an earlier run, or given back from a dead
    /// process).
    pub fn start_with(store: Arc<KnowledgeStore>, sync_every: Duration) -> std::io::Result<Self> {
        let (sender, progress) = watch::channel(IndexProgress::default());
        let shared = Arc::new(Shared {
            store,
            flags: Mutex::new(Flags::default()),
            signal: Condvar::new(),
            progress: sender,
        });
        let worker = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("knowledge-indexer".into())
            .spawn(move || worker.run(sync_every))?;
        Ok(Self { shared, progress })
    }

    /// Look at the queue again (call after queueing documents).
    pub fn wake(&self) {
        self.shared.set(|f| f.wake = true);
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
                Wake::Work => self.round(),
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
