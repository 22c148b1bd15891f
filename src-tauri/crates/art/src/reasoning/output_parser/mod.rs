//! OutputParser: reads the planning call's output into intent, title, plan and tool
//! calls. Accepts what models actually write: a JSON object (fenced or not, with prose
//! around it) or the older section format (`Intent:` / `Plan:` / `Tool Calls:` + a JSON
//! array), with either tool-call shape (ART's `{callId, toolName, arguments}` or
//! OpenAI's `{id, type, function: {name, arguments: "<json>"}}`). Thinking in
//! `<think>` tags is taken out first. Garbage gives an empty result plus the problems
//! found, never a panic.

use art_types::ParsedToolCall;
use art_types::record::PlanStep;
use serde_json::{Map, Value};

use super::think_tags::{self, Segment};
use art_types::record::view::balanced_object;

/// What the planning call said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanningOutput {
    /// The model's understanding of the goal.
    pub intent: Option<String>,
    /// A short title for the thread.
    pub title: Option<String>,
    /// The plan, as text (internal indentation kept).
    pub plan: Option<String>,
    /// The plan as a todo list: its `steps`, else one step per line of its `plan`.
    pub steps: Vec<PlanStep>,
    /// Tool calls to run, in order (empty when none or when they were malformed).
    pub tool_calls: Vec<ParsedToolCall>,
    /// Thinking found in `<think>` tags.
    pub thinking: Option<String>,
    /// What could not be understood (recorded as an observation, not an error).
    pub problems: Vec<String>,
    /// The output was a JSON plan that cannot be read (cut off, broken): nothing of it
    /// is to be used, not even as text.
    pub unreadable: bool,
}

impl PlanningOutput {
    /// Whether nothing usable was found.
    pub fn is_empty(&self) -> bool {
        self.intent.is_none()
            && self.plan.is_none()
            && self.steps.is_empty()
            && self.tool_calls.is_empty()
    }
}

/// Parse planning output.
pub fn parse_planning(raw: &str) -> PlanningOutput {
    let mut text = String::new();
    let mut thinking = String::new();
    for segment in think_tags::split(raw) {
        match segment {
            Segment::Text(t) => text.push_str(&t),
            Segment::Thinking(t) => thinking.push_str(&t),
        }
    }
    let mut out = match find_json_object(&text) {
        Some(object) => {
            let mut out = from_object(&object);
            out.steps = steps::from_value(object.get("steps"), &mut out.problems);
            out
        }
        // A JSON plan that does not parse (a small model out of tokens mid-plan): its
        // fragments are no plan, and read as sections they would be shown as one.
        None if starts_as_json(&text) => PlanningOutput {
            problems: vec!["the plan is not valid JSON (cut off, or broken)".into()],
            unreadable: true,
            ..PlanningOutput::default()
        },
        None => from_sections(&text),
    };
    if out.steps.is_empty() {
        out.steps = steps::from_plan_text(out.plan.as_deref().unwrap_or_default());
    } else if out.plan.is_none() {
        out.plan = Some(steps::as_text(&out.steps));
    }
    out.thinking = Some(thinking.trim().to_owned()).filter(|t| !t.is_empty());
    if out.is_empty() && out.problems.is_empty() {
        out.problems
            .push("the planning output had no intent, plan or tool calls".into());
    }
    out
}

/// Synthesis output: the answer without thinking, trimmed.
pub fn parse_synthesis(raw: &str) -> (String, Option<String>) {
    let (mut text, mut thinking) = (String::new(), String::new());
    for segment in think_tags::split(raw) {
        match segment {
            Segment::Text(t) => text.push_str(&t),
            Segment::Thinking(t) => thinking.push_str(&t),
        }
    }
    let thinking = Some(thinking.trim().to_owned()).filter(|t| !t.is_empty());
    (text.trim().to_owned(), thinking)
}

/// Whether `text` opens as JSON (after any code fence): an object or an array.
fn starts_as_json(text: &str) -> bool {
    let text = text.trim_start();
    let text = text
        .strip_prefix("```")
        .map(|rest| {
            rest.trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .trim_start()
        })
        .unwrap_or(text);
    text.starts_with('{') || text.starts_with('[')
}

const KNOWN_KEYS: [&str; 6] = [
    "intent",
    "plan",
    "steps",
    "toolCalls",
    "tool_calls",
    "title",
];

