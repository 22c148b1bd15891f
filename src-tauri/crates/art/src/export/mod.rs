//! Traces out of the database in three formats, and the native one back in:
//!
//! - [`jsonl`]: the native format, one JSON object per line (`docs/trace-format.md`):
//!   lossless, importable into another database;
//! - [`otlp`]: OpenTelemetry's file-exporter shapes (JSON Lines of `TracesData`, or
//!   protobuf `TracesData` each after its length), one span tree per run with the GenAI
//!   semantic-convention attributes, for tracing tools;
//! - [`markdown`]: the conversation as a person reads it, with each answer's plan and
//!   tool calls.
//!
//! Every format streams: observations are read in batches while the file is written, so
//! exporting millions stays in bounded memory. No secret leaves: every line written goes
//! through a [`Redactor`].

pub mod jsonl;
pub mod markdown;
pub mod otlp;
mod redact;

use std::io::Write;

use art_types::{AgentState, ConversationMessage, ThreadConfig, ThreadSummary};

use crate::context::{ContextError, MessageOptions};
use crate::instance::ArtInstance;
use crate::observation::{KeptRun, ObservationQuery, StoredObservation};
use crate::storage::StorageError;

pub use redact::{KEEP_REDACTOR, REDACTED, Redactor, Redactors};

/// Observations read per batch.
const BATCH: usize = 2_048;

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One run.
    Trace(String),
    /// One thread.
    Thread(String),
    /// Every thread.
    All,
}

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Native JSON Lines ([`jsonl`]).
    Jsonl,
    /// OpenTelemetry JSON Lines ([`otlp`]).
    Otlp,
    /// OpenTelemetry protobuf, length-prefixed like the collector's file exporter
    /// writes it ([`otlp`]).
    OtlpProto,
    /// A Markdown transcript ([`markdown`]).
    Markdown,
}

impl Format {
    /// Every format.
    pub const ALL: [Self; 4] = [Self::Jsonl, Self::Otlp, Self::OtlpProto, Self::Markdown];

    /// Its name on the command line and in the app: `jsonl`, `otlp`, `otlp-proto`,
    /// `markdown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Otlp => "otlp",
            Self::OtlpProto => "otlp-proto",
            Self::Markdown => "markdown",
        }
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Otlp => "otlp.jsonl",
            Self::OtlpProto => "otlp.pb",
            Self::Markdown => "md",
        }
    }

    /// Parse a name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// Choices that change what an export holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// OTLP: include what people and models wrote (questions, answers, tool arguments
    /// and results, observation content). Off by default, as the GenAI conventions ask.
    pub include_content: bool,
    /// Markdown: include the model's thinking.
    pub include_thinking: bool,
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Threads.
    pub threads: u64,
    /// Messages.
    pub messages: u64,
    /// Observations.
    pub observations: u64,
}

