//! The plan as a todo list, read from what the planner wrote (a `steps` array, else the
//! lines of its `plan`), and the tool calls a step's reply writes as JSON (the text
//! form of tool calling, for models without the native one).

use art_types::ParsedToolCall;
use art_types::record::{PlanStep, StepStatus};
use serde_json::Value;

use super::think_tags::{self, Segment};

/// Most steps a plan may have; the rest are dropped with a problem noted.
pub const MAX_STEPS: usize = 50;

fn step(id: String, description: String, tools: Vec<String>) -> PlanStep {
    PlanStep {
        id,
        description,
        status: StepStatus::Pending,
        tools,
        tools_optional: false,
    }
}

/// Steps from a `steps` array: strings, or objects with a description (`description`,
/// `step`, `text` or `title`), an optional `id` and optional `tools`. Ids are made
/// unique; items without a description are dropped with a problem.
pub(super) fn from_value(value: Option<&Value>, problems: &mut Vec<String>) -> Vec<PlanStep> {
    let items = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            problems.push("`steps` must be an array".into());
            return Vec::new();
        }
    };
    let mut steps: Vec<PlanStep> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let (id, description, tools) = match item {
            Value::String(text) => (None, text.trim().to_owned(), Vec::new()),
            Value::Object(o) => {
                let description = ["description", "step", "text", "title"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(Value::as_str))
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                let id = match o.get("id") {
                    Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                    Some(Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                };
                let tools = o
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                (id, description, tools)
            }
            _ => (None, String::new(), Vec::new()),
        };
        if description.is_empty() {
            problems.push(format!("step {} has no description", i + 1));
            continue;
        }
        if steps.len() == MAX_STEPS {
            problems.push(format!("only the first {MAX_STEPS} steps are kept"));
            break;
        }
        let taken = |id: &str| steps.iter().any(|s| s.id == id);
        let id = id
            .filter(|id| !taken(id))
            .unwrap_or_else(|| fresh_id(&steps));
        steps.push(step(id, description, tools));
    }
    steps
}

/// An id no step in `steps` has: the next number.
pub fn fresh_id(steps: &[PlanStep]) -> String {
    (steps.len() + 1..)
        .map(|n| n.to_string())
        .find(|id| !steps.iter().any(|s| s.id == *id))
        .unwrap_or_default()
}

/// One step per non-empty line of a plan written as text, without its "1." numbering.
pub(super) fn from_plan_text(plan: &str) -> Vec<PlanStep> {
    let lines = art_types::observation::plan_steps(&serde_json::json!({ "plan": plan }));
    lines
        .into_iter()
        .take(MAX_STEPS)
        .enumerate()
        .map(|(i, line)| step((i + 1).to_string(), line, Vec::new()))
        .collect()
}

/// The steps as numbered lines.
pub(super) fn as_text(steps: &[PlanStep]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {}", i + 1, s.description))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tool calls a reply writes as `{"toolCalls": [...]}` (thinking taken out first):
/// `None` when it writes none, an error when it writes them wrongly.
pub fn parse_calls_in(reply: &str) -> Option<Result<Vec<ParsedToolCall>, String>> {
    let text: String = think_tags::split(reply)
        .into_iter()
        .filter_map(|s| match s {
            Segment::Text(t) => Some(t),
            Segment::Thinking(_) => None,
        })
        .collect();
    let object = super::find_json_object(&text)?;
    match object
        .get("toolCalls")
        .or_else(|| object.get("tool_calls"))?
    {
        Value::Array(calls) if calls.is_empty() => None,
        Value::Array(calls) => Some(super::parse_calls(calls)),
        _ => Some(Err("`toolCalls` must be an array".into())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn steps_keep_their_ids_and_tools_and_get_unique_ones_otherwise() {
        let mut problems = Vec::new();
        let value = json!([
            { "id": "a", "description": "List the files", "tools": ["fs__list"] },
            "Read the newest",
            { "id": "a", "step": "Read it again" },
            { "id": 7, "text": "Sum up" },
            { "tools": ["x"] },
            42
        ]);
        let steps = from_value(Some(&value), &mut problems);
        let got: Vec<_> = steps
            .iter()
            .map(|s| (s.id.as_str(), s.description.as_str(), s.tools.len()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "List the files", 1),
                ("2", "Read the newest", 0),
                ("3", "Read it again", 0),
                ("7", "Sum up", 0)
            ]
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        let mut problems = Vec::new();
        assert!(from_value(Some(&json!("no")), &mut problems).is_empty());
        assert_eq!(problems, ["`steps` must be an array"]);
    }

    #[test]
    fn a_plan_in_text_is_one_step_per_line() {
        let steps = from_plan_text("1. add\n\n2) answer");
        assert_eq!(as_text(&steps), "1. add\n2. answer");
        assert!(from_plan_text("").is_empty());
    }

    #[test]
    fn a_reply_with_calls_in_json_gives_them_and_prose_gives_none() {
        let reply = "<think>hmm</think>Let me look.\n{\"toolCalls\": [{\"toolName\": \"calculator\", \"arguments\": {\"expression\": \"1+1\"}}]}";
        let calls = parse_calls_in(reply).unwrap().unwrap();
        assert_eq!(calls[0].tool_name, "calculator");
        assert_eq!(parse_calls_in("The sum is 2."), None);
        assert_eq!(parse_calls_in("{\"toolCalls\": []}"), None);
        assert!(
            parse_calls_in("{\"toolCalls\": [{\"arguments\": {}}]}")
                .unwrap()
                .is_err()
        );
    }
}