/// The first JSON object in the text that looks like a plan: fenced blocks first, then
/// every balanced `{…}` from left to right.
fn find_json_object(text: &str) -> Option<Map<String, Value>> {
    let fenced = text.split("```").skip(1).step_by(2).map(|block| {
        let block = block.trim_start();
        block
            .strip_prefix("json")
            .or_else(|| block.strip_prefix("JSON"))
            .unwrap_or(block)
    });
    let braces = text
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .filter_map(|(start, _)| balanced_object(&text[start..]));
    fenced
        .chain(braces)
        .filter_map(|candidate| serde_json::from_str::<Value>(candidate.trim()).ok())
        .filter_map(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .find(|map| KNOWN_KEYS.iter().any(|k| map.contains_key(*k)))
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
        Value::Array(items) => {
            let steps: Vec<String> = items
                .iter()
                .filter_map(|item| match item {
                    Value::String(s) => Some(s.trim().to_owned()),
                    Value::Object(o) => ["description", "step", "text", "title"]
                        .iter()
                        .find_map(|k| o.get(*k).and_then(Value::as_str))
                        .map(|s| s.trim().to_owned()),
                    _ => None,
                })
                .filter(|s| !s.is_empty())
                .enumerate()
                .map(|(i, s)| format!("{}. {s}", i + 1))
                .collect();
            Some(steps.join("\n")).filter(|s| !s.is_empty())
        }
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn from_object(map: &Map<String, Value>) -> PlanningOutput {
    let mut out = PlanningOutput {
        intent: map.get("intent").and_then(text_of),
        title: map.get("title").and_then(text_of),
        plan: map.get("plan").and_then(text_of),
        ..PlanningOutput::default()
    };
    match map.get("toolCalls").or_else(|| map.get("tool_calls")) {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => match parse_calls(calls) {
            Ok(calls) => out.tool_calls = calls,
            Err(problem) => out.problems.push(problem),
        },
        Some(_) => out.problems.push("`toolCalls` must be an array".into()),
    }
    out
}

/// Every call or none: one malformed call drops them all (with the reason).
fn parse_calls(calls: &[Value]) -> Result<Vec<ParsedToolCall>, String> {
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| parse_call(i, call).map_err(|why| format!("tool call {}: {why}", i + 1)))
        .collect()
}

fn parse_call(index: usize, call: &Value) -> Result<ParsedToolCall, String> {
    let obj = call.as_object().ok_or("not an object")?;
    let (name, arguments, id) =
        if let Some(function) = obj.get("function").and_then(Value::as_object) {
            let name = function.get("name").and_then(Value::as_str);
            (name, function.get("arguments"), obj.get("id"))
        } else {
            let name = obj
                .get("toolName")
                .or_else(|| obj.get("name"))
                .and_then(Value::as_str);
            let args = obj
                .get("arguments")
                .or_else(|| obj.get("args"))
                .or_else(|| obj.get("input"));
            (name, args, obj.get("callId").or_else(|| obj.get("id")))
        };
    let name = name
        .filter(|n| !n.trim().is_empty())
        .ok_or("no tool name")?;
    let arguments = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(s)) => {
            serde_json::from_str(s).map_err(|e| format!("arguments are not valid JSON: {e}"))?
        }
        Some(v) => v.clone(),
    };
    if !arguments.is_object() {
        return Err("arguments must be a JSON object".into());
    }
    let call_id = id
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("call_{}", index + 1));
    Ok(ParsedToolCall {
        call_id,
        tool_name: name.trim().to_owned(),
        arguments,
        signature: None,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Intent,
    Title,
    Plan,
    ToolCalls,
}

/// Recognise a section header line like `**Tool Calls:** …`; returns the section and
/// whatever follows the colon on that line.
fn header(line: &str) -> Option<(Section, &str)> {
    let trimmed = line.trim_start().trim_start_matches(['#', '*', ' ']);
    let colon = trimmed.find(':')?;
    let name: String = trimmed[..colon]
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let section = match name.as_str() {
        "intent" => Section::Intent,
        "title" => Section::Title,
        "plan" => Section::Plan,
        "toolcalls" | "tools" => Section::ToolCalls,
        _ => return None,
    };
    Some((section, trimmed[colon + 1..].trim_start_matches('*')))
}

fn from_sections(text: &str) -> PlanningOutput {
    let mut parts: Vec<(Section, String)> = Vec::new();
    for line in text.lines() {
        match header(line) {
            Some((section, rest)) => parts.push((section, rest.to_owned())),
            None => {
                if let Some((_, body)) = parts.last_mut() {
                    body.push('\n');
                    body.push_str(line);
                }
            }
        }
    }
    let mut out = PlanningOutput::default();
    for (section, body) in parts {
        let clean = trim_block(&body);
        match section {
            Section::Intent => out.intent = Some(clean).filter(|s| !s.is_empty()),
            Section::Title => out.title = Some(clean).filter(|s| !s.is_empty()),
            Section::Plan => out.plan = Some(clean).filter(|s| !s.is_empty()),
            Section::ToolCalls => {
                let json = clean
                    .trim_start_matches("```json")
                    .trim_start_matches("```")
                    .trim_end_matches("```")
                    .trim();
                if json.is_empty() || json.eq_ignore_ascii_case("none") || json == "[]" {
                    continue;
                }
                match serde_json::from_str::<Value>(json) {
                    Ok(Value::Array(calls)) => match parse_calls(&calls) {
                        Ok(calls) => out.tool_calls = calls,
                        Err(problem) => out.problems.push(problem),
                    },
                    Ok(_) => out
                        .problems
                        .push("the Tool Calls section is not a JSON array".into()),
                    Err(e) => out
                        .problems
                        .push(format!("the Tool Calls section is not valid JSON: {e}")),
                }
            }
        }
    }
    out
}

/// Drop leading and trailing blank lines but keep the indentation inside.
fn trim_block(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => {
            let mut block = lines[a..=b].join("\n");
            if a == 0 {
                block = block.trim_start().to_owned();
            }
            block.trim_end().to_owned()
        }
        _ => String::new(),
    }
}

mod steps;

pub use steps::{fresh_id, parse_calls_in};

/// Steps from a `steps` array (an `update_plan` call's), with the problems found.
pub fn read_steps(value: Option<&Value>) -> (Vec<PlanStep>, Vec<String>) {
    let mut problems = Vec::new();
    let steps = steps::from_value(value, &mut problems);
    (steps, problems)
}

#[cfg(test)]
mod tests;
