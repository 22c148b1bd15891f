//! ObservationManager: gives each observation an id, timestamp and title, persists it,
//! and only then broadcasts it on the observation socket (a subscriber never sees an
//! observation that is not on disk).

use std::sync::Arc;
use std::task::Poll;

use art_types::{Observation, ObservationType, SpanInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod sent;
mod tap;

pub use tap::{KeptRun, RunTap};

use crate::clock;
use crate::sockets::Sockets;
use crate::storage::{
    self, Collection, Order, Query, Record, RecordStream, StorageAdapter, StorageError,
};

/// An observation before the manager stamps it.
#[derive(Debug, Clone)]
pub struct NewObservation {
    /// The thread the run belongs to.
    pub thread_id: String,
    /// The run it belongs to.
    pub trace_id: String,
    /// What happened; decides the shape of `content`.
    pub kind: ObservationType,
    /// Title; a default per kind when `None`.
    pub title: Option<String>,
    /// What was observed (the plan, a tool's result, an error), as exports show it.
    pub content: Value,
    /// Facts about the observation itself (durations, model, error codes).
    pub metadata: Value,
    /// Position in the span tree.
    pub span: Option<SpanInfo>,
}

impl NewObservation {
    /// An observation with content only.
    pub fn new(thread_id: &str, trace_id: &str, kind: ObservationType, content: Value) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            trace_id: trace_id.to_owned(),
            kind,
            title: None,
            content,
            metadata: Value::Null,
            span: None,
        }
    }
}

/// What to fetch.
#[derive(Debug, Clone, Default)]
pub struct ObservationQuery {
    /// Only this thread.
    pub thread_id: Option<String>,
    /// Only these runs (empty: all).
    pub trace_ids: Vec<String>,
    /// Only these types (empty: all).
    pub types: Vec<ObservationType>,
    /// Newest first instead of oldest first.
    pub newest_first: bool,
    /// At most this many.
    pub limit: Option<usize>,
}

/// Default title of a kind.
pub fn default_title(kind: ObservationType) -> &'static str {
    match kind {
        ObservationType::Intent => "Intent",
        ObservationType::Title => "Title",
        ObservationType::Plan => "Plan",
        ObservationType::Thoughts => "Thinking",
        ObservationType::ToolCall => "Tool call",
        ObservationType::ToolExecution => "Tool execution",
        ObservationType::Synthesis => "Synthesis",
        ObservationType::Error => "Error",
        ObservationType::FinalResponse => "Final response",
        ObservationType::StateUpdate => "Agent state changed",
        ObservationType::LlmStreamStart => "LLM call started",
        ObservationType::LlmStreamMetadata => "LLM call metadata",
        ObservationType::LlmStreamEnd => "LLM call finished",
        ObservationType::LlmStreamError => "LLM call failed",
        ObservationType::Step => "Step",
        ObservationType::PlanUpdate => "Plan changed",
        ObservationType::Suspension => "Waiting for approval",
        ObservationType::Approval => "Approval",
        ObservationType::PlanReview => "Waiting for the plan's review",
        ObservationType::Elicitation => "A server asks",
        ObservationType::ElicitationAnswer => "The server's question answered",
        ObservationType::ToolProgress => "Progress of a tool call",
    }
}

/// The body of a stored observation: what its indexed columns (id, thread, run, type,
/// timestamp) do not already hold. Bodies written before observations had their own
/// table carry the whole observation; the extra fields are ignored.
#[derive(Serialize)]
struct StoredRef<'a> {
    title: &'a str,
    content: &'a Value,
    #[serde(skip_serializing_if = "Value::is_null")]
    metadata: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    span: &'a Option<SpanInfo>,
}

#[derive(Deserialize)]
struct Stored {
    title: String,
    content: Value,
    #[serde(default)]
    metadata: Value,
    #[serde(default)]
    span: Option<SpanInfo>,
}

fn to_record(o: &Observation) -> Result<Record, StorageError> {
    let body = StoredRef {
        title: &o.title,
        content: &o.content,
        metadata: &o.metadata,
        span: &o.span,
    };
    Ok(Record {
        id: o.id.clone(),
        thread_id: Some(o.thread_id.clone()),
        trace_id: Some(o.trace_id.clone()),
        kind: Some(o.kind.as_str().to_owned()),
        timestamp: o.timestamp,
        search_text: None,
        body: storage::encode(&body)?,
        parent: None,
    })
}

