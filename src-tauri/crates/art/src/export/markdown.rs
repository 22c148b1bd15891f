//! A thread as a person reads it: each question of its active branch, then what the
//! agent did for it (plan, tool calls with arguments and results, errors, optionally its
//! thinking), then the answer as the model wrote it (Markdown); then the other branches,
//! listed where they leave the active one.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use art_types::approval::{ApprovalContent, Decider};
use art_types::record::StepStatus;
use art_types::record::view::{RunView, ToolState};
use art_types::{ConversationMessage, MessageRole, MessageStatus};
use serde_json::Value;

use super::{ExportError, Redactor, Sink, Summary, ThreadData, emit};
use crate::context::Tree;
use crate::observation::StoredObservation;

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
    /// The active branch.
    messages: Vec<ConversationMessage>,
    /// The other branches, as listed after the transcript.
    others: String,
    header: String,
    /// Each run, folded as its observations arrive.
    runs: HashMap<String, RunView>,
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
            others: String::new(),
            header: String::new(),
            runs: HashMap::new(),
        }
    }
}

/// Whether a run did anything worth writing down besides its answer.
fn has_notes(run: &RunView, thinking: bool) -> bool {
    run.plan.is_some()
        || !run.tools.is_empty()
        || !run.problems.is_empty()
        || (thinking && !run.thoughts.trim().is_empty())
}

/// The plan: its title and intent, then each step (its status when it is not done, and
/// why).
fn write_plan(out: &mut String, run: &RunView) {
    let Some(plan) = &run.plan else { return };
    let _ = write!(out, "**Plan**");
    if let Some(title) = &plan.title {
        let _ = write!(out, ": {title}");
    }
    out.push('\n');
    if let Some(intent) = &plan.intent {
        let _ = writeln!(out, "\n_Intent:_ {intent}");
    }
    if !plan.steps.is_empty() {
        out.push('\n');
        for (i, step) in plan.steps.iter().enumerate() {
            let _ = write!(out, "{}. {}", i + 1, step.description);
            if step.status != StepStatus::Done {
                let _ = write!(out, " _({})_", step.status.label());
            }
            if let Some(reason) = plan.outcomes.get(&step.id).and_then(|o| o.reason.as_ref()) {
                let _ = write!(out, " — {reason}");
            }
            out.push('\n');
        }
    }
    if let Some(update) = plan.update.as_ref().filter(|u| !u.is_empty()) {
        let _ = writeln!(
            out,
            "\n_The plan changed while it ran: added {:?}, changed {:?}, removed {:?}._",
            update.added, update.changed, update.removed
        );
    }
    out.push('\n');
}

/// Who decided on a call and how, for its heading.
fn approval_note(approval: &ApprovalContent) -> String {
    let by = match approval.decided_by {
        Decider::User => "by the user",
        Decider::Policy => "by the thread's policy",
    };
    let mut note = if approval.approved {
        format!(" · approved {by}")
    } else {
        format!(" · denied {by}")
    };
    if approval.edited() {
        note.push_str(", arguments edited");
    }
    if approval.always {
        note.push_str(", always in this thread");
    }
    if let Some(reason) = approval.reason.as_deref().filter(|r| !r.is_empty()) {
        note.push_str(": ");
        note.push_str(reason);
    }
    note
}

/// The agent's work for one run, in the order it happened: thinking, plan, tool calls,
/// errors.
fn write_run(out: &mut String, run: &RunView, thinking: bool) {
    if thinking && !run.thoughts.trim().is_empty() {
        out.push_str("<details><summary>Thinking</summary>\n\n");
        fenced(out, "text", &run.thoughts);
        out.push_str("\n</details>\n\n");
    }
    write_plan(out, run);
    for tool in &run.tools {
        let status = match (tool.state, tool.output.is_some() || tool.error.is_some()) {
            (ToolState::Ok, _) => "ok",
            (ToolState::Error, true) => "error",
            _ => "not run",
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
        let decision = tool
            .approval
            .as_ref()
            .map(approval_note)
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "**Tool `{}`** ({status}{duration}{server}{decision})\n",
            tool.tool_name
        );
        match tool.approval.as_ref().filter(|_| tool.edited()) {
            Some(approval) => {
                out.push_str("Arguments (as edited by the user; these ran):\n\n");
                fenced(out, "json", &json_text(&tool.arguments));
                out.push_str("\nArguments the model proposed:\n\n");
                fenced(out, "json", &json_text(&approval.proposed));
            }
            None => {
                out.push_str("Arguments:\n\n");
                fenced(out, "json", &json_text(&tool.arguments));
            }
        }
        if let Some(question) = &tool.question {
            let _ = writeln!(
                out,
                "\n> MCP server `{}` asked the user: {}\n>\n> {}",
                question.asked.question.server,
                question.asked.question.message.replace('\n', " "),
                question.outcome.as_ref().map_or_else(
                    || "Not answered: the run ended while it waited.".to_owned(),
                    ToString::to_string
                )
            );
        }
        if let Some(result) = &tool.output {
            out.push_str("\nResult:\n\n");
            fenced(out, "json", &json_text(result));
        }
        if let Some(error) = &tool.error {
            out.push_str("\nError:\n\n");
            fenced(out, "text", error);
        }
        out.push('\n');
    }
    if let Some(waiting) = &run.waiting {
        let _ = writeln!(
            out,
            "> **Waiting for approval** of `{}` with:\n",
            waiting.tool_name
        );
        fenced(out, "json", &json_text(&waiting.arguments));
        out.push('\n');
    }
    for (code, message) in &run.problems {
        let _ = writeln!(out, "> **Error** `{code}`: {message}\n");
    }
}

