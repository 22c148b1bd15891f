//! The app's pulls: queued and run one at a time (Ollama downloads one model fastest
//! alone), each with its progress and speed, cancellable, and kept after they end so
//! the Models page shows what happened while it was closed. A journal, told whenever
//! the pulls still to finish change, lets the app say after a restart which ones its
//! closing cut short ([`PullQueue::cut_short`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use art_types::models::{
    ModelsProblem, PullPhase, PullProgress, PullState, check_model_name, same_model,
};

use super::models::{OllamaModels, PULL_STALL};
use crate::agent::CancellationToken;

/// The window the speed is measured over.
const SPEED_WINDOW: Duration = Duration::from_secs(5);

struct Entry {
    state: PullState,
    /// (when, bytes so far), the last [`SPEED_WINDOW`] of them.
    samples: VecDeque<(Instant, u64)>,
}

impl Entry {
    fn noted(&mut self, progress: &PullProgress) {
        let now = Instant::now();
        self.samples.push_back((now, progress.completed()));
        while self
            .samples
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > SPEED_WINDOW)
        {
            self.samples.pop_front();
        }
        self.state.progress = progress.clone();
        self.state.bytes_per_second = match (self.samples.front(), self.samples.back()) {
            (Some((first, from)), Some((last, to))) if *last > *first => {
                let seconds = last.duration_since(*first).as_secs_f64();
                (seconds >= 0.5).then(|| (to.saturating_sub(*from) as f64 / seconds) as u64)
            }
            _ => None,
        }
        .or(self.state.bytes_per_second);
    }
}

#[derive(Default)]
struct Inner {
    pulls: Vec<Entry>,
    /// The pull running now, and what stops it.
    running: Option<(String, CancellationToken)>,
}

/// Told when the pulls still to finish change, with the queue to read them from
/// ([`PullQueue::unfinished`]) when it records them.
pub type Journal = Arc<dyn Fn(PullQueue) + Send + Sync>;

/// Pulls queued for one Ollama server; clones share the queue.
#[derive(Clone)]
pub struct PullQueue {
    models: OllamaModels,
    inner: Arc<Mutex<Inner>>,
    journal: Option<Journal>,
}

/// Whether two names mean the same model (`llama3.2` and `llama3.2:latest`).
fn same(a: &str, b: &str) -> bool {
    same_model(a, b) || same_model(b, a)
}

impl PullQueue {
    /// An empty queue pulling from `models`' server.
    pub fn new(models: OllamaModels) -> Self {
        Self {
            models,
            inner: Arc::default(),
            journal: None,
        }
    }

    /// Tell `journal` whenever the pulls still to finish change.
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    fn journal(&self) {
        if let Some(journal) = &self.journal {
            journal(self.clone());
        }
    }

    /// The models queued or being pulled, oldest first.
    pub fn unfinished(&self) -> Vec<String> {
        self.inner()
            .pulls
            .iter()
            .filter(|e| e.state.is_active())
            .map(|e| e.state.progress.model.clone())
            .collect()
    }

    /// Show `names` as pulls the app's closing cut short (pulling again resumes).
    pub fn cut_short(&self, names: &[String]) {
        let mut inner = self.inner();
        for name in names {
            inner.pulls.push(Entry {
                state: PullState {
                    progress: PullProgress::new(name),
                    phase: PullPhase::Failed {
                        problem: ModelsProblem::AppClosed { name: name.clone() },
                    },
                    bytes_per_second: None,
                },
                samples: VecDeque::new(),
            });
        }
    }

