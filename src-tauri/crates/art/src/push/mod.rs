//! Traces pushed to an OTLP collector as runs end ("Send traces to"): each finished run
//! is exported as OTLP protobuf — the same code as `art export --format otlp-proto` —
//! into a durable queue ([`outbox`]), and a sender ([`TracePush::run`]) sends the queue
//! oldest first in batches ([`send`]), retrying with backoff while the collector is
//! away, so nothing is lost when it is down or the app quits: what is queued is sent
//! after a restart. A [`PushStatus`] says how it goes.

pub mod outbox;
pub mod send;

use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use art_types::push::{PushSettings, PushState, PushStatus};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::clock;
use crate::export::{self, ExportError, Format, Options, Redactor, Scope};
use crate::instance::ArtInstance;
pub use outbox::{Counts, Outbox, OutboxError, Row, Tally};
pub use send::{Endpoint, EndpointError, SendError, Taken};

/// Bytes of spans (before compression) sent in one request at most; halved for the
/// rest of the session when a collector answers 413.
pub const BATCH_BYTES: usize = 4 << 20;
/// The first wait after a failure; doubled each time, to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between tries (unless the collector asks for longer).
const MAX_BACKOFF: Duration = Duration::from_secs(60);

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

/// What one go at the queue did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing was waiting.
    Empty,
    /// A batch was taken.
    Sent {
        /// Spans in it.
        spans: u64,
        /// Of those, the collector rejected (partial success), and what it said.
        rejected: Option<(u64, String)>,
    },
    /// The collector could not take it now: wait this long and try again.
    Wait(Duration, String),
    /// Too large: split, to be sent again at once.
    Split,
    /// Refused for good (or a single span too large): dropped and counted.
    Refused(u64, String),
}

/// Sends a queue's batches to one endpoint.
pub struct Sender {
    outbox: Arc<Outbox>,
    endpoint: Endpoint,
    batch: usize,
    backoff: Duration,
}

impl Sender {
    /// A sender of `outbox` to `endpoint`.
    pub fn new(outbox: Arc<Outbox>, endpoint: Endpoint) -> Self {
        Self {
            outbox,
            endpoint,
            batch: BATCH_BYTES,
            backoff: FIRST_BACKOFF,
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Send the oldest batch.
    pub async fn step(&mut self) -> Result<Step, PushError> {
        let (outbox, batch) = (Arc::clone(&self.outbox), self.batch);
        let rows = blocking(move || outbox.take(batch)).await?;
        if rows.is_empty() {
            return Ok(Step::Empty);
        }
        let spans: u64 = rows.iter().map(|r| r.spans).sum();
        let bytes = rows
            .iter()
            .flat_map(|r| r.bytes.iter().copied())
            .collect::<Vec<u8>>();
        let sent = self.endpoint.send(&bytes).await;
        let outbox = Arc::clone(&self.outbox);
        match sent {
            Ok(taken) => {
                self.backoff = FIRST_BACKOFF;
                let rejected = taken.rejected.min(spans);
                blocking(move || outbox.remove_taken(&rows, rejected)).await?;
                Ok(Step::Sent {
                    spans,
                    rejected: (rejected > 0).then_some((rejected, taken.message)),
                })
            }
            Err(SendError::Retry { after, reason }) => {
                let wait = after.unwrap_or_else(|| jitter(self.backoff));
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                Ok(Step::Wait(wait, reason))
            }
            Err(SendError::TooLarge(reason)) => {
                if rows.len() > 1 {
                    self.batch = (bytes.len() / 2).max(1);
                    return Ok(Step::Split);
                }
                let row = rows.into_iter().next().unwrap_or_else(|| unreachable!());
                match halves(&row) {
                    Some(parts) => {
                        blocking(move || outbox.split(&row, &parts)).await?;
                        Ok(Step::Split)
                    }
                    None => {
                        blocking(move || outbox.remove(&[row], Tally::Refused)).await?;
                        Ok(Step::Refused(spans, reason))
                    }
                }
            }
            Err(SendError::Refused(reason)) => {
                blocking(move || outbox.remove(&rows, Tally::Refused)).await?;
                Ok(Step::Refused(spans, reason))
            }
        }
    }
}

/// Run `work` on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, OutboxError> + Send + 'static,
) -> Result<T, PushError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| PushError::Stopped(e.to_string()))?
        .map_err(PushError::from)
}

/// `wait` give or take a fifth, so that many senders do not come back at once.
fn jitter(wait: Duration) -> Duration {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let fifth = wait.as_millis() as u64 / 5;
    let spread = if fifth == 0 { 0 } else { random % (2 * fifth) };
    Duration::from_millis(wait.as_millis() as u64 - fifth + spread)
}