fn from_record(r: Record) -> Result<Observation, StorageError> {
    let corrupt = |message: &str| StorageError::Corrupt {
        collection: Collection::Observations.as_str(),
        id: r.id.clone(),
        message: message.to_owned(),
    };
    let kind = r
        .kind
        .as_deref()
        .and_then(ObservationType::parse)
        .ok_or_else(|| corrupt("unknown observation type"))?;
    let (Some(thread_id), Some(trace_id)) = (r.thread_id.clone(), r.trace_id.clone()) else {
        return Err(corrupt("observation without a thread or run"));
    };
    let stored: Stored = r.decode(Collection::Observations)?;
    Ok(Observation {
        id: r.id,
        thread_id,
        trace_id,
        timestamp: r.timestamp,
        kind,
        title: stored.title,
        content: stored.content,
        metadata: stored.metadata,
        span: stored.span,
    })
}

fn storage_query(query: &ObservationQuery) -> Query {
    Query {
        thread_id: query.thread_id.clone(),
        trace_ids: query.trace_ids.clone(),
        kinds: query.types.iter().map(|t| t.as_str().to_owned()).collect(),
        order: if query.newest_first {
            Order::Descending
        } else {
            Order::Ascending
        },
        limit: query.limit,
        ..Query::default()
    }
}

/// Observations as a scan reads them (see [`ObservationManager::scan`]).
pub struct ObservationScan {
    records: RecordStream,
}

impl ObservationScan {
    /// The next batch; `None` at the end.
    pub async fn next_batch(&mut self) -> Option<Result<Vec<StoredObservation>, StorageError>> {
        let batch = self.records.recv().await?;
        Some(batch.map(|records| records.into_iter().map(StoredObservation).collect()))
    }
}

/// An observation as stored, decoded only when asked: an export of millions writes most
/// of them as the JSON text they already are.
pub struct StoredObservation(Record);

/// How a body written by [`to_record`] begins: the rest of it is exactly the tail of the
/// observation's own JSON (same fields, same order, same serialiser).
const BODY_START: &str = "{\"title\":";

/// Append `text` as a JSON string.
fn push_json_str(out: &mut String, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else if let Ok(quoted) = serde_json::to_string(text) {
        out.push_str(&quoted);
    }
}

impl StoredObservation {
    /// The record as stored.
    pub fn record(&self) -> &Record {
        &self.0
    }

    /// `new`, stamped as [`ObservationManager::record`] would, as stored.
    #[cfg(test)]
    pub(crate) fn for_tests(new: NewObservation) -> Self {
        let o = Observation {
            id: clock::new_id(),
            timestamp: clock::now_ms(),
            title: new
                .title
                .unwrap_or_else(|| default_title(new.kind).to_owned()),
            thread_id: new.thread_id,
            trace_id: new.trace_id,
            kind: new.kind,
            content: new.content,
            metadata: new.metadata,
            span: new.span,
        };
        Self(to_record(&o).expect("observations encode"))
    }

    /// Its run.
    pub fn trace_id(&self) -> Option<&str> {
        self.0.trace_id.as_deref()
    }

    /// The observation.
    pub fn decode(self) -> Result<Observation, StorageError> {
        from_record(self.0)
    }

    /// Append the observation's JSON (exactly what serialising the decoded observation
    /// gives) to `out`.
    pub fn write_json(&self, out: &mut String) -> Result<(), StorageError> {
        let r = &self.0;
        let kind = r.kind.as_deref().and_then(ObservationType::parse);
        match (&r.thread_id, &r.trace_id, kind, r.body.strip_prefix('{')) {
            (Some(thread), Some(trace), Some(kind), Some(rest))
                if r.body.starts_with(BODY_START) =>
            {
                out.push_str("{\"id\":");
                push_json_str(out, &r.id);
                out.push_str(",\"threadId\":");
                push_json_str(out, thread);
                out.push_str(",\"traceId\":");
                push_json_str(out, trace);
                out.push_str(",\"timestamp\":");
                out.push_str(&r.timestamp.to_string());
                out.push_str(",\"type\":\"");
                out.push_str(kind.as_str());
                out.push_str("\",");
                out.push_str(rest);
            }
            // Older bodies: decode and serialise.
            _ => {
                let observation = from_record(r.clone())?;
                out.push_str(&storage::encode(&observation)?);
            }
        }
        Ok(())
    }
}

/// Observations per storage write in [`ObservationManager::record_all`].
pub const WRITE_CHUNK: usize = 256;