    /// The server it pulls from (and the page manages).
    pub fn models(&self) -> &OllamaModels {
        &self.models
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every pull, oldest first.
    pub fn states(&self) -> Vec<PullState> {
        self.inner().pulls.iter().map(|e| e.state.clone()).collect()
    }

    /// Queue a pull of `name` (started at once when none runs); a model already queued or
    /// being pulled is not pulled twice. Must be called inside a Tokio runtime.
    pub fn pull(&self, name: &str) -> Result<Vec<PullState>, ModelsProblem> {
        check_model_name(name)?;
        let start = {
            let mut inner = self.inner();
            if !inner
                .pulls
                .iter()
                .any(|e| e.state.is_active() && same(&e.state.progress.model, name))
            {
                inner.pulls.retain(|e| !same(&e.state.progress.model, name));
                inner.pulls.push(Entry {
                    state: PullState {
                        progress: PullProgress::new(name),
                        phase: PullPhase::Queued,
                        bytes_per_second: None,
                    },
                    samples: VecDeque::new(),
                });
            }
            inner.running.is_none()
        };
        if start {
            self.next();
        }
        self.journal();
        Ok(self.states())
    }

    /// Stop `name`'s pull (or take it out of the queue).
    pub fn cancel(&self, name: &str) -> Vec<PullState> {
        let mut inner = self.inner();
        if let Some((running, stop)) = &inner.running
            && same(running, name)
        {
            stop.cancel();
        }
        for entry in &mut inner.pulls {
            if entry.state.is_active() && same(&entry.state.progress.model, name) {
                entry.state.phase = PullPhase::Cancelled;
                entry.state.bytes_per_second = None;
            }
        }
        drop(inner);
        self.journal();
        self.states()
    }

    /// Forget the pulls that ended.
    pub fn dismiss_ended(&self) -> Vec<PullState> {
        self.inner().pulls.retain(|e| e.state.is_active());
        self.states()
    }

    /// Start the oldest queued pull, if none runs.
    fn next(&self) {
        let mut inner = self.inner();
        if inner.running.is_some() {
            return;
        }
        let Some(entry) = inner
            .pulls
            .iter_mut()
            .find(|e| e.state.phase == PullPhase::Queued)
        else {
            return;
        };
        entry.state.phase = PullPhase::Pulling;
        let name = entry.state.progress.model.clone();
        let stop = CancellationToken::new();
        inner.running = Some((name.clone(), stop.clone()));
        let queue = self.clone();
        tokio::spawn(async move {
            let progress = |p: &PullProgress| queue.update(&name, |e| e.noted(p));
            // A cancelled pull is dropped (its connection closed); `cancel` marked it.
            let pulled = tokio::select! {
                pulled = queue.models.pull(&name, PULL_STALL, progress) => Some(pulled),
                () = stop.cancelled() => None,
            };
            if let Some(pulled) = pulled {
                queue.update(&name, |e| {
                    e.state.bytes_per_second = None;
                    e.state.phase = match pulled {
                        Ok(_) => PullPhase::Done,
                        Err(problem) => PullPhase::Failed { problem },
                    };
                });
            }
            queue.inner().running = None;
            queue.next();
            queue.journal();
        });
    }

    /// Change the active entry of `name`.
    fn update(&self, name: &str, change: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self
            .inner()
            .pulls
            .iter_mut()
            .find(|e| e.state.progress.model == name && e.state.phase == PullPhase::Pulling)
        {
            change(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use art_testkit::fake::FakeServer;
    use art_testkit::fake::ollama::{OllamaLibrary, PullFault};

    use super::*;

    async fn until(queue: &PullQueue, done: impl Fn(&[PullState]) -> bool) -> Vec<PullState> {
        for _ in 0..500 {
            let states = queue.states();
            if done(&states) {
                return states;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("never: {:?}", queue.states());
    }

    fn phases(states: &[PullState]) -> Vec<(String, PullPhase)> {
        states
            .iter()
            .map(|s| (s.progress.model.clone(), s.phase.clone()))
            .collect()
    }

    #[tokio::test]
    async fn pulls_run_one_at_a_time_and_a_cancelled_one_lets_the_next_start() {
        let library = OllamaLibrary::new()
            .in_registry("big:7b", &[9_000_000_000], &["completion"])
            .in_registry("small:1b", &[1_000_000, 300], &["completion"]);
        let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
            .await
            .unwrap();
        let queue = PullQueue::new(OllamaModels::new(&server.url()).unwrap());
        // The first pull hangs halfway, as a stalled download does.
        library.fail_next_pull(PullFault::Stall);
        queue.pull("big:7b").unwrap();
        let states = queue.pull("small:1b").unwrap();
        assert_eq!(states[1].phase, PullPhase::Queued);
        // Asked again while queued: not a second pull.
        assert_eq!(queue.pull("small:1b").unwrap().len(), 2);
        let states = until(&queue, |s| s[0].progress.completed() > 0).await;
        assert_eq!(states[0].phase, PullPhase::Pulling);
        assert_eq!(states[1].phase, PullPhase::Queued, "one at a time");

        queue.cancel("big:7b");
        let states = until(&queue, |s| s[1].phase == PullPhase::Done).await;
        assert_eq!(
            phases(&states),
            [
                ("big:7b".to_owned(), PullPhase::Cancelled),
                ("small:1b".to_owned(), PullPhase::Done)
            ]
        );
        assert_eq!(states[1].progress.completed(), 1_000_300);
        assert_eq!(library.names(), ["small:1b"]);
        assert!(queue.dismiss_ended().is_empty());
    }

    #[tokio::test]
    async fn a_failed_pull_keeps_its_problem_and_can_be_pulled_again() {
        let library =
            OllamaLibrary::new().in_registry("llama3.2:3b", &[2_000_000_000], &["completion"]);
        let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
            .await
            .unwrap();
        let queue = PullQueue::new(OllamaModels::new(&server.url()).unwrap());
        library.fail_next_pull(PullFault::Dies);
        queue.pull("llama3.2:3b").unwrap();
        let states = until(&queue, |s| !s[0].is_active()).await;
        assert!(
            matches!(
                &states[0].phase,
                PullPhase::Failed {
                    problem: ModelsProblem::Interrupted { .. }
                }
            ),
            "{states:?}"
        );
        queue.pull("llama3.2:3b").unwrap();
        let states = until(&queue, |s| s[0].phase == PullPhase::Done).await;
        assert_eq!(states.len(), 1, "the failed one replaced");
        assert!(matches!(
            queue.pull("no good"),
            Err(ModelsProblem::BadName { .. })
        ));
    }
}
