//! `art export --to URL`: a scope's traces sent now, through the push's own queue and
//! sender (a queue of its own, removed after), with a bounded patience.

use std::path::Path;
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

use super::sender::{Sender, Step, blocking};
use super::{Endpoint, MAX_BACKOFF, Outbox, OutboxError, PushError};
use crate::export::{self, Format, Options, Redactor, Scope};
use crate::instance::ArtInstance;

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

/// Queue each run of the `.pb` file at `path` (as `--format otlp-proto` writes it); the
/// runs queued.
pub fn queue_file(outbox: &Outbox, path: &Path) -> Result<u64, OutboxError> {
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
            .map(|s| export::otlp::id_hex(&s.trace_id))
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
