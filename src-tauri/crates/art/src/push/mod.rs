//! Traces pushed to an OTLP collector as runs end ("Send traces to"): each finished run
//! is exported as OTLP protobuf — the same code as `art export --format otlp-proto` —
//! into a durable queue ([`outbox`]), and a sender ([`TracePush::run`]) sends the queue
//! oldest first in batches ([`send`]), retrying with backoff while the collector is
//! away, so nothing is lost when it is down or the app quits: what is queued is sent
//! after a restart. While the collector takes what is sent, a run's spans wait in memory
//! instead ([`fresh`]): named in a log, moved to the queue's file when the collector
//! does not take them or the app quits, and queued again from the database after a
//! crash ([`TracePush::recover`]). A [`PushStatus`] says how it goes.

mod config;
pub mod fresh;
mod now;
pub mod outbox;
pub mod send;
mod sender;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use art_types::push::{PushSettings, PushState, PushStatus};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::clock;
use crate::export::{self, ExportError, Redactor};
use crate::instance::ArtInstance;
pub use config::{MIN_QUEUE_LIMIT, SaveError, check, load, save, store_headers, stored_headers};
pub use fresh::{FreshRun, Logged};
pub use now::{PushExportError, Pushed, push_export, queue_file};
pub use outbox::{Counts, Outbox, OutboxError, Row, Rows, Tally};
pub use send::{Endpoint, EndpointError, SendError, Taken};
use sender::blocking;
pub use sender::{Sender, Step};

/// Bytes of spans (before compression) sent in one request at most; halved for the
/// rest of the session when a collector answers 413.
pub const BATCH_BYTES: usize = 4 << 20;
/// The first wait after a failure; doubled each time, to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between tries (unless the collector asks for longer).
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long the sender waits, once a run is queued, for the runs that end soon after
/// it: those go in the same request (OpenTelemetry's batch processor waits 5 s; a
/// desktop user looking at the collector should not wait that long).
pub const LINGER: Duration = Duration::from_secs(1);

/// Why a run could not be queued.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// Its spans could not be read.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// The queue could not be written.
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    /// The queue's thread stopped.
    #[error("the trace queue stopped: {0}")]
    Stopped(String),
}

/// The app's (or `art`'s) push: the settings in force, the queue and its sender.
pub struct TracePush {
    outbox: Arc<Outbox>,
    settings: watch::Sender<Option<(PushSettings, Endpoint)>>,
    status: watch::Sender<PushStatus>,
    wake: Notify,
    /// The last failure, kept for the status line until a batch goes through.
    failure: Mutex<Option<(String, Option<i64>)>>,
}

impl TracePush {
    /// The push over the queue at `path` (created if needed), off until configured.
    pub fn open(path: &Path) -> Result<Arc<Self>, OutboxError> {
        let outbox = Arc::new(Outbox::open(path)?);
        let push = Arc::new(Self {
            outbox,
            settings: watch::channel(None).0,
            status: watch::channel(PushStatus::default()).0,
            wake: Notify::new(),
            failure: Mutex::new(None),
        });
        push.publish(PushState::Off);
        Ok(push)
    }

    /// Use `settings` (with the header values from the keychain) from now on: the
    /// sender starts over with them, and the queue is sent at once.
    pub fn configure(
        &self,
        settings: &PushSettings,
        headers: &[(String, String)],
    ) -> Result<(), EndpointError> {
        let active = if settings.enabled {
            let endpoint = Endpoint::new(&settings.endpoint, headers, settings.encoding)?;
            Some((settings.clone(), endpoint))
        } else {
            None
        };
        if let Ok(mut failure) = self.failure.lock() {
            *failure = None;
        }
        self.outbox.set_limit(settings.queue_limit);
        let on = active.is_some();
        self.settings.send_replace(active);
        self.publish(if on { PushState::Idle } else { PushState::Off });
        Ok(())
    }

    /// The status line's facts, as they change.
    pub fn status(&self) -> watch::Receiver<PushStatus> {
        self.status.subscribe()
    }

    /// Whether the runs of `thread_id` are sent: the push is on, for that thread. (A
    /// caller checks before it builds what a run's queuing needs, such as the redactor,
    /// which reads the keychain.)
    pub fn sends(&self, thread_id: &str) -> bool {
        self.content_for(thread_id).is_some()
    }

    /// Whether the spans of `thread_id`'s runs carry content, when they are sent at all.
    fn content_for(&self, thread_id: &str) -> Option<bool> {
        self.settings
            .borrow()
            .as_ref()
            .filter(|(settings, _)| settings.scope.includes(thread_id))
            .map(|(settings, _)| settings.include_content)
    }

