//! OpenTelemetry export in the shape of the collector's file exporter: JSON Lines, one
//! `TracesData` per run, with the OTLP/JSON mapping (hex ids, camelCase fields, 64-bit
//! integers as decimal strings, enums as integers).
//!
//! Span tree per run, from the observations' span information:
//! `invoke_agent` (root, AGENT) → `plan` (CHAIN, with the planning `chat {model}` call,
//! LLM) → one `execute_tool {name}` per tool call (TOOL; a knowledge search holds a
//! `retrieval` span, [`retrieval`]) → `synthesize` (CHAIN, with the synthesis
//! `chat {model}` call). Attributes follow the OpenTelemetry GenAI semantic
//! conventions plus OpenInference's `openinference.span.kind`; observations that are not
//! spans become span events. Ids are derived from the run and span ids, so exporting
//! the same data again gives the same bytes. What people and models wrote is included
//! only with [`super::Options::include_content`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

use art_types::{ConversationMessage, ObservationType, Phase};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

mod light;
mod proto;
mod retrieval;
mod wire;

pub use proto::{entry, id_hex, unframe};

use super::{ExportError, Redactor, Sink, Summary, ThreadData, emit};
use crate::observation::StoredObservation;
use light::{Meta, Obs, Tokens};
use wire::*;

/// Lines are written out in chunks of about this many bytes: fewer, larger writes (a
/// buffered writer passes them straight through) and one redaction pass per chunk.
const CHUNK: usize = 1 << 20;

/// The attribute of a span that had not ended when it was exported.
pub const OPEN: &str = "art.span.open";

/// `service.name` of the resource.
pub const SERVICE_NAME: &str = "art-workbench";

/// The 16-byte trace id of a run: its UUID when it is one, else a digest of its id.
pub fn trace_id(run: &str) -> String {
    let hex: String = run.chars().filter(|c| *c != '-').collect();
    if hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) && hex != "0".repeat(32) {
        hex.to_ascii_lowercase()
    } else {
        let id: [u8; 32] = hex_id(&Sha256::digest(run.as_bytes()));
        String::from_utf8_lossy(&id).into_owned()
    }
}

/// The 8-byte span id of a span of the framework, as hex.
fn span_hex(span: &str) -> SpanId {
    hex_id(&Sha256::digest(span.as_bytes()))
}

/// The 8-byte span id of a span of the framework.
pub fn span_id(span: &str) -> String {
    String::from_utf8_lossy(&span_hex(span)).into_owned()
}

/// A JSON value as attribute text: a string's own text, anything else as JSON.
fn json_text(value: &RawValue) -> Cow<'_, str> {
    serde_json::from_str::<Cow<'_, str>>(value.get()).unwrap_or(Cow::Borrowed(value.get()))
}

/// The well-known `gen_ai.provider.name` of one of our providers.
fn provider_name(ours: &str) -> &str {
    match ours {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// One span being assembled from the observations of a run.
struct Draft<'r, 'a> {
    parent: Option<&'r str>,
    phase: Option<Phase>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    /// The observation that closed the span (its `end_ms` is set).
    closing: Option<&'r Obs<'a>>,
    /// Point observations inside the span.
    events: Vec<&'r Obs<'a>>,
    /// The latest time seen inside the span.
    last_ms: i64,
}

impl Default for Draft<'_, '_> {
    fn default() -> Self {
        Self {
            parent: None,
            phase: None,
            start_ms: None,
            end_ms: None,
            closing: None,
            events: Vec::new(),
            last_ms: i64::MIN,
        }
    }
}

/// What the exporter knows of a run besides its observations.
struct RunContext<'a> {
    thread_id: &'a str,
    trace_id: &'a str,
    question: Option<&'a str>,
    answer: Option<&'a str>,
    /// The run's question and the message it follows (its place in the thread's tree).
    place: Option<&'a (String, Option<String>)>,
    /// The question's attachments (recorded by type, size and hash; never the bytes).
    attachments: &'a [art_types::Attachment],
    /// The run this one replays, if it is a replay.
    replay_of: Option<&'a str>,
    /// The comparison this run is a column of, if any.
    comparison: Option<&'a str>,
    include_content: bool,
}

/// How the `TracesData` of each run is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// OTLP/JSON, one per line.
    JsonLines,
    /// Protobuf, each after its length (4 bytes, big-endian).
    Protobuf,
    /// Protobuf `resource_spans` entries one after another, unframed: what the push
    /// queues and sends.
    Entries,
}

