//! One sender of a queue to one endpoint: a batch at a time, oldest first, and what
//! each answer means for the queue — taken (removed, counted), wait and try again
//! (backoff doubling to a minute, or the collector's `Retry-After`), too large (the
//! batch halved, then a run split in two), refused (dropped, counted). The file's rows
//! go first (they are older), then the runs waiting in memory ([`super::fresh`]), which
//! move to the file when the collector does not take them.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message;

use super::{
    BATCH_BYTES, Endpoint, FIRST_BACKOFF, MAX_BACKOFF, Outbox, OutboxError, PushError, Row,
    SendError, Tally,
};
use crate::export;

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
    /// The batch after the one on its way, read and compressed meanwhile (on another
    /// core than the request's); dropped when that one is not taken.
    next: Option<tokio::task::JoinHandle<Result<Option<Batch>, PushError>>>,
    /// The rows of the last batch taken, being removed from the queue while the next
    /// batch is on its way (awaited before anything reads the queue from its oldest row
    /// again, and before the queue is said empty).
    removing: Option<tokio::task::JoinHandle<Result<(), OutboxError>>>,
}

/// A batch ready to send: its rows and the request body made of them.
struct Batch {
    rows: Vec<Row>,
    spans: u64,
    /// Bytes of its entries, before compression.
    size: usize,
    /// The entry, when the batch is one row (to split it, should it be too large).
    single: Option<Vec<u8>>,
    body: Result<Vec<u8>, SendError>,
    /// Runs from memory (no rows): sent, refused or moved to the file as a whole.
    fresh: usize,
}

/// Read the oldest rows after `after` (up to `limit` bytes) and make their body.
fn prepare(
    outbox: &Outbox,
    endpoint: &Endpoint,
    limit: usize,
    after: Option<i64>,
) -> Result<Option<Batch>, PushError> {
    let taken = outbox.take(limit, after)?;
    if taken.rows.is_empty() {
        // Memory's runs come after the file's (never read ahead: one batch of them at
        // a time is on its way).
        return Ok(after
            .is_none()
            .then(|| fresh(outbox, endpoint, limit))
            .flatten());
    }
    let body = endpoint.body(&taken.bytes);
    Ok(Some(Batch {
        spans: taken.spans(),
        size: taken.bytes.len(),
        single: (taken.rows.len() == 1).then_some(taken.bytes),
        rows: taken.rows,
        body,
        fresh: 0,
    }))
}

/// The oldest runs in memory (up to `limit` bytes) as a batch.
fn fresh(outbox: &Outbox, endpoint: &Endpoint, limit: usize) -> Option<Batch> {
    let runs = outbox.take_fresh(limit);
    if runs.is_empty() {
        return None;
    }
    let mut bytes = Vec::with_capacity(runs.iter().map(|r| r.bytes.len()).sum());
    for run in &runs {
        bytes.extend_from_slice(&run.bytes);
    }
    Some(Batch {
        rows: Vec::new(),
        spans: runs.iter().map(|r| r.spans).sum(),
        size: bytes.len(),
        single: None,
        body: endpoint.body(&bytes),
        fresh: runs.len(),
    })
}

impl Sender {
    /// A sender of `outbox` to `endpoint`.
    pub fn new(outbox: Arc<Outbox>, endpoint: Endpoint) -> Self {
        Self {
            outbox,
            endpoint,
            batch: BATCH_BYTES,
            backoff: FIRST_BACKOFF,
            next: None,
            removing: None,
        }
    }