/// How far an export is: observations written so far, of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Written so far.
    pub done: u64,
    /// In the scope.
    pub total: u64,
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The thread or run is not in the database.
    #[error("there is no {what} {id} in this database")]
    NotFound {
        /// `thread` or `run`.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// Reading failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Reading threads or messages failed.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The file could not be created.
    #[error("cannot create {path}: {source}")]
    Create {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Writing failed (disk full, permissions…).
    #[error("cannot write the export: {0}")]
    Write(#[from] std::io::Error),
}

/// One thread as an export sees it.
pub struct ThreadData {
    /// The thread list entry.
    pub thread: ThreadSummary,
    /// Its messages in the scope, oldest first.
    pub messages: Vec<ConversationMessage>,
    /// Its saved configuration, if any.
    pub config: Option<ThreadConfig>,
    /// Its saved agent state, if any.
    pub state: Option<AgentState>,
}

/// A format's writer: called once per thread in the scope, then with its observations
/// in batches (oldest first), then once at the end.
pub(crate) trait Sink: Send {
    /// A thread begins.
    fn thread(&mut self, data: &ThreadData) -> Result<(), ExportError>;
    /// Observations of the current thread, oldest first (decoded by the sink if it
    /// needs them decoded).
    fn observations(&mut self, batch: Vec<StoredObservation>) -> Result<(), ExportError>;
    /// The current thread is done.
    fn end_thread(&mut self) -> Result<(), ExportError>;
    /// Everything is done.
    fn finish(&mut self, summary: &Summary) -> Result<(), ExportError>;
}

/// Write `scope` of `art`'s database to `out` in `format`, calling `progress` as
/// observations are written.
pub async fn export(
    art: &ArtInstance,
    scope: &Scope,
    format: Format,
    options: Options,
    redactor: &Redactor,
    out: &mut (dyn Write + Send),
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Summary, ExportError> {
    match format {
        Format::Jsonl => {
            let mut sink = jsonl::Writer::new(out, redactor, scope, art.attachments.clone())?;
            walk(art, scope, &mut sink, progress).await
        }
        Format::Otlp | Format::OtlpProto => {
            let encoding = if format == Format::Otlp {
                otlp::Encoding::JsonLines
            } else {
                otlp::Encoding::Protobuf
            };
            let mut sink = otlp::Writer::new(out, redactor, options.include_content, encoding);
            walk(art, scope, &mut sink, progress).await
        }
        Format::Markdown => {
            let mut sink = markdown::Writer::new(out, redactor, options.include_thinking);
            walk(art, scope, &mut sink, progress).await
        }
    }
}

/// One run of thread `thread_id` as OTLP protobuf, as the push queues each run when it
/// ends: the `resource_spans` entries of the `.pb` export of [`Scope::Trace`] (without
/// their length prefixes, written so) and how many spans they hold. The run's
/// observations and messages are `kept` when the caller has them (kept as they were
/// written: see [`crate::observation::RunTap`]), else read on the run's index — so it
/// costs the same however long the thread. A run with no observations (or none in that
/// thread) has no spans.
pub async fn run_as_protobuf(
    art: &ArtInstance,
    thread_id: &str,
    trace_id: &str,
    kept: Option<KeptRun>,
    include_content: bool,
    redactor: &Redactor,
) -> Result<(u64, Vec<u8>), ExportError> {
    let (kept, messages) = match kept {
        Some(kept) => (Some(kept.observations), kept.messages),
        None => {
            let messages = art
                .conversation
                .messages_of_run(thread_id, trace_id)
                .await?;
            (None, messages)
        }
    };
    let mut scan = kept.is_none().then(|| {
        let query = ObservationQuery {
            thread_id: Some(thread_id.to_owned()),
            trace_ids: vec![trace_id.to_owned()],
            ..ObservationQuery::default()
        };
        art.observations.scan(&query, BATCH)
    });
    let mut entries = Vec::new();
    let mut sink = otlp::Writer::new(
        &mut entries,
        redactor,
        include_content,
        otlp::Encoding::Entries,
    );
    sink.begin(thread_id, &messages);
    if let Some(scan) = scan.as_mut() {
        while let Some(batch) = scan.next_batch().await {
            sink.observations(batch?)?;
        }
    } else {
        sink.observations(kept.unwrap_or_default())?;
    }
    sink.end_thread()?;
    sink.finish(&Summary::default())?;
    let spans = sink.spans();
    Ok((spans, entries))
}

/// [`export`] into a new file at `path`; a failed export leaves no half-written file.
pub async fn export_to_file(
    art: &ArtInstance,
    scope: &Scope,
    format: Format,
    options: Options,
    redactor: &Redactor,
    path: &std::path::Path,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Summary, ExportError> {
    let file = std::fs::File::create(path).map_err(|source| ExportError::Create {
        path: path.display().to_string(),
        source,
    })?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let written = export(art, scope, format, options, redactor, &mut out, progress).await;
    drop(out);
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// The thread of a run.
async fn thread_of_trace(art: &ArtInstance, trace_id: &str) -> Result<String, ExportError> {
    art.observations
        .thread_of(trace_id)
        .await?
        .ok_or_else(|| ExportError::NotFound {
            what: "run",
            id: trace_id.to_owned(),
        })
}

/// Feed the threads and observations of `scope` to `sink`.
async fn walk(
    art: &ArtInstance,
    scope: &Scope,
    sink: &mut dyn Sink,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Summary, ExportError> {
    let (threads, trace) = match scope {
        Scope::All => {
            let mut all = art.conversation.list_threads().await?;
            // Oldest first: a stable order for re-exports.
            all.sort_by(|a, b| (a.created_at, &a.thread_id).cmp(&(b.created_at, &b.thread_id)));
            (all, None)
        }
        Scope::Thread(id) => (vec![thread(art, id).await?], None),
        Scope::Trace(trace) => {
            let id = thread_of_trace(art, trace).await?;
            (vec![thread(art, &id).await?], Some(trace.clone()))
        }
    };
    let queries: Vec<ObservationQuery> = threads
        .iter()
        .map(|t| ObservationQuery {
            thread_id: Some(t.thread_id.clone()),
            trace_ids: trace.iter().cloned().collect(),
            ..ObservationQuery::default()
        })
        .collect();
    let mut total = 0;
    for query in &queries {
        total += art.observations.count(query).await?;
    }
    let mut summary = Summary::default();
    let mut done = 0;
    progress(Progress { done, total });
    let mut next_scan = None;
    for (i, (thread, query)) in threads.into_iter().zip(&queries).enumerate() {
        let mut scan = next_scan
            .take()
            .unwrap_or_else(|| art.observations.scan(query, BATCH));
        // The next thread's observations are read while this one's are written: no
        // stall at each thread's start (the reader is bounded, so is the read-ahead).
        next_scan = queries.get(i + 1).map(|q| art.observations.scan(q, BATCH));
        // One run's messages by its index: exporting each run as it ends (the push)
        // costs the same however long its thread.
        let messages = match &trace {
            Some(trace) => {
                art.conversation
                    .messages_of_run(&thread.thread_id, trace)
                    .await?
            }
            None => {
                art.conversation
                    .messages(&thread.thread_id, MessageOptions::default())
                    .await?
            }
        };
        let (config, state) = art.state.saved(&thread.thread_id).await?;
        let data = ThreadData {
            thread,
            messages,
            config,
            state,
        };
        sink.thread(&data)?;
        summary.threads += 1;
        summary.messages += data.messages.len() as u64;
        while let Some(batch) = scan.next_batch().await {
            let batch = batch?;
            done += batch.len() as u64;
            sink.observations(batch)?;
            progress(Progress { done, total });
        }
        sink.end_thread()?;
    }
    summary.observations = done;
    sink.finish(&summary)?;
    Ok(summary)
}

async fn thread(art: &ArtInstance, id: &str) -> Result<ThreadSummary, ExportError> {
    match art.conversation.thread(id).await {
        Err(ContextError::ThreadNotFound(_)) => Err(ExportError::NotFound {
            what: "thread",
            id: id.to_owned(),
        }),
        other => Ok(other?),
    }
}

/// Write `text` redacted.
fn emit(out: &mut (dyn Write + Send), redactor: &Redactor, text: &str) -> Result<(), ExportError> {
    out.write_all(redactor.apply(text).as_bytes())?;
    Ok(())
}