/// The first line of a message, at most 80 characters.
fn gist(m: &ConversationMessage) -> String {
    let line = m
        .content
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let mut gist: String = line.trim().chars().take(80).collect();
    if gist.chars().count() < line.trim().chars().count() {
        gist.push('…');
    }
    gist
}

fn speaker(m: &ConversationMessage) -> &'static str {
    match m.role {
        MessageRole::User => "You",
        MessageRole::Ai => "Assistant",
        MessageRole::Tool => "Tool",
        MessageRole::System => "System",
    }
}

/// The branches that leave the active one (`path`), each where it leaves: its first
/// message and how many messages it holds. Empty when there are none.
fn other_branches(
    tree: &Tree,
    path: &[&str],
    by_id: &HashMap<&str, &ConversationMessage>,
) -> String {
    let mut out = String::new();
    let mut count = 0;
    // Each place on the path (and the thread's start) with alternatives beside the path.
    for point in tree.branch_points() {
        let on_path = |id: &str| path.contains(&id);
        if !point.parent_id.as_deref().is_none_or(on_path) {
            continue; // inside another branch: counted with it
        }
        let chosen = point.alternatives.iter().find(|a| on_path(a));
        for alternative in point.alternatives.iter().filter(|a| !on_path(a)) {
            let Some(first) = by_id.get(alternative.as_str()) else {
                continue;
            };
            count += 1;
            let instead = chosen
                .and_then(|c| by_id.get(c.as_str()))
                .map(|c| format!("Instead of “{}”: ", gist(c)))
                .unwrap_or_default();
            let size = tree.size_below(alternative);
            let _ = writeln!(
                out,
                "- {instead}“{}” ({} · {} · {size} message{}, from `{}`)",
                gist(first),
                speaker(first),
                when(first.timestamp),
                if size == 1 { "" } else { "s" },
                first.message_id,
            );
        }
    }
    if count == 0 {
        return out;
    }
    format!(
        "## Other branches\n\nThe transcript follows the thread's active branch; {count} other{} {} kept:\n\n{out}\n",
        if count == 1 { "" } else { "s" },
        if count == 1 { "is" } else { "are" },
    )
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
        let tree = Tree::of(&data.messages);
        let path: Vec<&str> = tree
            .path(tree.shown_head(t.head.as_deref()))
            .iter()
            .map(|l| l.id.as_str())
            .collect();
        let by_id: HashMap<&str, &ConversationMessage> = data
            .messages
            .iter()
            .map(|m| (m.message_id.as_str(), m))
            .collect();
        self.others = other_branches(&tree, &path, &by_id);
        self.messages = path
            .iter()
            .filter_map(|id| by_id.get(id))
            .map(|m| (*m).clone())
            .collect();
        self.runs.clear();
        Ok(())
    }

    fn observations(&mut self, batch: Vec<StoredObservation>) -> Result<(), ExportError> {
        for stored in batch {
            let o = stored.decode()?;
            self.runs
                .entry(o.trace_id.clone())
                .or_insert_with(|| RunView::new(&o.thread_id, &o.trace_id))
                .apply_observation(&o);
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
        for run in self.runs.values_mut() {
            run.finish(None);
        }
        let thinking = self.thinking;
        let runs: HashMap<&str, &RunView> = self
            .runs
            .iter()
            .filter(|(_, run)| has_notes(run, thinking))
            .map(|(trace, run)| (trace.as_str(), run))
            .collect();
        for m in &self.messages {
            let run = m.trace_id().and_then(|t| runs.get(t));
            match m.role {
                MessageRole::User => {
                    let _ = writeln!(
                        out,
                        "## You · {}\n\n{}\n",
                        when(m.timestamp),
                        m.content.trim_end()
                    );
                    // Its files, each with what it is and its hash (the bytes are in the
                    // native export, under that hash).
                    for a in &m.attachments {
                        let _ = writeln!(out, "- 📎 {} — `sha256:{}`", a.describe(), a.id);
                    }
                    if !m.attachments.is_empty() {
                        out.push('\n');
                    }
                    // A run that never answered: what it did (and why it failed) here.
                    if let Some(run) =
                        run.filter(|_| m.trace_id().is_some_and(|t| !answered.contains(&t)))
                    {
                        out.push_str("## Assistant\n\n");
                        write_run(&mut out, run, self.thinking);
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
                        write_run(&mut out, run, self.thinking);
                    }
                    let _ = writeln!(out, "{}\n", m.content.trim_end());
                    if m.status == MessageStatus::Interrupted {
                        out.push_str("_(stopped before the answer was complete)_\n\n");
                    }
                }
                MessageRole::Tool | MessageRole::System => {}
            }
        }
        out.push_str(&std::mem::take(&mut self.others));
        out.push_str("---\n\n");
        emit(self.out, self.redactor, &out)
    }

    fn finish(&mut self, _summary: &Summary) -> Result<(), ExportError> {
        self.out.flush()?;
        Ok(())
    }
}