/// Writes one `TracesData` per run.
pub(crate) struct Writer<'a> {
    out: &'a mut (dyn Write + Send),
    redactor: &'a Redactor,
    include_content: bool,
    encoding: Encoding,
    /// Question and answer text per run of the current thread (only with content).
    texts: HashMap<String, (Option<String>, Option<String>)>,
    /// Per run of the current thread: its question's id and the message it follows.
    places: HashMap<String, (String, Option<String>)>,
    /// Per run of the current thread: its question's attachments.
    attachments: HashMap<String, Vec<art_types::Attachment>>,
    /// Per run of the current thread that replays another: that run.
    replays: HashMap<String, String>,
    /// Per run of the current thread that is a comparison's column: the comparison.
    comparisons: HashMap<String, String>,
    thread_id: String,
    /// Observations of the run being gathered. A thread's runs overlap only as one
    /// comparison's columns, so its observations in time order come run by run, or
    /// comparison by comparison (gathered whole, then written run by run).
    run: Vec<StoredObservation>,
    /// Lines not written out yet (the buffer is reused).
    lines: Lines,
    /// Protobuf not written out yet.
    bytes: Vec<u8>,
    /// Spans written so far.
    spans: u64,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(
        out: &'a mut (dyn Write + Send),
        redactor: &'a Redactor,
        include_content: bool,
        encoding: Encoding,
    ) -> Self {
        Self {
            out,
            redactor,
            include_content,
            encoding,
            texts: HashMap::new(),
            places: HashMap::new(),
            attachments: HashMap::new(),
            replays: HashMap::new(),
            comparisons: HashMap::new(),
            thread_id: String::new(),
            run: Vec::new(),
            lines: Lines::default(),
            bytes: Vec::new(),
            spans: 0,
        }
    }

    /// Spans written so far.
    pub(crate) fn spans(&self) -> u64 {
        self.spans
    }

    /// A thread begins: `messages` are those of the runs to come (for each run's
    /// question, answer, place and attachments).
    pub(crate) fn begin(&mut self, thread_id: &str, messages: &[ConversationMessage]) {
        self.thread_id = thread_id.to_owned();
        self.texts.clear();
        self.places = messages
            .iter()
            .filter(|m| m.role == art_types::MessageRole::User)
            .filter_map(|m| {
                let place = (m.message_id.clone(), m.parent_id.clone());
                Some((m.trace_id()?.to_owned(), place))
            })
            .collect();
        self.replays = messages
            .iter()
            .filter_map(|m| Some((m.trace_id()?.to_owned(), m.replay_of()?.to_owned())))
            .collect();
        self.comparisons = messages
            .iter()
            .filter_map(|m| Some((m.trace_id()?.to_owned(), m.comparison()?.to_owned())))
            .collect();
        self.attachments = messages
            .iter()
            .filter(|m| !m.attachments.is_empty())
            .filter_map(|m| Some((m.trace_id()?.to_owned(), m.attachments.clone())))
            .collect();
        if self.include_content {
            for m in messages {
                let Some(trace) = m.trace_id() else {
                    continue;
                };
                let entry = self.texts.entry(trace.to_owned()).or_default();
                match m.role {
                    art_types::MessageRole::User => entry.0 = Some(m.content.clone()),
                    art_types::MessageRole::Ai => entry.1 = Some(m.content.clone()),
                    _ => {}
                }
            }
        }
    }

    /// Whether runs `a` and `b` are gathered together: the same run, or columns of one
    /// comparison (which run at once).
    fn together(&self, a: &str, b: &str) -> bool {
        a == b
            || self
                .comparisons
                .get(a)
                .is_some_and(|c| self.comparisons.get(b) == Some(c))
    }

    /// Write out the run (or the comparison's runs) gathered, run by run.
    fn flush_run(&mut self) -> Result<(), ExportError> {
        let mut gathered = std::mem::take(&mut self.run);
        while let Some(first) = gathered.first() {
            let run_id = light::run_of(first)?.to_owned();
            let (run, rest): (Vec<_>, Vec<_>) = gathered
                .into_iter()
                .partition(|o| light::run_of(o).is_ok_and(|r| r == run_id));
            self.flush_one(&run)?;
            gathered = rest;
        }
        Ok(())
    }

    fn flush_one(&mut self, run: &[StoredObservation]) -> Result<(), ExportError> {
        let Some(first) = run.first() else {
            return Ok(());
        };
        let run_id = light::run_of(first)?;
        let observations = run
            .iter()
            .map(|stored| Obs::decode(stored, self.include_content))
            .collect::<Result<Vec<_>, _>>()?;
        let (question, answer) = self
            .texts
            .get(run_id)
            .map(|(q, a)| (q.as_deref(), a.as_deref()))
            .unwrap_or_default();
        let trace = trace_id(run_id);
        let context = RunContext {
            thread_id: &self.thread_id,
            trace_id: &trace,
            question,
            answer,
            place: self.places.get(run_id),
            attachments: self.attachments.get(run_id).map_or(&[], Vec::as_slice),
            replay_of: self.replays.get(run_id).map(String::as_str),
            comparison: self.comparisons.get(run_id).map(String::as_str),
            include_content: self.include_content,
        };
        let spans = spans_of(&observations, &context);
        self.spans += spans.len() as u64;
        match self.encoding {
            Encoding::JsonLines => {
                self.lines.begin(SERVICE_NAME, crate::VERSION);
                for (i, span) in spans.iter().enumerate() {
                    self.lines.span(&trace, span, i == 0);
                }
                self.lines.end();
            }
            Encoding::Protobuf => {
                // A `TracesData` of one run is that run's entry.
                let redactor = self.redactor;
                proto::append_framed(&mut self.bytes, |out| {
                    proto::append_run(out, &trace, &spans, SERVICE_NAME, crate::VERSION, redactor);
                });
            }
            Encoding::Entries => proto::append_run(
                &mut self.bytes,
                &trace,
                &spans,
                SERVICE_NAME,
                crate::VERSION,
                self.redactor,
            ),
        }
        drop(spans);
        drop(observations);
        self.run.clear();
        if self.lines.text().len() >= CHUNK || self.bytes.len() >= CHUNK {
            self.write_out()?;
        }
        Ok(())
    }

    /// Write out what was gathered so far.
    fn write_out(&mut self) -> Result<(), ExportError> {
        emit(self.out, self.redactor, self.lines.text())?;
        self.lines.clear();
        self.out.write_all(&self.bytes)?;
        self.bytes.clear();
        Ok(())
    }
}