/// A row's spans in two rows (the collector said one request of it is too large);
/// `None` for a single span.
fn halves(row: &Row) -> Option<Vec<(String, u64, Vec<u8>)>> {
    let request = ExportTraceServiceRequest::decode(row.bytes.as_slice()).ok()?;
    let mut spans = Vec::new();
    let mut template = None;
    for resource in request.resource_spans {
        for scope in resource.scope_spans {
            template.get_or_insert_with(|| (resource.resource.clone(), scope.scope.clone()));
            spans.extend(scope.spans);
        }
    }
    if spans.len() < 2 {
        return None;
    }
    let (resource, scope) = template?;
    let second = spans.split_off(spans.len() / 2);
    let part = |spans: Vec<_>| {
        let count = spans.len() as u64;
        let entry = export::otlp::entry(&ResourceSpans {
            resource: resource.clone(),
            scope_spans: vec![ScopeSpans {
                scope: scope.clone(),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        });
        (row.trace_id.clone(), count, entry)
    };
    Some(vec![part(spans), part(second)])
}

/// A run's spans as OTLP protobuf: its trace id, span count and `resource_spans` entry.
pub async fn encode_run(
    art: &ArtInstance,
    trace_id: &str,
    include_content: bool,
    redactor: &Redactor,
) -> Result<(u64, Vec<u8>), ExportError> {
    let mut out = Vec::new();
    let options = Options {
        include_content,
        ..Options::default()
    };
    let scope = Scope::Trace(trace_id.to_owned());
    export::export(
        art,
        &scope,
        Format::OtlpProto,
        options,
        redactor,
        &mut out,
        &mut |_| {},
    )
    .await?;
    let entries = unframe(&out);
    let spans = entries
        .iter()
        .filter_map(|e| ExportTraceServiceRequest::decode(*e).ok())
        .flat_map(|r| r.resource_spans)
        .flat_map(|r| r.scope_spans)
        .map(|s| s.spans.len() as u64)
        .sum();
    Ok((spans, entries.concat()))
}

/// The headers kept in the keychain for the push (name, value), in name order; none
/// when nothing is kept.
pub fn stored_headers(
    store: &dyn crate::secrets::SecretStore,
) -> Result<Vec<(String, String)>, crate::secrets::SecretError> {
    let Some(secret) = store.get(art_types::push::HEADERS_ACCOUNT)? else {
        return Ok(Vec::new());
    };
    let map: std::collections::BTreeMap<String, String> =
        serde_json::from_str(secret.expose()).unwrap_or_default();
    Ok(map.into_iter().collect())
}

/// Keep `headers` in the keychain for the push (none: remove them).
pub fn store_headers(
    store: &dyn crate::secrets::SecretStore,
    headers: &[(String, String)],
) -> Result<(), crate::secrets::SecretError> {
    if headers.is_empty() {
        return store.delete(art_types::push::HEADERS_ACCOUNT);
    }
    let map: std::collections::BTreeMap<&str, &str> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let json = serde_json::to_string(&map).unwrap_or_default();
    store.set(
        art_types::push::HEADERS_ACCOUNT,
        &crate::secrets::Secret::new(json),
    )
}

/// Tries in a row that may fail before [`push_export`] gives up.
const EXPORT_TRIES: u32 = 6;

/// What [`push_export`] sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pushed {
    /// Runs exported.
    pub runs: u64,
    /// Spans the collector took.
    pub sent: u64,
    /// Spans it refused.
    pub refused: u64,
    /// What it said when it last refused some.
    pub refusal: Option<String>,
}

/// Why [`push_export`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum PushExportError {
    /// The spans could not be exported or queued.
    #[error(transparent)]
    Push(#[from] PushError),
    /// The collector could not be reached or kept failing.
    #[error("sent {} of {} spans; then gave up after {EXPORT_TRIES} tries: {reason}", .pushed.sent, .total)]
    GaveUp {
        /// What was sent before.
        pushed: Pushed,
        /// Spans in the scope.
        total: u64,
        /// The last failure.
        reason: String,
    },
}

/// Send `scope` of `art`'s traces to `endpoint` now, through the push's own queue and
/// sender (a queue of its own at `queue`, removed after): `art export --to URL`.
/// `progress` hears spans sent of the total. Transient failures are retried with the
/// push's backoff, [`EXPORT_TRIES`] times in a row at most.
pub async fn push_export(
    art: &ArtInstance,
    scope: &Scope,
    include_content: bool,
    redactor: &Redactor,
    endpoint: Endpoint,
    queue: &Path,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<Pushed, PushExportError> {
    let file = TempQueue(queue.to_path_buf());
    let outbox = Arc::new(Outbox::open(&file.0).map_err(PushError::from)?);
    let options = Options {
        include_content,
        ..Options::default()
    };
    // Exported whole into the queue first (bounded memory: a file), then sent.
    let framed = file.0.with_extension("pb");
    let _framed_file = TempQueue(framed.clone());
    export::export_to_file(
        art,
        scope,
        Format::OtlpProto,
        options,
        redactor,
        &framed,
        &mut |_| {},
    )
    .await
    .map_err(PushError::from)?;
    let (outbox_in, framed_in) = (Arc::clone(&outbox), framed.clone());
    let runs = blocking(move || queue_file(&outbox_in, &framed_in)).await?;
    let total = outbox.counts().map_err(PushError::from)?.spans;
    let mut sender = Sender::new(Arc::clone(&outbox), endpoint);
    let mut pushed = Pushed {
        runs,
        ..Pushed::default()
    };
    let mut failures = 0;
    progress(0, total);
    loop {
        match sender.step().await? {
            Step::Empty => return Ok(pushed),
            Step::Sent { spans, rejected } => {
                failures = 0;
                let mut refused = 0;
                if let Some((n, said)) = rejected {
                    refused = n.min(spans);
                    pushed.refusal = Some(said);
                }
                pushed.sent += spans - refused;
                pushed.refused += refused;
            }
            Step::Split => {}
            Step::Refused(n, said) => {
                pushed.refused += n;
                pushed.refusal = Some(said);
            }
            Step::Wait(wait, reason) => {
                failures += 1;
                if failures >= EXPORT_TRIES {
                    return Err(PushExportError::GaveUp {
                        pushed,
                        total,
                        reason,
                    });
                }
                tokio::time::sleep(wait.min(MAX_BACKOFF)).await;
            }
        }
        progress(pushed.sent + pushed.refused, total);
    }
}

/// A file removed (with SQLite's companions) when dropped.
struct TempQueue(std::path::PathBuf);

impl Drop for TempQueue {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Queue each run of the `.pb` file at `path`; the runs queued.
fn queue_file(outbox: &Outbox, path: &Path) -> Result<u64, OutboxError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| OutboxError::io(path, &e))?;
    let mut file = std::io::BufReader::new(file);
    let mut rows = Vec::new();
    let mut runs = 0;
    let mut len = [0u8; 4];
    // One run at a time: memory stays bounded however much is exported.
    while file.read_exact(&mut len).is_ok() {
        let mut message = vec![0; u32::from_be_bytes(len) as usize];
        file.read_exact(&mut message)
            .map_err(|e| OutboxError::io(path, &e))?;
        let Ok(request) = ExportTraceServiceRequest::decode(message.as_slice()) else {
            continue;
        };
        let spans: u64 = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len() as u64)
            .sum();
        let trace = request
            .resource_spans
            .first()
            .and_then(|r| r.scope_spans.first())
            .and_then(|s| s.spans.first())
            .map(|s| s.trace_id.iter().map(|b| format!("{b:02x}")).collect())
            .unwrap_or_default();
        rows.push((trace, spans, message));
        runs += 1;
        if rows.len() >= 1024 {
            outbox.add(&rows, u64::MAX)?;
            rows.clear();
        }
    }
    outbox.add(&rows, u64::MAX)?;
    Ok(runs)
}

