//! The plan checkpoint: a thread can ask to see the plan before any step runs. The run
//! then waits (PLAN_REVIEW) like a call that asks first, under the name `plan`; the
//! user's word is recorded like an approval: run it as planned, run it edited (steps
//! changed, reordered, removed or added — a PLAN_UPDATE says how), or cancel the run.

use std::collections::HashSet;

use art_types::approval::{
    ApprovalContent, ApprovalDecision, Decider, PLAN_REVIEW, PlanReviewContent,
};
use art_types::record::{PlanStep, PlanUpdateContent, StepStatus};
use art_types::{AgentFinalResponse, AgentOptions, ObservationType, ParsedToolCall, Phase};
use serde_json::{Value, json};

use super::calls::stopped;
use super::run::{Run, Stop};
use super::steps::Start;
use super::{PesAgent, Setup};
use crate::clock;
use crate::reasoning::output_parser::{self, fresh_id};

/// The plan as the user edits it: its steps' descriptions, in order.
pub(super) fn plan_arguments(steps: &[PlanStep]) -> Value {
    let steps: Vec<&str> = steps.iter().map(|s| s.description.as_str()).collect();
    json!({ "steps": steps })
}

/// What the user's edit makes of the plan `before`: a step kept (same description) keeps
/// its id and tools; a new one gets a fresh id and may use `tools` (the thread's).
pub(super) fn edited_steps(
    before: &[PlanStep],
    arguments: &Value,
    tools: &[String],
) -> Result<Vec<PlanStep>, String> {
    let Some(listed) = arguments.get("steps") else {
        return Err("give the plan as {\"steps\": [\"first step\", …]}".into());
    };
    let (steps, problems) = output_parser::read_steps(Some(listed));
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    if steps.is_empty() {
        return Err("a plan needs a step; to run none, cancel the run".into());
    }
    let mut kept = HashSet::new();
    let mut out: Vec<PlanStep> = Vec::new();
    for step in steps {
        let same = before
            .iter()
            .find(|b| b.description == step.description && !kept.contains(&b.id));
        let next = match same {
            Some(b) => {
                kept.insert(b.id.clone());
                b.clone()
            }
            None => {
                // Every id the plan had, and those of the steps added so far.
                let added = out.iter().filter(|s| !before.iter().any(|b| b.id == s.id));
                let taken: Vec<PlanStep> = before.iter().chain(added).cloned().collect();
                // A step the user adds may use the thread's tools, and need not.
                PlanStep {
                    id: fresh_id(&taken),
                    tools_optional: step.tools.is_empty(),
                    tools: if step.tools.is_empty() {
                        tools.to_vec()
                    } else {
                        step.tools
                    },
                    ..step
                }
            }
        };
        out.push(PlanStep {
            status: StepStatus::Pending,
            ..next
        });
    }
    Ok(out)
}

impl PesAgent {
    /// The run waits for the user's word on its plan: store it, record PLAN_REVIEW.
    pub(super) async fn hold_plan(
        &self,
        run: &mut Run,
        intent: Option<String>,
        options: AgentOptions,
        calls: Vec<ParsedToolCall>,
    ) -> Result<AgentFinalResponse, Stop> {
        let root = run.root_span.clone();
        let content = PlanReviewContent {
            steps: run.steps.clone(),
        };
        let mut o = run.obs(
            ObservationType::PlanReview,
            json!(content),
            run.span(Phase::Planning, &root, None, clock::now_ms(), false),
        );
        o.title = Some("Waiting for your word on the plan".into());
        self.wait(run, None, calls, intent, options, o).await
    }

    /// Apply the user's word on the plan: where the steps start, or the run's end.
    pub(super) async fn settle_review(
        &self,
        run: &mut Run,
        setup: &Setup,
        calls: Vec<ParsedToolCall>,
        decision: ApprovalDecision,
    ) -> Result<Start, Stop> {
        let mut content = ApprovalContent {
            call_id: PLAN_REVIEW.into(),
            tool_name: PLAN_REVIEW.into(),
            approved: false,
            decided_by: Decider::User,
            proposed: plan_arguments(&run.steps),
            arguments: None,
            always: false,
            reason: None,
        };
        match decision {
            ApprovalDecision::Approve { arguments, .. } => {
                let first = run.steps.first().map(|s| s.id.clone());
                if let Some(arguments) = arguments {
                    let tools = &setup.config.enabled_tools;
                    let steps = edited_steps(&run.steps, &arguments, tools)
                        .map_err(|e| Stop::Agent(super::AgentError::InvalidInput(e)))?;
                    let mut update = PlanUpdateContent::between(&run.steps, steps);
                    update.reason = Some("edited by the user before it ran".into());
                    run.steps.clone_from(&update.steps);
                    let root = run.root_span.clone();
                    let mut o = run.obs(
                        ObservationType::PlanUpdate,
                        json!(update),
                        run.span(Phase::Planning, &root, None, clock::now_ms(), false),
                    );
                    o.title = Some("Plan edited".into());
                    self.record(o).await;
                    content.arguments = Some(arguments);
                }
                content.approved = true;
                self.record_approval(run, None, &content).await;
                // The planner's calls belong to its first step: kept while it comes first.
                let still_first = run.steps.first().map(|s| s.id.clone()) == first;
                Ok(Start::Planned(if still_first { calls } else { Vec::new() }))
            }
            ApprovalDecision::Deny { reason } => {
                content.reason = reason;
                self.record_approval(run, None, &content).await;
                Err(Stop::run(stopped(), Phase::Planning, None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, description: &str, tools: &[&str]) -> PlanStep {
        PlanStep {
            id: id.into(),
            description: description.into(),
            status: StepStatus::Pending,
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            tools_optional: false,
        }
    }

    #[test]
    fn an_edit_keeps_known_steps_reorders_drops_and_adds() {
        let before = [
            step("1", "list", &["ls"]),
            step("2", "read", &["cat"]),
            step("3", "sum", &[]),
        ];
        let tools = ["ls".to_owned(), "cat".to_owned()];
        let args = json!({ "steps": ["read", "check twice", "list"] });
        let after = edited_steps(&before, &args, &tools).unwrap();
        let got: Vec<_> = after
            .iter()
            .map(|s| (s.id.as_str(), s.description.as_str(), s.tools.len()))
            .collect();
        assert_eq!(
            got,
            [("2", "read", 1), ("4", "check twice", 2), ("1", "list", 1)]
        );
        assert!(edited_steps(&before, &json!({ "steps": [] }), &tools).is_err());
        assert!(edited_steps(&before, &json!({ "plan": ["x"] }), &tools).is_err());
        assert_eq!(
            plan_arguments(&before),
            json!({ "steps": ["list", "read", "sum"] })
        );
    }
}
