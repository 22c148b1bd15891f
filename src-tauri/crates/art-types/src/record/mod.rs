//! What a run records, typed: the contents of its observations (the plan as a todo list,
//! each step's status, plan updates, tool calls and their executions, errors) and, in
//! [`view`], the one fold from a run's observations to what people see of it — shared by
//! the app's run card, the Markdown export and the `art` printer.
//!
//! Contents are read leniently: a run recorded before steps existed (a PLAN whose `plan`
//! is text or a list of strings, no STEP observations) still reads as a plan whose steps
//! all ran.

pub mod diff;
pub mod view;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::observation::plan_steps;
use crate::{FailureCode, ParsedToolCall, Phase, ToolStatus};

/// Where a plan step is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished with an output.
    Done,
    /// Ended without its result: a limit, a refused or failing tool, a stop.
    Failed,
    /// Never started: the run ended first, or a limit left no room for it.
    Skipped,
}

impl StepStatus {
    /// The status in a few words, for people.
    pub fn label(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in progress",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// Whether the step will not change any more.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Skipped)
    }
}

/// One item of the plan's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// Stable within the run (`"1"`, `"2"`, … or the model's own ids).
    pub id: String,
    /// What the step does, in the model's words.
    pub description: String,
    /// Where it is.
    #[serde(default)]
    pub status: StepStatus,
    /// Tools the planner expects the step to use. A step naming none is reasoning: it is
    /// done by the answer, without a call of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The step may use its tools but need not: a step the user added in review, or the
    /// one step of a run whose plan could not be read (both offered every tool). A
    /// planner's step that names tools and calls none did not do its work; this one may
    /// answer without a call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tools_optional: bool,
}

/// Content of a `PLAN` observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanContent {
    /// What the user wants, in the model's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// The steps' descriptions, one string each (what readers of single-pass plans read).
    #[serde(default)]
    pub plan: Value,
    /// The todo list, as planned (every step pending).
    #[serde(default)]
    pub steps: Vec<PlanStep>,
    /// Calls the planner already decided, run as the first step's.
    #[serde(default)]
    pub tool_calls: Vec<ParsedToolCall>,
}

impl PlanContent {
    /// A plan of `steps`, with the `plan` strings older readers expect.
    pub fn new(
        intent: Option<String>,
        steps: Vec<PlanStep>,
        tool_calls: Vec<ParsedToolCall>,
    ) -> Self {
        let plan = steps.iter().map(|s| Value::from(s.description.clone()));
        Self {
            intent,
            plan: Value::Array(plan.collect()),
            steps,
            tool_calls,
        }
    }

    /// Read a stored PLAN. One recorded before steps existed lists its plan lines as
    /// steps that are done: the single pass ran the whole plan.
    pub fn read(content: &Value) -> Self {
        let mut plan: Self = serde_json::from_value(content.clone()).unwrap_or_else(|_| Self {
            intent: content
                .get("intent")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..Self::default()
        });
        if content.get("steps").is_none() {
            plan.steps = plan_steps(content)
                .into_iter()
                .enumerate()
                .map(|(i, description)| PlanStep {
                    id: (i + 1).to_string(),
                    description,
                    status: StepStatus::Done,
                    tools: Vec::new(),
                    tools_optional: false,
                })
                .collect();
        }
        plan
    }
}

/// Content of a `STEP` observation: a step changed status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepContent {
    /// The step.
    pub step_id: String,
    /// Its new status.
    pub status: StepStatus,
    /// What the step produced (when done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// LLM calls the step made so far.
    #[serde(default)]
    pub iterations: u32,
}