impl Sink for Writer<'_> {
    fn thread(&mut self, data: &ThreadData) -> Result<(), ExportError> {
        self.begin(&data.thread.thread_id, &data.messages);
        Ok(())
    }

    fn observations(&mut self, batch: Vec<StoredObservation>) -> Result<(), ExportError> {
        for stored in batch {
            let run = light::run_of(&stored)?;
            let other_run = match self.run.first() {
                Some(first) => !self.together(light::run_of(first)?, run),
                None => false,
            };
            if other_run {
                self.flush_run()?;
            }
            self.run.push(stored);
        }
        Ok(())
    }

    fn end_thread(&mut self) -> Result<(), ExportError> {
        self.flush_run()
    }

    fn finish(&mut self, _summary: &Summary) -> Result<(), ExportError> {
        self.write_out()?;
        self.out.flush()?;
        Ok(())
    }
}

/// The spans of one run (its observations in time order), sorted by start.
fn spans_of<'r, 'a>(run: &'r [Obs<'a>], context: &RunContext<'r>) -> Vec<Span<'r>> {
    // A run has a handful of spans: a list beats a map.
    let mut drafts: Vec<(&'r str, Draft<'r, 'a>)> = Vec::with_capacity(8);
    let mut loose = Vec::new();
    let mut root_id = None;
    let mut run_end = i64::MIN;
    for o in run {
        run_end = run_end.max(o.timestamp);
        let Some(info) = &o.span else {
            loose.push(o);
            continue;
        };
        let id = info.span_id.as_ref();
        if info.parent_span_id.is_none() {
            root_id.get_or_insert(id);
        }
        let at = match drafts.iter().position(|(k, _)| *k == id) {
            Some(at) => at,
            None => {
                drafts.push((id, Draft::default()));
                drafts.len() - 1
            }
        };
        let draft = &mut drafts[at].1;
        draft.parent = draft.parent.or(info.parent_span_id.as_deref());
        draft.phase.get_or_insert(info.phase);
        draft.start_ms = Some(
            draft
                .start_ms
                .map_or(info.start_ms, |s| s.min(info.start_ms)),
        );
        draft.last_ms = draft.last_ms.max(o.timestamp);
        match info.end_ms {
            Some(end) => {
                draft.end_ms = Some(end);
                draft.closing = Some(o);
                run_end = run_end.max(end);
            }
            None => draft.events.push(o),
        }
    }
    let made_up = format!("{}:root", context.trace_id);
    // Each span's OTLP id, computed once (the root's too, made up or not).
    let root_hex = span_hex(root_id.unwrap_or(made_up.as_str()));
    let ids: Vec<SpanId> = drafts.iter().map(|(id, _)| span_hex(id)).collect();
    let mut root = Draft::default();
    if let Some(at) = root_id.and_then(|id| drafts.iter().position(|(k, _)| *k == id)) {
        std::mem::swap(&mut root, &mut drafts[at].1);
    }
    root.parent = None;
    root.phase = Some(Phase::Run);
    root.events.extend(loose);
    let run_start = run
        .iter()
        .map(|o| o.span.as_ref().map_or(o.timestamp, |s| s.start_ms))
        .min();
    root.start_ms = root.start_ms.or(run_start);
    // Model and provider of the run: those of its first LLM call.
    let model = run
        .iter()
        .find(|o| o.kind == ObservationType::LlmStreamStart)
        .map(|o| &o.meta);
    let id_of = |id: &str| {
        let at = drafts.iter().position(|(k, _)| *k == id)?;
        Some(ids[at])
    };
    let mut spans = Vec::with_capacity(drafts.len() + 1);
    spans.push(build_span(
        root_hex,
        None,
        &root,
        root.end_ms.unwrap_or(run_end),
        model,
        run,
        context,
    ));
    for (at, (id, draft)) in drafts.iter().enumerate() {
        if Some(*id) == root_id {
            continue;
        }
        // A parent that was never seen (cut-off data), or the root, hangs under the root.
        let parent = match draft.parent.and_then(id_of) {
            Some(p) if draft.parent != Some(*id) => p,
            _ => root_hex,
        };
        let end = draft.end_ms.unwrap_or(draft.last_ms);
        let span = build_span(ids[at], Some(parent), draft, end, model, run, context);
        // A knowledge search is also a retrieval, under its tool call.
        let retrieval = draft
            .closing
            .filter(|o| o.kind == ObservationType::ToolExecution)
            .and_then(|tool| retrieval::span(&span, tool, context));
        spans.push(span);
        spans.extend(retrieval);
    }
    enclose_children(&mut spans);
    sort_spans(&mut spans);
    spans
}

/// Make every span end no earlier than its children (a failing model call was recorded
/// ending up to seconds after its step), and give a span that has no status of its own
/// the error of its child that ended last, when that child failed: the failure that
/// ended the step shows on the step. Deepest spans first, so a grandparent sees its
/// children's new ends.
fn enclose_children(spans: &mut [Span<'_>]) {
    let at: HashMap<SpanId, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id, i))
        .collect();
    let depths = depths(spans);
    let deepest = depths.iter().copied().max().unwrap_or(0);
    for level in (1..=deepest).rev() {
        // Each parent's child that ends last (a failed one first among equals).
        let mut last: HashMap<usize, usize> = HashMap::new();
        for i in (0..spans.len()).filter(|&i| depths[i] == level) {
            let Some(parent) = spans[i].parent.and_then(|p| at.get(&p).copied()) else {
                continue;
            };
            let later = |c: usize| (spans[c].end_ms, spans[c].status_code == STATUS_ERROR);
            if last.get(&parent).is_none_or(|&c| later(i) > later(c)) {
                last.insert(parent, i);
            }
            spans[parent].end_ms = spans[parent].end_ms.max(spans[i].end_ms);
        }
        for (parent, child) in last {
            if spans[child].status_code != STATUS_ERROR || spans[parent].status_code != STATUS_UNSET
            {
                continue;
            }
            let message = spans[child].status_message.clone();
            let code = spans[child]
                .attributes
                .iter()
                .find(|kv| kv.key == "error.type")
                .map(|kv| kv.value.clone());
            let parent = &mut spans[parent];
            parent.status_code = STATUS_ERROR;
            parent.status_message = message;
            if let Some(value) = code {
                parent.attributes.push(KeyValue {
                    key: "error.type",
                    value,
                });
            }
        }
    }
}

