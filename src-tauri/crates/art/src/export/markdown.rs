//! A thread as a person reads it: each question, then what the agent did for it (plan,
//! tool calls with arguments and results, errors, optionally its thinking), then the
//! answer as the model wrote it (Markdown).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use art_types::{ConversationMessage, MessageRole, MessageStatus, Observation, ObservationType};
use serde_json::Value;

use super::{ExportError, Redactor, Sink, Summary, ThreadData, emit};
use crate::observation::StoredObservation;

/// One tool call of a run.
#[derive(Default)]
struct ToolNote {
    call_id: String,
    name: String,
    arguments: Value,
    /// `ok` or `error`; empty when it never ran.
    status: String,
    result: Option<Value>,
    error: Option<String>,
    duration_ms: Option<i64>,
    /// The MCP server it went to, if any.
    mcp: Option<art_types::mcp::McpOrigin>,
}

/// What the agent did in one run.
#[derive(Default)]
struct RunNotes {
    title: Option<String>,
    intent: Option<String>,
    steps: Vec<String>,
    tools: Vec<ToolNote>,
    thinking: String,
    errors: Vec<(String, String)>,
}

impl RunNotes {
    fn tool(&mut self, content: &Value) -> &mut ToolNote {
        let call_id = text(content, "callId").unwrap_or_default();
        let index = match self.tools.iter().position(|t| t.call_id == call_id) {
            Some(i) => i,
            None => {
                self.tools.push(ToolNote {
                    call_id,
                    name: text(content, "toolName").unwrap_or_default(),
                    arguments: content.get("arguments").cloned().unwrap_or(Value::Null),
                    ..ToolNote::default()
                });
                self.tools.len() - 1
            }
        };
        &mut self.tools[index]
    }

    fn add(&mut self, o: &Observation, thinking: bool) {
        let c = &o.content;
        match o.kind {
            ObservationType::Title => self.title = text(c, "title"),
            ObservationType::Intent => self.intent = text(c, "intent"),
            ObservationType::Plan => {
                self.intent = text(c, "intent").or(self.intent.take());
                self.steps = art_types::observation::plan_steps(c);
            }
            ObservationType::ToolCall => {
                self.tool(c);
            }
            ObservationType::ToolExecution => {
                let duration = o.span.as_ref().and_then(|s| Some(s.end_ms? - s.start_ms));
                let note = self.tool(c);
                note.status = text(c, "status").unwrap_or_default();
                note.result = c.get("output").filter(|v| !v.is_null()).cloned();
                note.error = text(c, "error");
                note.duration_ms = duration;
                note.mcp = art_types::mcp::McpOrigin::of(&o.metadata);
            }
            ObservationType::Thoughts if thinking => {
                if let Some(t) = text(c, "text").or_else(|| text(c, "thinking")) {
                    self.thinking.push_str(&t);
                }
            }
            ObservationType::Error | ObservationType::LlmStreamError => {
                let code = text(c, "code").unwrap_or_else(|| "ERROR".into());
                let message = text(c, "message").unwrap_or_else(|| o.title.clone());
                if !self.errors.iter().any(|(_, m)| *m == message) {
                    self.errors.push((code, message));
                }
            }
            _ => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.intent.is_none()
            && self.steps.is_empty()
            && self.tools.is_empty()
            && self.thinking.is_empty()
            && self.errors.is_empty()
    }
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// A fenced block that no backtick run inside `body` can close.
fn fenced(out: &mut String, language: &str, body: &str) {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "{fence}{language}\n{}\n{fence}", body.trim_end());
}

fn when(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// Writes Markdown transcripts, one section per thread.
pub(crate) struct Writer<'a> {
    out: &'a mut (dyn Write + Send),
    redactor: &'a Redactor,
    thinking: bool,
    messages: Vec<ConversationMessage>,
    header: String,
    runs: HashMap<String, RunNotes>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(
        out: &'a mut (dyn Write + Send),
        redactor: &'a Redactor,
        thinking: bool,
    ) -> Self {
        Self {
            out,
            redactor,
            thinking,
            messages: Vec::new(),
            header: String::new(),
            runs: HashMap::new(),
        }
    }
}

/// The agent's work for one run, in the order it happened: thinking, plan, tool calls,
/// errors.
fn write_run(out: &mut String, run: &RunNotes) {
    if !run.thinking.trim().is_empty() {
        out.push_str("<details><summary>Thinking</summary>\n\n");
        fenced(out, "text", &run.thinking);
        out.push_str("\n</details>\n\n");
    }
    if run.title.is_some() || run.intent.is_some() || !run.steps.is_empty() {
        let _ = write!(out, "**Plan**");
        if let Some(title) = &run.title {
            let _ = write!(out, ": {title}");
        }
        out.push('\n');
        if let Some(intent) = &run.intent {
            let _ = writeln!(out, "\n_Intent:_ {intent}");
        }
        if !run.steps.is_empty() {
            out.push('\n');
            for (i, step) in run.steps.iter().enumerate() {
                let _ = writeln!(out, "{}. {step}", i + 1);
            }
        }
        out.push('\n');
    }
    for tool in &run.tools {
        let status = match tool.status.as_str() {
            "" => "not run".to_owned(),
            "success" => "ok".to_owned(),
            other => other.to_owned(),
        };
        let duration = tool
            .duration_ms
            .map(|ms| format!(" · {ms} ms"))
            .unwrap_or_default();
        let server = tool
            .mcp
            .as_ref()
            .map(|m| format!(" · MCP server `{}` over {}", m.server, m.transport))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "**Tool `{}`** ({status}{duration}{server})\n",
            tool.name
        );
        out.push_str("Arguments:\n\n");
        fenced(out, "json", &json_text(&tool.arguments));
        if let Some(result) = &tool.result {
            out.push_str("\nResult:\n\n");
            fenced(out, "json", &json_text(result));
        }
        if let Some(error) = &tool.error {
            out.push_str("\nError:\n\n");
            fenced(out, "text", error);
        }
        out.push('\n');
    }
    for (code, message) in &run.errors {
        let _ = writeln!(out, "> **Error** `{code}`: {message}\n");
    }
}

