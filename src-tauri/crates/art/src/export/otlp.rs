//! OpenTelemetry export in the shape of the collector's file exporter: JSON Lines, one
//! `TracesData` per run, with the OTLP/JSON mapping (hex ids, camelCase fields, 64-bit
//! integers as decimal strings, enums as integers).
//!
//! Span tree per run, from the observations' span information:
//! `invoke_agent` (root, AGENT) → `plan` (CHAIN, with the planning `chat {model}` call,
//! LLM) → one `execute_tool {name}` per tool call (TOOL) → `synthesize` (CHAIN, with the
//! synthesis `chat {model}` call). Attributes follow the OpenTelemetry GenAI semantic
//! conventions plus OpenInference's `openinference.span.kind`; observations that are not
//! spans become span events. Ids are derived from the run and span ids, so exporting
//! the same data again gives the same bytes. What people and models wrote is included
//! only with [`super::Options::include_content`].

use std::collections::HashMap;
use std::io::Write;

use art_types::{Observation, ObservationType, Phase};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{ExportError, Redactor, Sink, Summary, ThreadData, emit};
use crate::observation::StoredObservation;

/// `service.name` of the resource.
pub const SERVICE_NAME: &str = "art-workbench";

const SPAN_KIND_INTERNAL: i32 = 1;
const SPAN_KIND_CLIENT: i32 = 3;
const STATUS_UNSET: i32 = 0;
const STATUS_ERROR: i32 = 2;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TracesData<'a> {
    resource_spans: [ResourceSpans<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans<'a> {
    resource: Resource,
    scope_spans: [ScopeSpans<'a>; 1],
}

#[derive(Serialize)]
struct Resource {
    attributes: Vec<KeyValue>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScopeSpans<'a> {
    scope: InstrumentationScope,
    spans: &'a [Span],
}

#[derive(Serialize)]
struct InstrumentationScope {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Span {
    trace_id: String,
    span_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    parent_span_id: String,
    name: String,
    kind: i32,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    attributes: Vec<KeyValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    events: Vec<Event>,
    status: Status,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    time_unix_nano: String,
    name: String,
    attributes: Vec<KeyValue>,
}

#[derive(Serialize)]
struct Status {
    #[serde(skip_serializing_if = "String::is_empty")]
    message: String,
    code: i32,
}

#[derive(Serialize)]
struct KeyValue {
    key: &'static str,
    value: AnyValue,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum AnyValue {
    StringValue(String),
    IntValue(String),
}

fn text(key: &'static str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::StringValue(value.into()),
    }
}

fn int(key: &'static str, value: u64) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::IntValue(value.to_string()),
    }
}

fn nanos(ms: i64) -> String {
    ms.max(0).saturating_mul(1_000_000).to_string()
}

fn digest_hex(text: &str, bytes: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(bytes * 2);
    for b in &digest[..bytes] {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// The 16-byte trace id of a run: its UUID when it is one, else a digest of its id.
pub fn trace_id(run: &str) -> String {
    let hex: String = run.chars().filter(|c| *c != '-').collect();
    if hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) && hex != "0".repeat(32) {
        hex.to_ascii_lowercase()
    } else {
        digest_hex(run, 16)
    }
}

/// The 8-byte span id of a span of the framework.
pub fn span_id(span: &str) -> String {
    digest_hex(span, 8)
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The well-known `gen_ai.provider.name` of one of our providers.
fn provider_name(ours: &str) -> &str {
    match ours {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// One span being assembled from the observations of a run.
#[derive(Default)]
struct Draft<'a> {
    parent: Option<String>,
    phase: Option<Phase>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    /// The observation that closed the span (its `end_ms` is set).
    closing: Option<&'a Observation>,
    /// Point observations inside the span.
    events: Vec<&'a Observation>,
    /// The latest time seen inside the span.
    last_ms: i64,
}

/// What the exporter knows of a run besides its observations.
struct RunContext<'a> {
    thread_id: &'a str,
    trace_id: String,
    question: Option<&'a str>,
    answer: Option<&'a str>,
    include_content: bool,
}

/// Writes OTLP JSON Lines: one `TracesData` per run.
pub(crate) struct Writer<'a> {
    out: &'a mut (dyn Write + Send),
    redactor: &'a Redactor,
    include_content: bool,
    /// Question and answer text per run of the current thread (only with content).
    texts: HashMap<String, (Option<String>, Option<String>)>,
    thread_id: String,
    /// Observations of the run being gathered (a thread's runs never overlap, so its
    /// observations in time order come run by run).
    run: Vec<Observation>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(
        out: &'a mut (dyn Write + Send),
        redactor: &'a Redactor,
        include_content: bool,
    ) -> Self {
        Self {
            out,
            redactor,
            include_content,
            texts: HashMap::new(),
            thread_id: String::new(),
            run: Vec::new(),
        }
    }

    fn flush_run(&mut self) -> Result<(), ExportError> {
        if self.run.is_empty() {
            return Ok(());
        }
        let run = std::mem::take(&mut self.run);
        let trace = run[0].trace_id.clone();
        let (question, answer) = self
            .texts
            .get(&trace)
            .map(|(q, a)| (q.as_deref(), a.as_deref()))
            .unwrap_or_default();
        let context = RunContext {
            thread_id: &self.thread_id,
            trace_id: trace_id(&trace),
            question,
            answer,
            include_content: self.include_content,
        };
        let spans = spans_of(&run, &context);
        let data = TracesData {
            resource_spans: [ResourceSpans {
                resource: Resource {
                    attributes: vec![
                        text("service.name", SERVICE_NAME),
                        text("service.version", crate::VERSION),
                    ],
                },
                scope_spans: [ScopeSpans {
                    scope: InstrumentationScope {
                        name: "art",
                        version: crate::VERSION,
                    },
                    spans: &spans,
                }],
            }],
        };
        let mut line = serde_json::to_string(&data).unwrap_or_default();
        line.push('\n');
        emit(self.out, self.redactor, &line)
    }
}

impl Sink for Writer<'_> {
    fn thread(&mut self, data: &ThreadData) -> Result<(), ExportError> {
        self.thread_id = data.thread.thread_id.clone();
        self.texts.clear();
        if self.include_content {
            for m in &data.messages {
                let Some(trace) = m.metadata.get("traceId").and_then(Value::as_str) else {
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
        Ok(())
    }

    fn observations(&mut self, batch: Vec<StoredObservation>) -> Result<(), ExportError> {
        for stored in batch {
            let o = stored.decode()?;
            if self.run.first().is_some_and(|r| r.trace_id != o.trace_id) {
                self.flush_run()?;
            }
            self.run.push(o);
        }
        Ok(())
    }

    fn end_thread(&mut self) -> Result<(), ExportError> {
        self.flush_run()
    }

    fn finish(&mut self, _summary: &Summary) -> Result<(), ExportError> {
        self.out.flush()?;
        Ok(())
    }
}

/// The spans of one run (its observations in time order), sorted by start.
fn spans_of(run: &[Observation], context: &RunContext<'_>) -> Vec<Span> {
    let mut drafts: HashMap<String, Draft<'_>> = HashMap::new();
    let mut loose = Vec::new();
    let mut root_id = None;
    let mut run_end = i64::MIN;
    for o in run {
        run_end = run_end.max(o.timestamp);
        let Some(info) = &o.span else {
            loose.push(o);
            continue;
        };
        if info.parent_span_id.is_none() {
            root_id.get_or_insert_with(|| info.span_id.clone());
        }
        let draft = drafts.entry(info.span_id.clone()).or_default();
        draft.parent = draft.parent.take().or_else(|| info.parent_span_id.clone());
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
    let root_id = root_id.unwrap_or_else(|| format!("{}:root", context.trace_id));
    let root = drafts.entry(root_id.clone()).or_default();
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
        .map(|o| &o.metadata);
    let known: Vec<String> = drafts.keys().cloned().collect();
    let mut spans: Vec<(i64, Span)> = drafts
        .iter()
        .map(|(id, draft)| {
            // A parent that was never seen (cut-off data) hangs under the root.
            let parent = match &draft.parent {
                None => None,
                Some(p) if known.contains(p) => Some(p.clone()),
                Some(_) => Some(root_id.clone()),
            };
            let parent = parent.filter(|p| *p != *id);
            let is_root = *id == root_id;
            let end = draft
                .end_ms
                .unwrap_or(if is_root { run_end } else { draft.last_ms });
            let start = draft.start_ms.unwrap_or(end).min(end);
            let span = build_span(
                id,
                parent.as_deref(),
                draft,
                (start, end),
                model,
                run,
                context,
            );
            (start, span)
        })
        .collect();
    spans.sort_by(|(a, x), (b, y)| (a, &x.name, &x.span_id).cmp(&(b, &y.name, &y.span_id)));
    spans.into_iter().map(|(_, span)| span).collect()
}

/// Mark a span failed with `code`.
fn fail(status: &mut Status, attributes: &mut Vec<KeyValue>, code: &str, message: &str) {
    status.code = STATUS_ERROR;
    status.message = message.to_owned();
    attributes.push(text("error.type", code));
}

/// Name, kind, attributes and status of one span.
fn build_span(
    id: &str,
    parent: Option<&str>,
    draft: &Draft<'_>,
    (start_ms, end_ms): (i64, i64),
    model: Option<&Value>,
    run: &[Observation],
    context: &RunContext<'_>,
) -> Span {
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
    let mut attributes = vec![text("gen_ai.conversation.id", context.thread_id)];
    let mut status = Status {
        message: String::new(),
        code: STATUS_UNSET,
    };
    let (name, kind) = if parent.is_none() {
        attributes.push(text("gen_ai.operation.name", "invoke_agent"));
        attributes.push(text("gen_ai.agent.name", "PESAgent"));
        attributes.push(text("openinference.span.kind", "AGENT"));
        if let Some(model) = model {
            provider_attributes(&mut attributes, model);
        }
        if let Some(usage) = closing.and_then(|o| o.content.pointer("/metadata/usage")) {
            usage_attributes(&mut attributes, usage);
        }
        // The run failed if an unrecoverable ERROR was recorded.
        let error = run.iter().find(|o| {
            o.kind == ObservationType::Error
                && o.metadata.get("recoverable") != Some(&Value::Bool(true))
        });
        if let Some(error) = error {
            let code = str_at(&error.content, "/code").unwrap_or("ERROR");
            let message = str_at(&error.content, "/message").unwrap_or(&error.title);
            fail(&mut status, &mut attributes, code, message);
        }
        if context.include_content {
            if let Some(q) = context.question {
                attributes.push(text("gen_ai.input.messages", messages_json("user", q)));
            }
            if let Some(a) = context.answer {
                attributes.push(text(
                    "gen_ai.output.messages",
                    messages_json("assistant", a),
                ));
            }
        }
        ("invoke_agent PESAgent".to_owned(), SPAN_KIND_INTERNAL)
    } else if is_llm {
        let meta = closing
            .map(|o| &o.metadata)
            .or_else(|| draft.events.first().map(|o| &o.metadata));
        let model_id = meta.and_then(|m| str_at(m, "/model")).unwrap_or("unknown");
        attributes.push(text("gen_ai.operation.name", "chat"));
        attributes.push(text("openinference.span.kind", "LLM"));
        if let Some(meta) = meta {
            provider_attributes(&mut attributes, meta);
        }
        let stage = draft
            .events
            .iter()
            .find(|o| o.kind == ObservationType::LlmStreamStart)
            .and_then(|o| str_at(&o.content, "/stage"));
        if let Some(stage) = stage {
            attributes.push(text("art.stage", stage));
        }
        let usage = draft
            .events
            .iter()
            .find(|o| o.kind == ObservationType::LlmStreamMetadata)
            .map(|o| &o.content)
            .or_else(|| closing.and_then(|o| o.content.get("metadata")));
        if let Some(usage) = usage {
            usage_attributes(&mut attributes, usage);
            if let Some(reason) = str_at(usage, "/stopReason") {
                attributes.push(text("gen_ai.response.finish_reasons", reason));
            }
        }
        if let Some(error) = closing.filter(|o| o.kind == ObservationType::LlmStreamError) {
            let code = str_at(&error.content, "/code").unwrap_or("ERROR");
            let message = str_at(&error.content, "/message").unwrap_or("");
            fail(&mut status, &mut attributes, code, message);
        }
        if context.include_content
            && stage == Some("synthesis")
            && let Some(a) = context.answer
        {
            attributes.push(text(
                "gen_ai.output.messages",
                messages_json("assistant", a),
            ));
        }
        (format!("chat {model_id}"), SPAN_KIND_CLIENT)
    } else if let Some(tool) = closing.filter(|o| o.kind == ObservationType::ToolExecution) {
        let c = &tool.content;
        let name = str_at(c, "/toolName").unwrap_or("tool");
        attributes.push(text("gen_ai.operation.name", "execute_tool"));
        attributes.push(text("gen_ai.tool.name", name));
        attributes.push(text("gen_ai.tool.type", "function"));
        if let Some(call) = str_at(c, "/callId") {
            attributes.push(text("gen_ai.tool.call.id", call));
        }
        attributes.push(text("openinference.span.kind", "TOOL"));
        if str_at(c, "/status") == Some("error") {
            let code = str_at(&tool.metadata, "/errorCode").unwrap_or("TOOL_ERROR");
            let message = str_at(c, "/error").unwrap_or("the tool failed");
            fail(&mut status, &mut attributes, code, message);
        }
        if context.include_content {
            if let Some(arguments) = c.get("arguments") {
                attributes.push(text("gen_ai.tool.call.arguments", json_text(arguments)));
            }
            if let Some(output) = c.get("output").filter(|v| !v.is_null()) {
                attributes.push(text("gen_ai.tool.call.result", json_text(output)));
            }
        }
        (format!("execute_tool {name}"), SPAN_KIND_INTERNAL)
    } else {
        attributes.push(text("openinference.span.kind", "CHAIN"));
        let name = match draft.phase {
            Some(Phase::Planning) => "plan",
            Some(Phase::Synthesis) => "synthesize",
            Some(Phase::Execution) => "execute",
            Some(Phase::Finalization) => "finalize",
            Some(Phase::Run) | None => "run",
        };
        (name.to_owned(), SPAN_KIND_INTERNAL)
    };
    if let Some(o) = closing {
        attributes.push(text("art.observation.id", o.id.clone()));
    }
    let mut events: Vec<&Observation> = draft.events.clone();
    events.sort_by(|a, b| (a.timestamp, &a.id).cmp(&(b.timestamp, &b.id)));
    Span {
        trace_id: context.trace_id.clone(),
        span_id: span_id(id),
        parent_span_id: parent.map(span_id).unwrap_or_default(),
        name,
        kind,
        start_time_unix_nano: nanos(start_ms),
        end_time_unix_nano: nanos(end_ms),
        attributes,
        events: events
            .into_iter()
            .map(|o| event(o, context.include_content))
            .collect(),
        status,
    }
}

/// `gen_ai.provider.name` and `gen_ai.request.model` from `{provider, model}`.
fn provider_attributes(attributes: &mut Vec<KeyValue>, meta: &Value) {
    if let Some(provider) = str_at(meta, "/provider") {
        attributes.push(text("gen_ai.provider.name", provider_name(provider)));
    }
    if let Some(model) = str_at(meta, "/model") {
        attributes.push(text("gen_ai.request.model", model));
    }
}

/// `gen_ai.usage.*` from `{inputTokens, outputTokens}`.
fn usage_attributes(attributes: &mut Vec<KeyValue>, usage: &Value) {
    let number = |key: &str| usage.get(key).and_then(Value::as_u64);
    if let Some(n) = number("inputTokens") {
        attributes.push(int("gen_ai.usage.input_tokens", n));
    }
    if let Some(n) = number("outputTokens") {
        attributes.push(int("gen_ai.usage.output_tokens", n));
    }
}

/// A GenAI-conventions message list with one text message.
fn messages_json(role: &str, content: &str) -> String {
    serde_json::json!([{ "role": role, "parts": [{ "type": "text", "content": content }] }])
        .to_string()
}

/// A point observation as a span event.
fn event(o: &Observation, include_content: bool) -> Event {
    let mut attributes = vec![
        text("art.observation.id", o.id.clone()),
        text("art.observation.title", o.title.clone()),
    ];
    if o.kind == ObservationType::Error || o.kind == ObservationType::LlmStreamError {
        if let Some(code) = str_at(&o.content, "/code") {
            attributes.push(text("error.type", code));
        }
        if let Some(message) = str_at(&o.content, "/message") {
            attributes.push(text("exception.message", message));
        }
    }
    if include_content {
        attributes.push(text("art.observation.content", o.content.to_string()));
    }
    Event {
        time_unix_nano: nanos(o.timestamp),
        name: o.kind.as_str().to_owned(),
        attributes,
    }
}