/// The one order spans are written in: by start; in the same millisecond a parent
/// before its children (the root first), then by name and id — so a reader that takes
/// the first span for the root, or draws the tree as it reads, is right every time.
fn sort_spans(spans: &mut [Span<'_>]) {
    let depth: HashMap<SpanId, usize> = spans
        .iter()
        .zip(depths(spans))
        .map(|(s, d)| (s.span_id, d))
        .collect();
    spans.sort_by_cached_key(|s| (s.start_ms, depth[&s.span_id], s.name, s.span_id));
}

/// Each span's depth in the tree (the root's 0), by index: the hops up its parents, a
/// parent that is not among `spans` the last; bounded by the span count, so a cycle in
/// damaged data cannot loop forever.
fn depths(spans: &[Span<'_>]) -> Vec<usize> {
    let parents: HashMap<SpanId, Option<SpanId>> =
        spans.iter().map(|s| (s.span_id, s.parent)).collect();
    spans
        .iter()
        .map(|span| {
            let mut depth = 0usize;
            let mut at = span.parent;
            while let Some(parent) = at.filter(|_| depth < parents.len()) {
                depth += 1;
                at = parents.get(&parent).copied().flatten();
            }
            depth
        })
        .collect()
}

/// Mark a span failed with `code`.
fn fail<'r>(span: &mut Span<'r>, code: &'r str, message: &'r str) {
    span.status_code = STATUS_ERROR;
    span.status_message = Cow::Borrowed(message);
    span.attributes.push(text("error.type", code));
    // Also as OpenTelemetry's standard `exception` event, which tracing tools list.
    span.events.push(Event {
        time_ms: span.end_ms,
        name: "exception",
        attributes: vec![
            text("exception.type", code),
            text("exception.message", message),
        ],
    });
}

/// Name, kind, attributes and status of one span (`parent` is `None` for the root).
fn build_span<'r>(
    id: SpanId,
    parent: Option<SpanId>,
    draft: &Draft<'r, '_>,
    end_ms: i64,
    model: Option<&'r Meta<'_>>,
    run: &'r [Obs<'_>],
    context: &RunContext<'r>,
) -> Span<'r> {
    let start_ms = draft.start_ms.unwrap_or(end_ms).min(end_ms);
    let mut events: Vec<&Obs<'_>> = draft.events.clone();
    events.sort_by(|a, b| (a.timestamp, a.id).cmp(&(b.timestamp, b.id)));
    let mut span = Span {
        span_id: id,
        parent,
        name: ("", ""),
        kind: SPAN_KIND_INTERNAL,
        start_ms,
        end_ms,
        attributes: Vec::with_capacity(10),
        events: events.into_iter().map(event).collect(),
        status_code: STATUS_UNSET,
        status_message: Cow::Borrowed(""),
    };
    span.attributes
        .push(text("gen_ai.conversation.id", context.thread_id));
    // Not ended when exported (its run waits on a decision, or was cut off): its end is
    // the last thing seen in it. The push sends such spans only once they end.
    if draft.end_ms.is_none() {
        span.attributes.push(boolean(OPEN, true));
    }
    let closing = draft.closing;
    let is_llm = closing.is_some_and(|o| {
        matches!(
            o.kind,
            ObservationType::LlmStreamEnd | ObservationType::LlmStreamError
        )
    }) || draft
        .events
        .iter()
        .any(|o| o.kind == ObservationType::LlmStreamStart);
    if parent.is_none() {
        root_span(&mut span, closing, model, run, context);
    } else if is_llm {
        llm_span(&mut span, draft, context);
    } else if let Some(tool) = closing.filter(|o| o.kind == ObservationType::ToolExecution) {
        tool_span(&mut span, tool, context);
    } else {
        span.attributes
            .push(text("openinference.span.kind", "CHAIN"));
        // Planning is an operation the conventions name (`plan`); the other phases are
        // ours (named by the span alone).
        if draft.phase == Some(Phase::Planning) {
            span.attributes.push(text("gen_ai.operation.name", "plan"));
        }
        // What the phase came to, as OpenInference's output (with content): the plan,
        // a step's outcome, the answer.
        if context.include_content {
            let output = match (draft.phase, closing) {
                (Some(Phase::Synthesis), _) => context.answer,
                (_, Some(o)) if matches!(o.kind, ObservationType::Plan | ObservationType::Step) => {
                    o.raw
                }
                _ => None,
            };
            if let Some(output) = output {
                span.attributes.push(text("output.value", output));
            }
        }
        span.name.0 = match draft.phase {
            Some(Phase::Planning) => "plan",
            Some(Phase::Synthesis) => "synthesize",
            Some(Phase::Execution) => "execute",
            Some(Phase::Finalization) => "finalize",
            Some(Phase::Run) | None => "run",
        };
    }
    if let Some(o) = closing {
        span.attributes.push(text("art.observation.id", o.id));
    }
    span
}