    /// Wait for the last batch's rows to be removed from the queue.
    pub async fn settle(&mut self) -> Result<(), PushError> {
        removed(self.removing.take()).await
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// A batch of the rows after `after`, prepared on a blocking thread.
    fn read_ahead(
        &self,
        after: Option<i64>,
    ) -> tokio::task::JoinHandle<Result<Option<Batch>, PushError>> {
        let (outbox, endpoint, limit) =
            (Arc::clone(&self.outbox), self.endpoint.clone(), self.batch);
        tokio::task::spawn_blocking(move || prepare(&outbox, &endpoint, limit, after))
    }

    /// Send the oldest batch.
    pub async fn step(&mut self) -> Result<Step, PushError> {
        let ahead = match self.next.take() {
            Some(next) => joined(next).await?,
            None => None,
        };
        let batch = match ahead {
            Some(batch) => Some(batch),
            None => {
                // Read from the oldest row: the last batch's rows must be gone first.
                self.settle().await?;
                joined(self.read_ahead(None)).await?
            }
        };
        let Some(batch) = batch else {
            return Ok(Step::Empty);
        };
        if batch.fresh > 0 {
            return self.send_fresh(batch).await;
        }
        let Batch {
            rows,
            spans,
            size,
            single,
            body,
            fresh: _,
        } = batch;
        // The next batch is made while this one is on its way, and the last one's rows
        // are removed meanwhile.
        self.next = Some(self.read_ahead(rows.last().map(|r| r.id)));
        let removing = self.removing.take();
        let post = async {
            match body {
                Ok(body) => self.endpoint.post(body).await,
                Err(e) => Err(e),
            }
        };
        let (sent, gone) = tokio::join!(post, removed(removing));
        if let Err(e) = gone {
            // This batch may have been taken, its rows still queued: read again from the
            // oldest (a collector tolerates a span sent twice; a span lost, not).
            self.next = None;
            return Err(e);
        }
        let outbox = Arc::clone(&self.outbox);
        match sent {
            Ok(taken) => {
                self.backoff = FIRST_BACKOFF;
                let rejected = taken.rejected.min(spans);
                self.removing = Some(tokio::task::spawn_blocking(move || {
                    outbox.remove_taken(&rows, rejected)
                }));
                Ok(Step::Sent {
                    spans,
                    rejected: (rejected > 0).then_some((rejected, taken.message)),
                })
            }
            Err(SendError::Retry { after, reason }) => {
                // Read again from the oldest when the collector is back; the runs in
                // memory wait in the file meanwhile (its limit applies to them too).
                self.next = None;
                blocking(move || outbox.spill()).await?;
                Ok(self.wait(after, reason))
            }
            Err(SendError::TooLarge(reason)) => {
                self.next = None;
                if rows.len() > 1 {
                    self.batch = (size / 2).max(1);
                    return Ok(Step::Split);
                }
                let row = rows.into_iter().next().unwrap_or_else(|| unreachable!());
                match single.as_deref().and_then(halves) {
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

    /// Send a batch of runs from memory. What the collector does not take now goes to
    /// the file with every other run in memory (the file's limit applies there, and a
    /// restart finds them); a batch too large is split there, as the file's are.
    async fn send_fresh(&mut self, batch: Batch) -> Result<Step, PushError> {
        let (spans, size, runs) = (batch.spans, batch.size, batch.fresh);
        let post = async {
            match batch.body {
                Ok(body) => self.endpoint.post(body).await,
                Err(e) => Err(e),
            }
        };
        let outbox = Arc::clone(&self.outbox);
        let spill = || {
            let outbox = Arc::clone(&outbox);
            blocking(move || outbox.spill())
        };
        match post.await {
            Ok(taken) => {
                self.backoff = FIRST_BACKOFF;
                let rejected = taken.rejected.min(spans);
                self.removing = Some(tokio::task::spawn_blocking(move || {
                    outbox.fresh_taken(spans, rejected)
                }));
                Ok(Step::Sent {
                    spans,
                    rejected: (rejected > 0).then_some((rejected, taken.message)),
                })
            }
            Err(SendError::Retry { after, reason }) => {
                spill().await?;
                Ok(self.wait(after, reason))
            }
            Err(SendError::TooLarge(_)) => {
                spill().await?;
                if runs > 1 {
                    self.batch = (size / 2).max(1);
                }
                Ok(Step::Split)
            }
            Err(SendError::Refused(reason)) => {
                blocking(move || outbox.fresh_refused(spans)).await?;
                Ok(Step::Refused(spans, reason))
            }
        }
    }

    /// Wait before the next try: as the collector said, else the backoff (doubled for
    /// the time after).
    fn wait(&mut self, after: Option<Duration>, reason: String) -> Step {
        let wait = after.unwrap_or_else(|| jitter(self.backoff));
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        Step::Wait(wait, reason)
    }
}

/// A prepared batch, once its preparation is done.
async fn joined(
    ready: tokio::task::JoinHandle<Result<Option<Batch>, PushError>>,
) -> Result<Option<Batch>, PushError> {
    ready.await.map_err(|e| PushError::Stopped(e.to_string()))?
}

/// The end of a batch's removal from the queue, if one is under way.
async fn removed(
    removing: Option<tokio::task::JoinHandle<Result<(), OutboxError>>>,
) -> Result<(), PushError> {
    match removing {
        Some(removing) => removing
            .await
            .map_err(|e| PushError::Stopped(e.to_string()))?
            .map_err(PushError::from),
        None => Ok(()),
    }
}

/// Run `work` on a blocking thread.
pub(super) async fn blocking<T: Send + 'static>(
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

/// `entries` (encoded `resource_spans`) without the spans `drop` picks: the spans left,
/// their bytes, and their ids.
pub(super) fn without(
    entries: &[u8],
    drop: impl Fn(&opentelemetry_proto::tonic::trace::v1::Span) -> bool,
) -> (u64, Vec<u8>, Vec<Vec<u8>>) {
    let Ok(request) = ExportTraceServiceRequest::decode(entries) else {
        return (0, Vec::new(), Vec::new());
    };
    let (mut count, mut bytes, mut ids) = (0, Vec::new(), Vec::new());
    for mut resource in request.resource_spans {
        for scope in &mut resource.scope_spans {
            scope.spans.retain(|span| !drop(span));
            count += scope.spans.len() as u64;
            ids.extend(scope.spans.iter().map(|s| s.span_id.clone()));
        }
        resource.scope_spans.retain(|s| !s.spans.is_empty());
        if !resource.scope_spans.is_empty() {
            bytes.extend(export::otlp::entry(&resource));
        }
    }
    (count, bytes, ids)
}

/// A row's spans (its `entry`) in two rows (the collector said one request of it is too
/// large); `None` for a single span.
fn halves(entry: &[u8]) -> Option<Vec<(String, u64, Vec<u8>)>> {
    let request = ExportTraceServiceRequest::decode(entry).ok()?;
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
    let trace = export::otlp::id_hex(&spans[0].trace_id);
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
        (trace.clone(), count, entry)
    };
    Some(vec![part(spans), part(second)])
}