/// The messages of a `.pb` export (each after its length as 4 bytes, big-endian).
pub fn unframe(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(message) = rest.get(4..4 + len) else {
            break;
        };
        out.push(message);
        rest = &rest[4 + len..];
    }
    out
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
        let on = active.is_some();
        self.settings.send_replace(active);
        self.publish(if on { PushState::Idle } else { PushState::Off });
        Ok(())
    }

    /// The status line's facts, as they change.
    pub fn status(&self) -> watch::Receiver<PushStatus> {
        self.status.subscribe()
    }

    /// Queue the spans of run `trace_id` of `thread_id`, if sending is on for that
    /// thread; returns the spans queued.
    pub async fn run_ended(
        &self,
        art: &ArtInstance,
        redactor: &Redactor,
        thread_id: &str,
        trace_id: &str,
    ) -> Result<u64, PushError> {
        let Some(settings) = self.settings.borrow().as_ref().map(|(s, _)| s.clone()) else {
            return Ok(0);
        };
        if !settings.scope.includes(thread_id) {
            return Ok(0);
        }
        let (spans, bytes) = encode_run(art, trace_id, settings.include_content, redactor).await?;
        if spans == 0 {
            return Ok(0);
        }
        let outbox = Arc::clone(&self.outbox);
        let row = vec![(trace_id.to_owned(), spans, bytes)];
        let limit = settings.queue_limit.max(1);
        blocking(move || outbox.add(&row, limit)).await?;
        self.publish(PushState::Idle);
        self.wake.notify_one();
        Ok(spans)
    }

    /// Send the queue for as long as `stop` is not cancelled: at once when a run is
    /// queued or the settings change, again after a failure's wait.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
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
                        None => self.wake.notified().await,
                    }
                };
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = settings.changed() => if changed.is_err() { return } else { continue 'settings },
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