/// The run's own span: `invoke_agent PESAgent`.
fn root_span<'r>(
    span: &mut Span<'r>,
    closing: Option<&'r Obs<'_>>,
    model: Option<&'r Meta<'_>>,
    run: &'r [Obs<'_>],
    context: &RunContext<'r>,
) {
    span.name = ("invoke_agent PESAgent", "");
    let attributes = &mut span.attributes;
    attributes.push(text("gen_ai.operation.name", "invoke_agent"));
    attributes.push(text("gen_ai.agent.name", "PESAgent"));
    attributes.push(text("openinference.span.kind", "AGENT"));
    if let Some(model) = model {
        provider_attributes(attributes, model);
    }
    if let Some(tokens) = closing.and_then(Obs::run_tokens) {
        usage_attributes(attributes, tokens);
    }
    // Where the run sits in the thread's tree of branches.
    if let Some((question, parent)) = context.place {
        attributes.push(text("art.message.id", question));
        if let Some(parent) = parent {
            attributes.push(text("art.message.parent_id", parent));
        }
    }
    // A replay names the run it replays, and that run's trace as collectors show it.
    if let Some(of) = context.replay_of {
        attributes.push(text("art.replay.of", of));
        attributes.push(text("art.replay.of_trace_id", trace_id(of)));
    }
    // A comparison's columns share its id (each column is a trace of its own).
    if let Some(comparison) = context.comparison {
        attributes.push(text("art.comparison.id", comparison));
    }
    // The question's files: type, size and hash (names only with content).
    if !context.attachments.is_empty() {
        let facts: Vec<serde_json::Value> = context
            .attachments
            .iter()
            .map(|a| {
                let mut fact =
                    serde_json::json!({ "type": a.mime, "size": a.size, "sha256": a.id });
                if context.include_content {
                    fact["name"] = serde_json::json!(a.name);
                }
                fact
            })
            .collect();
        attributes.push(int(
            "art.attachments.count",
            context.attachments.len() as u64,
        ));
        attributes.push(text(
            "art.attachments",
            serde_json::Value::from(facts).to_string(),
        ));
    }
    // The run failed if an unrecoverable ERROR was recorded.
    let error = run
        .iter()
        .find(|o| o.kind == ObservationType::Error && o.meta.recoverable != Some(true));
    if let Some(error) = error {
        let code = error.content.code.as_deref().unwrap_or("ERROR");
        let message = error.content.message.as_deref().unwrap_or(&error.title);
        fail(span, code, message);
    }
    if context.include_content {
        // The GenAI conventions' messages, and the plain text that OpenInference tools
        // (Phoenix, Arize) show as the agent's input and output.
        if let Some(q) = context.question {
            span.attributes
                .push(text("gen_ai.input.messages", input_messages_json(q)));
            span.attributes.push(text("input.value", q));
            span.attributes.push(text("input.mime_type", "text/plain"));
        }
        if let Some(a) = context.answer {
            let last_stop = run
                .iter()
                .rev()
                .filter(|o| o.kind == ObservationType::LlmStreamEnd)
                .find_map(|o| o.call_tokens().and_then(|t| t.stop));
            let finish = if error.is_some() {
                "error"
            } else {
                last_stop.map_or("stop", finish_reason)
            };
            span.attributes.push(text(
                "gen_ai.output.messages",
                output_messages_json(a, finish),
            ));
            span.attributes.push(text("output.value", a));
            span.attributes.push(text("output.mime_type", "text/plain"));
        }
    }
}