/// Records and finds observations.
pub struct ObservationManager {
    storage: Arc<dyn StorageAdapter>,
    sockets: Arc<Sockets>,
    tap: Arc<RunTap>,
}

impl ObservationManager {
    /// A manager over `storage`, broadcasting on `sockets.observations`.
    pub fn new(storage: Arc<dyn StorageAdapter>, sockets: Arc<Sockets>) -> Self {
        Self {
            storage,
            sockets,
            tap: Arc::default(),
        }
    }

    /// The runs whose observations are kept in memory as they are recorded (for the
    /// trace push, which then reads nothing back when a run ends).
    pub fn tap(&self) -> &RunTap {
        &self.tap
    }

    /// The tap, to be shared with the conversation manager (which offers it the
    /// messages runs write).
    pub(crate) fn shared_tap(&self) -> Arc<RunTap> {
        Arc::clone(&self.tap)
    }

    /// Stamp, persist, then broadcast one observation.
    pub async fn record(&self, new: NewObservation) -> Result<Observation, StorageError> {
        let mut all = self.record_all(vec![new]).await?;
        Ok(all.remove(0))
    }

    /// Stamp, persist, then broadcast several observations in order. Large sets are
    /// written in chunks of [`WRITE_CHUNK`], each chunk atomic: the storage writes one
    /// while the next is being encoded. On an error, chunks before it may be stored, but
    /// nothing is broadcast.
    pub async fn record_all(
        &self,
        news: Vec<NewObservation>,
    ) -> Result<Vec<Observation>, StorageError> {
        let observations: Vec<Observation> = news
            .into_iter()
            .map(|n| Observation {
                id: clock::new_id(),
                timestamp: clock::now_ms(),
                title: n.title.unwrap_or_else(|| default_title(n.kind).to_owned()),
                thread_id: n.thread_id,
                trace_id: n.trace_id,
                kind: n.kind,
                content: n.content,
                metadata: n.metadata,
                span: n.span,
            })
            .collect();
        let mut writing = Vec::new();
        let mut tapped = Vec::new();
        for chunk in observations.chunks(WRITE_CHUNK) {
            let records: Vec<Record> = chunk.iter().map(to_record).collect::<Result<_, _>>()?;
            if self.tap.active() {
                tapped.extend(records.iter().cloned());
            }
            let mut write = self.storage.set(Collection::Observations, records);
            // The first poll hands the chunk to the storage, which works on it meanwhile.
            match futures::poll!(write.as_mut()) {
                Poll::Ready(done) => done?,
                Poll::Pending => writing.push(write),
            }
        }
        for write in writing {
            write.await?;
        }
        self.tap.recorded(tapped);
        for o in &observations {
            self.sockets.observations.notify(o);
        }
        Ok(observations)
    }

    /// Put back observations exactly as they were exported (same ids, times and
    /// titles); nothing is broadcast.
    pub async fn restore(&self, observations: &[Observation]) -> Result<(), StorageError> {
        for chunk in observations.chunks(WRITE_CHUNK) {
            let records = chunk.iter().map(to_record).collect::<Result<_, _>>()?;
            self.storage.set(Collection::Observations, records).await?;
        }
        Ok(())
    }

    /// How many observations match `query` (its limit aside).
    pub async fn count(&self, query: &ObservationQuery) -> Result<u64, StorageError> {
        self.storage
            .count(Collection::Observations, &storage_query(query))
            .await
    }

    /// Observations matching `query` in batches of at most `batch`, read while the
    /// caller works on the previous ones (memory stays bounded for millions).
    pub fn scan(&self, query: &ObservationQuery, batch: usize) -> ObservationScan {
        ObservationScan {
            records: self
                .storage
                .scan(Collection::Observations, storage_query(query), batch),
        }
    }

    /// The thread of run `trace_id`, if it recorded anything.
    pub async fn thread_of(&self, trace_id: &str) -> Result<Option<String>, StorageError> {
        let query = ObservationQuery {
            trace_ids: vec![trace_id.to_owned()],
            limit: Some(1),
            ..ObservationQuery::default()
        };
        Ok(self
            .query(&query)
            .await?
            .into_iter()
            .next()
            .map(|o| o.thread_id))
    }

    /// Observations matching `query`, oldest first unless asked otherwise.
    pub async fn query(&self, query: &ObservationQuery) -> Result<Vec<Observation>, StorageError> {
        self.storage
            .query(Collection::Observations, &storage_query(query))
            .await?
            .into_iter()
            .map(from_record)
            .collect()
    }
}

#[cfg(test)]
mod tests;
