//! Re-planning: a step calls `update_plan` with the steps that should follow it; the
//! agent answers that call itself, replaces the steps not started yet and records a
//! PLAN_UPDATE saying which were added, changed or removed.

use art_types::record::{PlanStep, PlanUpdateContent, StepStatus};
use art_types::{ObservationType, ParsedToolCall, Phase, ToolSchema};
use serde_json::{Value, json};

use super::PesAgent;
use super::run::Run;
use crate::clock;
use crate::reasoning::output_parser::{self, fresh_id};

/// The tool a step calls to change the steps after it (handled by the agent itself).
pub const UPDATE_PLAN: &str = "update_plan";

/// The `update_plan` tool as the model sees it.
pub(super) fn update_plan_schema() -> ToolSchema {
    ToolSchema {
        name: UPDATE_PLAN.into(),
        description: "Replace the steps after the current one with these (what you found \
                      changed what is left to do)."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "steps": { "type": "array", "items": { "type": "object", "properties": {
                    "id": { "type": "string" },
                    "description": { "type": "string" },
                    "tools": { "type": "array", "items": { "type": "string" } }
                }, "required": ["description"] } },
                "reason": { "type": "string" }
            },
            "required": ["steps"]
        }),
        output_schema: None,
        examples: Vec::new(),
    }
}

impl PesAgent {
    /// Replace the steps after step `index` with those an `update_plan` call gives;
    /// recorded as a PLAN_UPDATE. Returns what the model is told.
    pub(super) async fn update_plan(
        &self,
        run: &mut Run,
        index: usize,
        span: &str,
        call: &ParsedToolCall,
    ) -> String {
        let (new_steps, problems) = output_parser::read_steps(call.arguments.get("steps"));
        if call.arguments.get("steps").is_none() || !problems.is_empty() {
            let why = if problems.is_empty() {
                "`steps` is missing".to_owned()
            } else {
                problems.join("; ")
            };
            return format!("Error: the plan was not changed: {why}");
        }
        let mut after: Vec<PlanStep> = run.steps[..=index].to_vec();
        for step in new_steps {
            let taken = after.iter().any(|s| s.id == step.id);
            let id = if taken { fresh_id(&after) } else { step.id };
            after.push(PlanStep {
                id,
                status: StepStatus::Pending,
                ..step
            });
        }
        let mut update = PlanUpdateContent::between(&run.steps, after);
        update.step_id = Some(run.steps[index].id.clone());
        update.reason = call
            .arguments
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        run.steps.clone_from(&update.steps);
        let root = run.root_span.clone();
        let mut o = run.obs(
            ObservationType::PlanUpdate,
            json!(update),
            run.span(Phase::Execution, span, Some(&root), clock::now_ms(), false),
        );
        o.title = Some("Plan changed".into());
        self.record(o).await;
        let rest: Vec<String> = run.steps[index + 1..]
            .iter()
            .map(|s| s.description.clone())
            .collect();
        format!(
            "The plan is updated. After this step: {}",
            if rest.is_empty() {
                "nothing".to_owned()
            } else {
                rest.join("; ")
            }
        )
    }
}
