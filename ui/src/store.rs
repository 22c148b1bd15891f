//! The UI's shared state and the backend events that change it: the thread list, the
//! selected thread, the live runs, and a per-thread version that views watch to reload.

use std::collections::HashMap;

use art_types::commands as cmd;
use art_types::commands::Picked;
use art_types::knowledge::IndexProgress;
use art_types::{
    ConversationMessage, ErrorCode, ExportProgress, IpcError, Observation, RunFinished,
    StreamBatch, ThreadSummary, events,
};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::ipc;
use crate::run_view::RunView;

/// State shared by every view (through context).
#[derive(Clone, Copy)]
pub struct Store {
    /// Threads, most recently active first.
    pub threads: RwSignal<Vec<ThreadSummary>>,
    /// The open thread.
    pub selected: RwSignal<Option<String>>,
    /// Runs seen live since the app started (finished ones stay until reloaded).
    pub runs: RwSignal<Vec<RunView>>,
    /// Bumped when a thread's stored messages change; views reload on change.
    pub versions: RwSignal<HashMap<String, u64>>,
    /// Bumped when a thread's active branch changes: its view drops the earlier pages
    /// it had loaded (they belong to the other branch).
    pub switches: RwSignal<HashMap<String, u64>>,
    /// The last error of a background action, shown in a banner (as an error card).
    pub banner: RwSignal<Option<IpcError>>,
    /// A message to bring into view once its thread is open (a search hit's id).
    pub focus: RwSignal<Option<String>>,
    /// How far the running export is.
    pub export_progress: RwSignal<Option<ExportProgress>>,
    /// Files just dropped on the window, attached by the backend; the open thread's
    /// composer takes them.
    pub dropped: RwSignal<Option<Picked>>,
    /// Where the background indexer of the knowledge collections is.
    pub indexing: RwSignal<IndexProgress>,
    /// The authorization page of the MCP sign-in under way (its address, for when no
    /// browser opened).
    pub sign_in_page: RwSignal<Option<art_types::mcp::McpSignInPage>>,
    /// The comparisons shown in columns, until one column is kept or the view closed.
    pub comparisons: RwSignal<Vec<ShownComparison>>,
}

/// A comparison the thread shows in columns: the columns and the question asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownComparison {
    /// What `compare_models` answered.
    pub comparison: cmd::Comparison,
    /// The question, as typed.
    pub question: String,
}

impl ShownComparison {
    /// Whether run `trace_id` is one of its columns.
    pub fn has(&self, trace_id: &str) -> bool {
        self.comparison
            .columns
            .iter()
            .any(|c| c.trace_id == trace_id)
    }
}

impl Store {
    /// Empty state.
    pub fn new() -> Self {
        Self {
            threads: RwSignal::new(Vec::new()),
            selected: RwSignal::new(None),
            runs: RwSignal::new(Vec::new()),
            versions: RwSignal::new(HashMap::new()),
            switches: RwSignal::new(HashMap::new()),
            banner: RwSignal::new(None),
            focus: RwSignal::new(None),
            export_progress: RwSignal::new(None),
            dropped: RwSignal::new(None),
            indexing: RwSignal::new(IndexProgress::default()),
            sign_in_page: RwSignal::new(None),
            comparisons: RwSignal::new(Vec::new()),
        }
    }

    /// The version of a thread's stored messages.
    pub fn version(&self, thread_id: &str) -> u64 {
        self.versions
            .with(|v| v.get(thread_id).copied().unwrap_or(0))
    }

    /// How many times the thread's active branch changed.
    pub fn switch_version(&self, thread_id: &str) -> u64 {
        self.switches
            .with(|v| v.get(thread_id).copied().unwrap_or(0))
    }

    /// Open `thread_id` on a branch through `message_id` and bring the message into view
    /// (a search hit, an alternative, where a fork came from). A thread that is
    /// answering stays on its branch; the message is shown if it is there.
    pub fn show_message(&self, thread_id: String, message_id: String) {
        let store = *self;
        spawn_local(async move {
            let args = cmd::SwitchBranch {
                thread_id: thread_id.clone(),
                message_id: message_id.clone(),
            };
            match ipc::call(&args).await {
                Ok(_) => {
                    store.switched(&thread_id);
                    store.forget_finished(&thread_id, "");
                }
                Err(e) if e.code == ErrorCode::NotFound => {
                    store.banner.set(Some(e));
                    return;
                }
                Err(_) => {}
            }
            store.focus.set(Some(message_id));
            store.selected.set(Some(thread_id));
        });
    }

    fn bump(&self, thread_id: &str) {
        self.versions
            .update(|v| *v.entry(thread_id.to_owned()).or_default() += 1);
    }

    /// Apply `change` to the run `trace_id` of `thread_id`, creating it when its first
    /// event arrives before `send_message` has answered.
    pub fn with_run(&self, thread_id: &str, trace_id: &str, change: impl FnOnce(&mut RunView)) {
        self.runs.update(|runs| {
            let index = match runs.iter().position(|r| r.trace_id == trace_id) {
                Some(i) => i,
                None => {
                    runs.push(RunView::new(thread_id, trace_id));
                    runs.len() - 1
                }
            };
            change(&mut runs[index]);
        });
    }