/// A model call: `chat {model}`.
fn llm_span<'r>(span: &mut Span<'r>, draft: &Draft<'r, '_>, context: &RunContext<'r>) {
    let closing = draft.closing;
    let meta = closing
        .map(|o| &o.meta)
        .or_else(|| draft.events.first().map(|o| &o.meta));
    let model_id = meta.and_then(|m| m.model.as_deref()).unwrap_or("unknown");
    span.name = ("chat ", model_id);
    span.kind = SPAN_KIND_CLIENT;
    let attributes = &mut span.attributes;
    attributes.push(text("gen_ai.operation.name", "chat"));
    attributes.push(text("openinference.span.kind", "LLM"));
    if let Some(meta) = meta {
        provider_attributes(attributes, meta);
    }
    let start = draft
        .events
        .iter()
        .find(|o| o.kind == ObservationType::LlmStreamStart);
    let stage = start.and_then(|o| o.content.stage.as_deref());
    if let Some(stage) = stage {
        attributes.push(text("art.stage", stage));
    }
    if context.include_content
        && let Some(sent) = start.and_then(|o| o.content.input)
    {
        attributes.push(text("gen_ai.input.messages", sent.get()));
    }
    let tokens = draft
        .events
        .iter()
        .find(|o| o.kind == ObservationType::LlmStreamMetadata)
        .and_then(|o| o.call_tokens())
        .or_else(|| closing.and_then(Obs::call_tokens));
    if let Some(tokens) = tokens {
        usage_attributes(attributes, tokens);
        if let Some(reason) = tokens.stop {
            attributes.push(text("gen_ai.response.finish_reasons", reason));
        }
    }
    let answered_by = draft
        .events
        .iter()
        .find(|o| o.kind == ObservationType::LlmStreamMetadata)
        .and_then(|o| o.response_model())
        .or_else(|| closing.and_then(|o| o.response_model()));
    if let Some(model) = answered_by {
        attributes.push(text("gen_ai.response.model", model));
    }
    let failed = closing.filter(|o| o.kind == ObservationType::LlmStreamError);
    if let Some(error) = failed {
        let code = error.content.code.as_deref().unwrap_or("ERROR");
        let message = error.content.message.as_deref().unwrap_or("");
        fail(span, code, message);
    }
    // A planning or step call's answer, as it recorded it.
    if context.include_content
        && stage != Some("synthesis")
        && let Some(output) = closing
            .filter(|o| o.kind == ObservationType::LlmStreamEnd)
            .and_then(|o| o.content.output)
    {
        span.attributes
            .push(text("gen_ai.output.messages", output.get()));
    }
    if context.include_content
        && stage == Some("synthesis")
        && let Some(a) = context.answer
    {
        let finish = if failed.is_some() {
            "error"
        } else {
            tokens.and_then(|t| t.stop).map_or("stop", finish_reason)
        };
        span.attributes.push(text(
            "gen_ai.output.messages",
            output_messages_json(a, finish),
        ));
    }
}

/// A tool call: `execute_tool {name}`.
fn tool_span<'r>(span: &mut Span<'r>, tool: &'r Obs<'_>, context: &RunContext<'r>) {
    let c = &tool.content;
    let name = c.tool_name.as_deref().unwrap_or("tool");
    span.name = ("execute_tool ", name);
    let attributes = &mut span.attributes;
    attributes.push(text("gen_ai.operation.name", "execute_tool"));
    attributes.push(text("gen_ai.tool.name", name));
    attributes.push(text("gen_ai.tool.type", "function"));
    if let Some(call) = c.call_id.as_deref() {
        attributes.push(text("gen_ai.tool.call.id", call));
    }
    attributes.push(text("openinference.span.kind", "TOOL"));
    // MCP semantic conventions (development): the client side of `tools/call`.
    if let Some(mcp) = &tool.meta.mcp {
        attributes.push(text("mcp.method.name", "tools/call"));
        attributes.push(text("network.transport", mcp.transport.network_transport()));
        if let Some(version) = &mcp.protocol_version {
            attributes.push(text("mcp.protocol.version", version));
        }
        attributes.push(text("art.mcp.server", &mcp.server));
        attributes.push(text("art.mcp.tool", &mcp.tool));
    }
    if context.include_content {
        // The conventions' names, and OpenInference's (what Phoenix shows as the tool's
        // input and output).
        if let Some(arguments) = c.arguments {
            attributes.push(text("gen_ai.tool.call.arguments", json_text(arguments)));
            attributes.push(text("input.value", json_text(arguments)));
        }
        if let Some(output) = c.output {
            attributes.push(text("gen_ai.tool.call.result", json_text(output)));
            attributes.push(text("output.value", json_text(output)));
        }
    }
    if c.status.as_deref() == Some("error") {
        let code = tool.meta.error_code.as_deref().unwrap_or("TOOL_ERROR");
        let message = c.error.as_deref().unwrap_or("the tool failed");
        fail(span, code, message);
    }
}