impl Sink for Writer<'_> {
    fn thread(&mut self, data: &ThreadData) -> Result<(), ExportError> {
        let t = &data.thread;
        self.header = format!(
            "# {}\n\n_Thread `{}` · started {} · exported from {} {}_\n\n",
            t.title,
            t.thread_id,
            when(t.created_at),
            crate::APP_NAME,
            crate::VERSION
        );
        self.messages = data.messages.clone();
        self.runs.clear();
        Ok(())
    }

    fn observations(&mut self, batch: Vec<StoredObservation>) -> Result<(), ExportError> {
        for stored in batch {
            let o = stored.decode()?;
            self.runs
                .entry(o.trace_id.clone())
                .or_default()
                .add(&o, self.thinking);
        }
        Ok(())
    }

    fn end_thread(&mut self) -> Result<(), ExportError> {
        let mut out = std::mem::take(&mut self.header);
        let answered: Vec<&str> = self
            .messages
            .iter()
            .filter(|m| m.role == MessageRole::Ai)
            .filter_map(ConversationMessage::trace_id)
            .collect();
        for m in &self.messages {
            let run = m
                .trace_id()
                .and_then(|t| self.runs.get(t))
                .filter(|r| !r.is_empty());
            match m.role {
                MessageRole::User => {
                    let _ = writeln!(
                        out,
                        "## You · {}\n\n{}\n",
                        when(m.timestamp),
                        m.content.trim_end()
                    );
                    // A run that never answered: what it did (and why it failed) here.
                    if let Some(run) =
                        run.filter(|_| m.trace_id().is_some_and(|t| !answered.contains(&t)))
                    {
                        out.push_str("## Assistant\n\n");
                        write_run(&mut out, run);
                    }
                }
                MessageRole::Ai => {
                    let model = m.metadata.get("model").and_then(Value::as_str);
                    let _ = write!(out, "## Assistant");
                    if let Some(model) = model {
                        let _ = write!(out, " · {model}");
                    }
                    out.push_str("\n\n");
                    if let Some(run) = run {
                        write_run(&mut out, run);
                    }
                    let _ = writeln!(out, "{}\n", m.content.trim_end());
                    if m.status == MessageStatus::Interrupted {
                        out.push_str("_(stopped before the answer was complete)_\n\n");
                    }
                }
                MessageRole::Tool | MessageRole::System => {}
            }
        }
        out.push_str("---\n\n");
        emit(self.out, self.redactor, &out)
    }

    fn finish(&mut self, _summary: &Summary) -> Result<(), ExportError> {
        self.out.flush()?;
        Ok(())
    }
}