/// Content of a `PLAN_UPDATE` observation: the todo list as a step left it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanUpdateContent {
    /// The whole list after the update, with each step's status.
    pub steps: Vec<PlanStep>,
    /// Ids of the steps that are new.
    #[serde(default)]
    pub added: Vec<String>,
    /// Ids of the steps whose description changed.
    #[serde(default)]
    pub changed: Vec<String>,
    /// Ids of the steps that were dropped.
    #[serde(default)]
    pub removed: Vec<String>,
    /// The step during which the plan changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// Why, in the model's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl PlanUpdateContent {
    /// The update from `before` to `after`: which ids are new, which were dropped, and
    /// which kept their id with another description.
    pub fn between(before: &[PlanStep], after: Vec<PlanStep>) -> Self {
        let find = |steps: &[PlanStep], id: &str| steps.iter().position(|s| s.id == id);
        let added = after
            .iter()
            .filter(|s| find(before, &s.id).is_none())
            .map(|s| s.id.clone())
            .collect();
        let changed = after
            .iter()
            .filter(|s| find(before, &s.id).is_some_and(|i| before[i].description != s.description))
            .map(|s| s.id.clone())
            .collect();
        let removed = before
            .iter()
            .filter(|s| find(&after, &s.id).is_none())
            .map(|s| s.id.clone())
            .collect();
        Self {
            steps: after,
            added,
            changed,
            removed,
            step_id: None,
            reason: None,
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

/// Content of a `TOOL_CALL` observation: a call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallContent {
    /// Links the call to its execution.
    pub call_id: String,
    /// The tool.
    pub tool_name: String,
    /// Its arguments, as proposed.
    #[serde(default)]
    pub arguments: Value,
    /// The plan step it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
}

/// Content of a `TOOL_EXECUTION` observation: a tool ran (or was refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionContent {
    /// Links the execution to its call.
    pub call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The arguments it ran with.
    #[serde(default)]
    pub arguments: Value,
    /// Whether it worked.
    pub status: ToolStatus,
    /// What the model was given.
    #[serde(default)]
    pub output: Value,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The whole result, when the model was given less (an MCP image as a note).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The plan step it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
}

/// Content of an `ERROR` or `LLM_STREAM_ERROR` observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorContent {
    /// Why, as a stable code.
    #[serde(default = "error_code")]
    pub code: FailureCode,
    /// For people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where the run was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// What could not be understood (a plan the parser could not fully read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

fn error_code() -> FailureCode {
    FailureCode::parse("ERROR")
}

/// Read a stored content as `T`; `None` when it does not have that shape.
pub fn read<T: serde::de::DeserializeOwned>(content: &Value) -> Option<T> {
    serde_json::from_value(content.clone()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(id: &str, description: &str) -> PlanStep {
        PlanStep {
            id: id.into(),
            description: description.into(),
            status: StepStatus::Pending,
            tools: Vec::new(),
            tools_optional: false,
        }
    }

    #[test]
    fn a_single_pass_plan_reads_as_steps_that_ran() {
        let old = json!({ "intent": "add", "plan": "1. calculate\n\n2) answer", "toolCalls": [] });
        let plan = PlanContent::read(&old);
        assert_eq!(plan.intent.as_deref(), Some("add"));
        let steps: Vec<_> = plan
            .steps
            .iter()
            .map(|s| (s.id.as_str(), s.description.as_str(), s.status))
            .collect();
        assert_eq!(
            steps,
            [
                ("1", "calculate", StepStatus::Done),
                ("2", "answer", StepStatus::Done)
            ]
        );
    }

    #[test]
    fn a_todo_list_round_trips_with_the_strings_old_readers_need() {
        let plan = PlanContent::new(
            Some("sum".into()),
            vec![step("a", "list"), step("b", "read")],
            Vec::new(),
        );
        let stored = serde_json::to_value(&plan).unwrap();
        assert_eq!(plan_steps(&stored), ["list", "read"]);
        assert_eq!(PlanContent::read(&stored), plan);
    }

    #[test]
    fn an_update_names_what_was_added_changed_and_removed() {
        let before = [step("1", "list"), step("2", "read"), step("3", "sum")];
        let after = vec![
            step("1", "list"),
            step("2", "read both"),
            step("4", "compare"),
        ];
        let update = PlanUpdateContent::between(&before, after);
        assert_eq!(
            (update.added, update.changed, update.removed),
            (
                vec!["4".to_owned()],
                vec!["2".to_owned()],
                vec!["3".to_owned()]
            )
        );
        assert!(PlanUpdateContent::between(&before, before.to_vec()).is_empty());
    }

    #[test]
    fn an_error_without_a_code_still_reads() {
        let error: ErrorContent = read(&json!({ "message": "boom" })).unwrap();
        assert_eq!(error.code.as_str(), "ERROR");
        assert_eq!(error.message.as_deref(), Some("boom"));
    }
}