/// `gen_ai.provider.name` and `gen_ai.request.model` of a call.
fn provider_attributes<'r>(attributes: &mut Vec<KeyValue<'r>>, meta: &'r Meta<'_>) {
    if let Some(provider) = meta.provider.as_deref() {
        attributes.push(text("gen_ai.provider.name", provider_name(provider)));
    }
    if let Some(model) = meta.model.as_deref() {
        attributes.push(text("gen_ai.request.model", model));
    }
}

/// `gen_ai.usage.*`.
fn usage_attributes(attributes: &mut Vec<KeyValue<'_>>, tokens: Tokens<'_>) {
    if let Some(n) = tokens.input {
        attributes.push(int("gen_ai.usage.input_tokens", n));
    }
    if let Some(n) = tokens.cached.filter(|n| *n > 0) {
        attributes.push(int("gen_ai.usage.cache_read.input_tokens", n));
    }
    if let Some(n) = tokens.output {
        attributes.push(int("gen_ai.usage.output_tokens", n));
    }
}

/// A GenAI-conventions message list with one text message.
/// `gen_ai.input.messages`: the user's question as one text message.
fn input_messages_json(content: &str) -> String {
    serde_json::json!([{ "role": "user", "parts": [{ "type": "text", "content": content }] }])
        .to_string()
}

/// `gen_ai.output.messages`: the answer as one text message with why it ended (the
/// conventions require `finish_reason`; Phoenix drops a message without one).
fn output_messages_json(content: &str, finish: &str) -> String {
    serde_json::json!([{
        "role": "assistant",
        "parts": [{ "type": "text", "content": content }],
        "finish_reason": finish,
    }])
    .to_string()
}

/// A provider's stop reason in the GenAI conventions' words (`stop`, `length`,
/// `content_filter`, `tool_call`, `error`); one they do not name is kept as it is.
fn finish_reason(provider: &str) -> &str {
    match provider {
        "stop" | "end_turn" | "stop_sequence" | "STOP" | "FINISH_REASON_STOP" => "stop",
        "length" | "max_tokens" | "MAX_TOKENS" | "model_length" => "length",
        "tool_calls" | "tool_use" | "function_call" => "tool_call",
        "content_filter" | "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT"
        | "refusal" => "content_filter",
        other => other,
    }
}

