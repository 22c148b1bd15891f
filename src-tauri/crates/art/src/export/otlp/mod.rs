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

use art_types::{ObservationType, Phase};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

mod light;
mod wire;

use super::{ExportError, Redactor, Sink, Summary, ThreadData, emit};
use crate::observation::StoredObservation;
use light::{Meta, Obs, Tokens};
use wire::*;

/// `service.name` of the resource.
pub const SERVICE_NAME: &str = "art-workbench";

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

/// A JSON value as attribute text: a string's own text, anything else as JSON.
fn json_text(value: &RawValue) -> String {
    serde_json::from_str::<String>(value.get()).unwrap_or_else(|_| value.get().to_owned())
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
    parent: Option<&'a str>,
    phase: Option<Phase>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    /// The observation that closed the span (its `end_ms` is set).
    closing: Option<&'a Obs>,
    /// Point observations inside the span.
    events: Vec<&'a Obs>,
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
    run: Vec<Obs>,
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
            let o = Obs::decode(&stored, self.include_content)?;
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
fn spans_of(run: &[Obs], context: &RunContext<'_>) -> Vec<Span> {
    let mut drafts: HashMap<&str, Draft<'_>> = HashMap::new();
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
            root_id.get_or_insert(info.span_id.as_str());
        }
        let draft = drafts.entry(info.span_id.as_str()).or_default();
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
    let root_id = root_id.unwrap_or(made_up.as_str());
    let root = drafts.entry(root_id).or_default();
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
    // Each span's OTLP id, computed once.
    let ids: HashMap<&str, String> = drafts.keys().map(|id| (*id, span_id(id))).collect();
    let mut spans: Vec<(i64, Span)> = drafts
        .iter()
        .map(|(id, draft)| {
            // A parent that was never seen (cut-off data) hangs under the root.
            let parent = match draft.parent {
                None => None,
                Some(p) if ids.contains_key(p) => Some(p),
                Some(_) => Some(root_id),
            };
            let parent = parent.filter(|p| p != id).and_then(|p| ids.get(p)).cloned();
            let is_root = *id == root_id;
            let end = draft
                .end_ms
                .unwrap_or(if is_root { run_end } else { draft.last_ms });
            let start = draft.start_ms.unwrap_or(end).min(end);
            let span = build_span(
                ids.get(id).cloned().unwrap_or_default(),
                parent,
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
    id: String,
    parent: Option<String>,
    draft: &Draft<'_>,
    (start_ms, end_ms): (i64, i64),
    model: Option<&Meta>,
    run: &[Obs],
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
        if let Some(tokens) = closing.and_then(Obs::run_tokens) {
            usage_attributes(&mut attributes, tokens);
        }
        // The run failed if an unrecoverable ERROR was recorded.
        let error = run
            .iter()
            .find(|o| o.kind == ObservationType::Error && o.meta.recoverable != Some(true));
        if let Some(error) = error {
            let code = error.content.code.as_deref().unwrap_or("ERROR");
            let message = error.content.message.as_deref().unwrap_or(&error.title);
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
            .map(|o| &o.meta)
            .or_else(|| draft.events.first().map(|o| &o.meta));
        let model_id = meta.and_then(|m| m.model.as_deref()).unwrap_or("unknown");
        attributes.push(text("gen_ai.operation.name", "chat"));
        attributes.push(text("openinference.span.kind", "LLM"));
        if let Some(meta) = meta {
            provider_attributes(&mut attributes, meta);
        }
        let stage = draft
            .events
            .iter()
            .find(|o| o.kind == ObservationType::LlmStreamStart)
            .and_then(|o| o.content.stage.as_deref());
        if let Some(stage) = stage {
            attributes.push(text("art.stage", stage));
        }
        let tokens = draft
            .events
            .iter()
            .find(|o| o.kind == ObservationType::LlmStreamMetadata)
            .and_then(|o| o.call_tokens())
            .or_else(|| closing.and_then(Obs::call_tokens));
        if let Some(tokens) = tokens {
            usage_attributes(&mut attributes, tokens);
            if let Some(reason) = tokens.stop {
                attributes.push(text("gen_ai.response.finish_reasons", reason));
            }
        }
        if let Some(error) = closing.filter(|o| o.kind == ObservationType::LlmStreamError) {
            let code = error.content.code.as_deref().unwrap_or("ERROR");
            let message = error.content.message.as_deref().unwrap_or("");
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
        let name = c.tool_name.as_deref().unwrap_or("tool");
        attributes.push(text("gen_ai.operation.name", "execute_tool"));
        attributes.push(text("gen_ai.tool.name", name));
        attributes.push(text("gen_ai.tool.type", "function"));
        if let Some(call) = c.call_id.as_deref() {
            attributes.push(text("gen_ai.tool.call.id", call));
        }
        attributes.push(text("openinference.span.kind", "TOOL"));
        if c.status.as_deref() == Some("error") {
            let code = tool.meta.error_code.as_deref().unwrap_or("TOOL_ERROR");
            let message = c.error.as_deref().unwrap_or("the tool failed");
            fail(&mut status, &mut attributes, code, message);
        }
        if context.include_content {
            if let Some(arguments) = &c.arguments {
                attributes.push(text("gen_ai.tool.call.arguments", json_text(arguments)));
            }
            if let Some(output) = &c.output {
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
    let mut events: Vec<&Obs> = draft.events.clone();
    events.sort_by(|a, b| (a.timestamp, &a.id).cmp(&(b.timestamp, &b.id)));
    Span {
        trace_id: context.trace_id.clone(),
        span_id: id,
        parent_span_id: parent.unwrap_or_default(),
        name,
        kind,
        start_time_unix_nano: nanos(start_ms),
        end_time_unix_nano: nanos(end_ms),
        attributes,
        events: events.into_iter().map(event).collect(),
        status,
    }
}

/// `gen_ai.provider.name` and `gen_ai.request.model` of a call.
fn provider_attributes(attributes: &mut Vec<KeyValue>, meta: &Meta) {
    if let Some(provider) = &meta.provider {
        attributes.push(text("gen_ai.provider.name", provider_name(provider)));
    }
    if let Some(model) = &meta.model {
        attributes.push(text("gen_ai.request.model", model.as_str()));
    }
}

/// `gen_ai.usage.*`.
fn usage_attributes(attributes: &mut Vec<KeyValue>, tokens: Tokens<'_>) {
    if let Some(n) = tokens.input {
        attributes.push(int("gen_ai.usage.input_tokens", n));
    }
    if let Some(n) = tokens.output {
        attributes.push(int("gen_ai.usage.output_tokens", n));
    }
}

/// A GenAI-conventions message list with one text message.
fn messages_json(role: &str, content: &str) -> String {
    serde_json::json!([{ "role": role, "parts": [{ "type": "text", "content": content }] }])
        .to_string()
}

/// A point observation as a span event.
fn event(o: &Obs) -> Event {
    let mut attributes = vec![
        text("art.observation.id", o.id.clone()),
        text("art.observation.title", o.title.clone()),
    ];
    if o.kind == ObservationType::Error || o.kind == ObservationType::LlmStreamError {
        if let Some(code) = &o.content.code {
            attributes.push(text("error.type", code.as_str()));
        }
        if let Some(message) = &o.content.message {
            attributes.push(text("exception.message", message.as_str()));
        }
    }
    // Kept only when content is exported.
    if let Some(raw) = &o.raw {
        attributes.push(text("art.observation.content", raw.as_str()));
    }
    Event {
        time_unix_nano: nanos(o.timestamp),
        name: o.kind.as_str().to_owned(),
        attributes,
    }
}