    /// Drop the finished runs of a thread except `keep` (the run that replaces them,
    /// whose end may already have arrived) and reload its history (after its answers
    /// were replaced: regenerate, edit & resend).
    /// A comparison still shown keeps its columns.
    pub fn forget_finished(&self, thread_id: &str, keep: &str) {
        let shown = self.comparisons.get_untracked();
        self.runs.update(|runs| {
            runs.retain(|r| {
                r.thread_id != thread_id
                    || !r.finished
                    || r.trace_id == keep
                    || shown.iter().any(|c| c.has(&r.trace_id))
            })
        });
        self.bump(thread_id);
    }

    /// Stop showing comparison `comparison_id` in columns (one was kept, or the view
    /// closed): its finished columns are forgotten, the thread's history reloaded.
    pub fn close_comparison(&self, thread_id: &str, comparison_id: &str) {
        self.comparisons
            .update(|all| all.retain(|c| c.comparison.comparison_id != comparison_id));
        self.forget_finished(thread_id, "");
    }

    /// The thread's active branch changed: the earlier pages its view loaded belong to
    /// the branch it showed.
    pub fn switched(&self, thread_id: &str) {
        self.switches
            .update(|v| *v.entry(thread_id.to_owned()).or_default() += 1);
    }

    /// A run that waited goes on (the user decided): it is live again, with what it did
    /// so far, until its end arrives. Called before the decision is sent, so no event of
    /// the run's next part can arrive first and start a view of its own.
    pub fn resume(&self, mut run: RunView) {
        run.finished = false;
        run.waiting = None;
        run.metadata = None;
        self.runs.update(|runs| {
            runs.retain(|r| r.trace_id != run.trace_id);
            runs.push(run);
        });
    }

    /// Show `run` as it is (a decision that failed: the run still waits).
    pub fn show(&self, run: RunView) {
        self.runs.update(|runs| {
            runs.retain(|r| r.trace_id != run.trace_id);
            runs.push(run);
        });
    }

    /// Reload the thread list.
    pub fn reload_threads(&self) {
        let store = *self;
        spawn_local(async move {
            match ipc::call(&cmd::ListThreads {}).await {
                Ok(threads) => {
                    // A deleted thread cannot stay open.
                    if let Some(open) = store.selected.get_untracked()
                        && !threads.iter().any(|t| t.thread_id == open)
                    {
                        store.selected.set(None);
                    }
                    store.threads.set(threads);
                }
                Err(e) => store.banner.set(Some(e)),
            }
        });
    }

    /// Subscribe to the backend's events (before anything can be emitted for us).
    pub async fn listen(self) -> Result<(), art_types::IpcError> {
        ipc::listen(events::THREADS, move |_: serde_json::Value| {
            self.reload_threads()
        })
        .await?;
        ipc::listen(events::STREAM, move |batch: StreamBatch| {
            self.with_run(&batch.thread_id, &batch.trace_id, |run| {
                run.apply_stream(&batch.events)
            });
        })
        .await?;
        ipc::listen(events::OBSERVATION, move |o: Observation| {
            self.with_run(&o.thread_id, &o.trace_id, |run| {
                run.apply_observation(&o);
            });
        })
        .await?;
        // (Checkpoints of a streaming answer are not sent: it is shown live.)
        ipc::listen(events::MESSAGE, move |m: ConversationMessage| {
            self.bump(&m.thread_id)
        })
        .await?;
        ipc::listen(events::EXPORT_PROGRESS, move |p: ExportProgress| {
            self.export_progress.set(Some(p))
        })
        .await?;
        ipc::listen(events::RUN_FINISHED, move |done: RunFinished| {
            self.with_run(&done.thread_id, &done.trace_id, |run| {
                run.finish(done.metadata.clone())
            });
            if let Some(e) = &done.error {
                self.banner.set(Some(e.clone()));
            }
            self.bump(&done.thread_id);
        })
        .await?;
        ipc::listen(events::ATTACHED, move |picked: Picked| {
            self.dropped.set(Some(picked))
        })
        .await?;
        ipc::listen(events::KNOWLEDGE, move |progress: IndexProgress| {
            self.indexing.set(progress)
        })
        .await?;
        ipc::listen(
            events::MCP_SIGN_IN,
            move |page: art_types::mcp::McpSignInPage| self.sign_in_page.set(Some(page)),
        )
        .await
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_answers_keeps_the_new_run_even_when_its_end_came_first() {
        let owner = Owner::new();
        owner.with(|| {
            let store = Store::new();
            let finish = |trace: &str| store.with_run("t", trace, |run| run.finish(None));
            finish("old");
            finish("other-thread-run");
            store.runs.update(|runs| runs[1].thread_id = "t2".into());
            // The replacing run finished before `regenerate` answered.
            finish("new");
            store.forget_finished("t", "new");
            store.with_run("t", "new", |_| {});
            let runs: Vec<(String, bool)> = store
                .runs
                .get_untracked()
                .into_iter()
                .map(|r| (r.trace_id, r.finished))
                .collect();
            assert_eq!(
                runs,
                [("other-thread-run".into(), true), ("new".into(), true)]
            );
            assert_eq!(store.version("t"), 1);
        });
    }
}