/// A point observation as a span event.
fn event<'r>(o: &'r Obs<'_>) -> Event<'r> {
    let mut attributes = Vec::with_capacity(4);
    attributes.push(text("art.observation.id", o.id));
    attributes.push(text("art.observation.title", o.title.as_ref()));
    if o.kind == ObservationType::Error || o.kind == ObservationType::LlmStreamError {
        if let Some(code) = o.content.code.as_deref() {
            attributes.push(text("error.type", code));
        }
        if let Some(message) = o.content.message.as_deref() {
            attributes.push(text("exception.message", message));
        }
    }
    // The audit trail: a decision on a tool call, a server's question during one, and
    // the step a status belongs to.
    if matches!(
        o.kind,
        ObservationType::Approval
            | ObservationType::Suspension
            | ObservationType::Elicitation
            | ObservationType::ElicitationAnswer
            | ObservationType::ToolProgress
    ) {
        if let Some(tool) = o.content.tool_name.as_deref() {
            attributes.push(text("gen_ai.tool.name", tool));
        }
        if let Some(call) = o.content.call_id.as_deref() {
            attributes.push(text("gen_ai.tool.call.id", call));
        }
    }
    if let Some(approved) = o.content.approved {
        attributes.push(boolean("art.approval.approved", approved));
    }
    if let Some(by) = o.content.decided_by.as_deref() {
        attributes.push(text("art.approval.decided_by", by));
    }
    if o.kind == ObservationType::Step {
        if let Some(step) = o.content.step_id.as_deref() {
            attributes.push(text("art.step.id", step));
        }
        if let Some(status) = o.content.status.as_deref() {
            attributes.push(text("art.step.status", status));
        }
    }
    // Kept only when content is exported; a call's start is its stage and what it
    // sent, both on its span already (`art.stage`, `gen_ai.input.messages`).
    if let Some(raw) = o.raw.filter(|_| o.kind != ObservationType::LlmStreamStart) {
        attributes.push(text("art.observation.content", raw));
    }
    Event {
        time_ms: o.timestamp,
        name: o.kind.as_str(),
        attributes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::NewObservation;
    use art_types::SpanInfo;

    fn stored(span: &str, parent: Option<&str>, end: Option<i64>) -> StoredObservation {
        let mut new =
            NewObservation::new("t", "r", ObservationType::Thoughts, serde_json::Value::Null);
        new.span = Some(SpanInfo {
            phase: Phase::Execution,
            span_id: span.into(),
            parent_span_id: parent.map(Into::into),
            start_ms: 10,
            end_ms: end,
        });
        StoredObservation::for_tests(new)
    }

    #[test]
    fn odd_span_trees_still_have_one_root() {
        // A second parentless span, a span that is its own parent, and one whose parent
        // was never recorded (cut-off data): all hang under the first root.
        let run = [
            stored("root", None, Some(50)),
            stored("other-root", None, Some(20)),
            stored("self", Some("self"), Some(30)),
            stored("orphan", Some("missing"), None),
            stored("child", Some("self"), Some(25)),
        ];
        let obs: Vec<Obs<'_>> = run.iter().map(|s| Obs::decode(s, false).unwrap()).collect();
        let trace = trace_id("r");
        let context = RunContext {
            thread_id: "t",
            trace_id: &trace,
            question: None,
            answer: None,
            place: None,
            attachments: &[],
            replay_of: None,
            comparison: None,
            include_content: false,
        };
        let spans = spans_of(&obs, &context);
        assert_eq!(spans.len(), 5);
        let root = span_hex("root");
        let roots: Vec<_> = spans.iter().filter(|s| s.parent.is_none()).collect();
        assert_eq!(roots.len(), 1);
        assert_eq!(roots[0].span_id, root);
        assert_eq!(roots[0].name.0, "invoke_agent PESAgent");
        let parent_of = |id: &str| {
            spans
                .iter()
                .find(|s| s.span_id == span_hex(id))
                .unwrap()
                .parent
        };
        for id in ["other-root", "self", "orphan"] {
            assert_eq!(parent_of(id), Some(root), "{id}");
        }
        assert_eq!(parent_of("child"), Some(span_hex("self")));
        // The orphan has no closing observation: it ends at its last point, with it as
        // an event.
        let orphan = spans
            .iter()
            .find(|s| s.span_id == span_hex("orphan"))
            .unwrap();
        assert_eq!(orphan.events.len(), 1);
    }

    fn plain(id: &str, parent: Option<&str>, end_ms: i64) -> Span<'static> {
        Span {
            span_id: span_hex(id),
            parent: parent.map(span_hex),
            name: ("", ""),
            kind: SPAN_KIND_INTERNAL,
            start_ms: 0,
            end_ms,
            attributes: Vec::new(),
            events: Vec::new(),
            status_code: STATUS_UNSET,
            status_message: Cow::Borrowed(""),
        }
    }

    fn failed(id: &str, parent: Option<&str>, end_ms: i64) -> Span<'static> {
        let mut span = plain(id, parent, end_ms);
        fail(&mut span, "PROVIDER_ERROR", "the server closed the stream");
        span
    }

    #[test]
    fn a_parent_ends_after_its_children_and_carries_the_failure_that_ended_it() {
        let mut spans = vec![
            plain("root", None, 100),
            plain("execute", Some("root"), 60),
            plain("tool", Some("execute"), 40),
            // A failing model call recorded as ending after its step, as seen in Phoenix.
            failed("chat", Some("execute"), 90),
            plain("plan", Some("root"), 20),
            // A failed call the step went on from: not the step's failure.
            failed("early", Some("plan"), 10),
            plain("later", Some("plan"), 15),
            plain("deep", Some("tool"), 130),
        ];
        enclose_children(&mut spans);
        let get = |id: &str| spans.iter().find(|s| s.span_id == span_hex(id)).unwrap();
        // Ends: the step covers its model call; a grandchild ending late pushes its
        // parent, grandparent and the root.
        assert_eq!(get("tool").end_ms, 130);
        assert_eq!(get("execute").end_ms, 130);
        assert_eq!(get("root").end_ms, 130);
        assert_eq!(get("plan").end_ms, 20);
        // The step's last child to end is now `tool` (130, fine), not the failed model
        // call; and `plan` went on after `early` failed: neither step is marked failed.
        assert_eq!(get("execute").status_code, STATUS_UNSET);
        assert_eq!(get("plan").status_code, STATUS_UNSET);

        let mut spans = vec![
            plain("root", None, 100),
            plain("execute", Some("root"), 60),
            plain("tool", Some("execute"), 40),
            failed("chat", Some("execute"), 90),
        ];
        enclose_children(&mut spans);
        let get = |id: &str| spans.iter().find(|s| s.span_id == span_hex(id)).unwrap();
        assert_eq!(get("execute").end_ms, 90);
        assert_eq!(get("execute").status_code, STATUS_ERROR);
        assert_eq!(
            get("execute").status_message,
            "the server closed the stream"
        );
        assert!(
            get("execute")
                .attributes
                .iter()
                .any(|kv| kv.key == "error.type")
        );
        // The root's last child is the failed step: the run shows failed too.
        assert_eq!(get("root").status_code, STATUS_ERROR);
        assert_eq!(get("root").end_ms, 100);
    }
}