    /// Run `trace_id` of `thread_id` is about to start: if its spans will be sent, its
    /// observations are kept as they are recorded (see [`crate::observation::RunTap`]),
    /// so that queuing it reads nothing back. (A run not watched is read from storage.)
    pub fn watch(&self, art: &ArtInstance, thread_id: &str, trace_id: &str) {
        if let Some(content) = self.content_for(thread_id) {
            art.observations.tap().watch(trace_id);
            // Named as it starts: a kill before it ends leaves it for the next start.
            if let Err(e) = self.outbox.run_started(trace_id, thread_id, content) {
                tracing::warn!("a run's start could not be noted for the push: {e}");
            }
        }
    }

    /// Queue the spans of run `trace_id` of `thread_id`, which ended, if sending is on
    /// for that thread (those queued while it waited are not queued again); returns the
    /// spans queued.
    pub async fn run_ended(
        &self,
        art: &ArtInstance,
        redactor: &Redactor,
        thread_id: &str,
        trace_id: &str,
    ) -> Result<u64, PushError> {
        self.queue(art, redactor, thread_id, trace_id, false).await
    }

    /// Queue the spans run `trace_id` of `thread_id` ended so far, as it waits on a
    /// decision (the run and its open step follow when it ends); returns the spans
    /// queued.
    pub async fn run_waiting(
        &self,
        art: &ArtInstance,
        redactor: &Redactor,
        thread_id: &str,
        trace_id: &str,
    ) -> Result<u64, PushError> {
        self.queue(art, redactor, thread_id, trace_id, true).await
    }

    async fn queue(
        &self,
        art: &ArtInstance,
        redactor: &Redactor,
        thread_id: &str,
        trace_id: &str,
        waiting: bool,
    ) -> Result<u64, PushError> {
        let queued = self
            .queue_now(art, redactor, thread_id, trace_id, waiting)
            .await;
        // Queued (or not to be sent): no longer one a crash would lose.
        if let Err(e) = self.outbox.run_settled(trace_id) {
            tracing::warn!("a run's end could not be noted for the push: {e}");
        }
        queued
    }

    async fn queue_now(
        &self,
        art: &ArtInstance,
        redactor: &Redactor,
        thread_id: &str,
        trace_id: &str,
        waiting: bool,
    ) -> Result<u64, PushError> {
        let settings = self.settings.borrow().as_ref().map(|(s, _)| s.clone());
        let Some(settings) = settings.filter(|s| s.scope.includes(thread_id)) else {
            art.observations.tap().forget(trace_id);
            return Ok(0);
        };
        // What the run kept as it recorded (a waiting run's stays watched).
        let kept = art.observations.tap().take(trace_id, waiting);
        let (spans, bytes) = export::run_as_protobuf(
            art,
            thread_id,
            trace_id,
            kept,
            settings.include_content,
            redactor,
        )
        .await?;
        let outbox = Arc::clone(&self.outbox);
        let limit = settings.queue_limit.max(1);
        if !waiting && !outbox.has_early(trace_id) {
            // The usual run: whole, none of it sent early, kept in memory for the sender.
            if spans == 0 {
                return Ok(0);
            }
            let run = FreshRun {
                trace_id: trace_id.to_owned(),
                thread_id: thread_id.to_owned(),
                content: settings.include_content,
                spans,
                bytes,
            };
            if let Some(run) = outbox.add_fresh(run)? {
                // Memory is full (the collector has been away): into the file.
                blocking(move || outbox.add(&[(run.trace_id, run.spans, run.bytes)], limit))
                    .await?;
            }
            self.publish(PushState::Idle);
            self.wake.notify_one();
            return Ok(spans);
        }
        let trace = trace_id.to_owned();
        // One trip to the queue's thread: what was sent while the run waited, left out;
        // the rest queued; what is sent now remembered while it waits (forgotten once
        // it ended).
        let spans = blocking(move || {
            let early = outbox.sent_early(&trace)?;
            let (spans, bytes, sent) = sender::without(&bytes, |span| {
                early.contains(&span.span_id)
                    || (waiting
                        && span
                            .attributes
                            .iter()
                            .any(|kv| kv.key == export::otlp::OPEN))
            });
            if spans > 0 {
                outbox.add(&[(trace.clone(), spans, bytes)], limit)?;
            }
            outbox.mark_early(&trace, if waiting { &sent } else { &[] })?;
            Ok(spans)
        })
        .await?;
        if spans > 0 {
            self.publish(PushState::Idle);
            self.wake.notify_one();
        }
        Ok(spans)
    }

    /// Queue again the runs an earlier process kept in memory and never saw sent (it was
    /// killed, or the machine stopped): exported from `art`'s database as they were
    /// (content as it was chosen then), into the queue's file. Called once at start,
    /// before the runs of this session end; returns the spans queued.
    pub async fn recover(&self, art: &ArtInstance, redactor: &Redactor) -> Result<u64, PushError> {
        let left = self.outbox.left();
        if left.is_empty() {
            return Ok(0);
        }
        let mut rows = Vec::new();
        for run in &left {
            let exported = export::run_as_protobuf(
                art,
                &run.thread_id,
                &run.trace_id,
                None,
                run.content,
                redactor,
            )
            .await;
            match exported {
                Ok((0, _)) => {}
                Ok((spans, bytes)) => rows.push((run.trace_id.clone(), spans, bytes)),
                // Its thread was deleted meanwhile: nothing to send.
                Err(ExportError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let spans = rows.iter().map(|(_, spans, _)| spans).sum();
        let outbox = Arc::clone(&self.outbox);
        blocking(move || outbox.add_left(&left, &rows)).await?;
        if spans > 0 {
            tracing::info!(spans, "spans of runs a crash left unsent are queued again");
            self.publish(PushState::Idle);
            self.wake.notify_one();
        }
        Ok(spans)
    }

    /// Runs an earlier process left unsent in memory, for [`Self::recover`].
    pub fn left_unsent(&self) -> usize {
        self.outbox.left().len()
    }

    /// Move the runs waiting in memory to the queue's file, where the next start finds
    /// them: called as the app quits (and by [`Self::run`] when it stops).
    pub fn keep_unsent(&self) -> Result<u64, OutboxError> {
        let dropped = self.outbox.spill()?;
        self.outbox.forget_started()?;
        Ok(dropped)
    }

    /// Send the queue for as long as `stop` is not cancelled: [`LINGER`] after a run is
    /// queued (with the runs queued meanwhile), at once when the settings change, again
    /// after a failure's wait. When it stops, what waits in memory goes to the queue's
    /// file.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        self.send(&stop).await;
        let push = Arc::clone(&self);
        if let Err(e) = blocking(move || push.keep_unsent()).await {
            tracing::warn!("unsent spans were not kept for the next start: {e}");
        }
    }

    async fn send(&self, stop: &CancellationToken) {
        let mut settings = self.settings.subscribe();
        'settings: loop {
            let active = settings.borrow_and_update().clone();
            let Some((_, endpoint)) = active else {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = settings.changed() => if changed.is_err() { return } else { continue },
                }
            };
            let mut sender = Sender::new(Arc::clone(&self.outbox), endpoint);
            loop {
                self.publish(PushState::Sending);
                let step = tokio::select! {
                    () = stop.cancelled() => return,
                    step = sender.step() => step,
                };
                let pause = match step {
                    Ok(Step::Empty) => None,
                    Ok(Step::Sent { rejected, .. }) => {
                        let said = rejected
                            .map(|(n, said)| format!("the collector rejected {n} spans: {said}"));
                        self.fail(said, None);
                        continue;
                    }
                    Ok(Step::Split) => continue,
                    Ok(Step::Refused(n, reason)) => {
                        self.fail(Some(format!("{n} spans refused: {reason}")), None);
                        continue;
                    }
                    Ok(Step::Wait(wait, reason)) => {
                        let at = clock::now_ms() + wait.as_millis() as i64;
                        self.fail(Some(reason), Some(at));
                        Some(wait)
                    }
                    Err(e) => {
                        self.fail(Some(e.to_string()), None);
                        Some(MAX_BACKOFF)
                    }
                };
                self.publish(if pause.is_some() {
                    PushState::Failing
                } else {
                    PushState::Idle
                });
                let wait = async {
                    match pause {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => {
                            self.wake.notified().await;
                            tokio::time::sleep(LINGER).await;
                        }
                    }
                };
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = settings.changed() => if changed.is_err() {
                        return
                    } else {
                        // The next sender reads from the oldest row: this one's last
                        // batch must be out of the queue first.
                        let _ = sender.settle().await;
                        continue 'settings
                    },
                    () = wait => {}
                }
            }
        }
    }

    /// Keep `error` (or clear it) for the status line.
    fn fail(&self, error: Option<String>, retry_at: Option<i64>) {
        if let Ok(mut failure) = self.failure.lock() {
            *failure = error.map(|e| (e, retry_at));
        }
    }

    /// Publish the status in `state` with the queue's counts.
    fn publish(&self, state: PushState) {
        let counts = self.outbox.counts().unwrap_or_default();
        let endpoint = self
            .settings
            .borrow()
            .as_ref()
            .map(|(_, e)| e.url().to_string());
        let failure = self.failure.lock().ok().and_then(|f| f.clone());
        let (last_error, retry_at) = match failure {
            Some((e, at)) => (Some(e), at),
            None => (None, None),
        };
        let failing = state == PushState::Failing;
        let hint = failing.then(|| {
            "Check that the collector runs and takes OTLP/HTTP at this address; spans wait in \
             the queue until it does"
                .to_owned()
        });
        let status = PushStatus {
            state: if endpoint.is_none() {
                PushState::Off
            } else {
                state
            },
            endpoint,
            queued_runs: counts.rows,
            queued_spans: counts.spans,
            sent_spans: counts.sent,
            dropped_spans: counts.dropped,
            refused_spans: counts.refused,
            last_error,
            hint,
            retry_at: retry_at.filter(|_| failing),
        };
        self.status.send_replace(status);
    }
}
