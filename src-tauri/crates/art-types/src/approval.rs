//! Asking before a tool runs: each tool's policy in a thread (auto, ask, deny), the
//! decision on a call that waits, and what a run records of both — the audit trail.
//!
//! A built-in tool runs unless the thread says otherwise; an MCP tool follows its
//! server's default (ask, unless the user changed it); a thread's own choice for a tool
//! comes first. A call whose policy is `ask` suspends the run before it runs: the run
//! ends with status `suspended` (a SUSPENSION observation names the call), and a
//! decision resumes it, in this process or after a restart.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happens before a tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPolicy {
    /// It runs.
    Auto,
    /// The run waits for the user's decision.
    Ask,
    /// It never runs; the model is told so.
    Deny,
}

impl ToolPolicy {
    /// Every policy, in the order forms list them.
    pub const ALL: [Self; 3] = [Self::Auto, Self::Ask, Self::Deny];

    /// Its wire name (`auto`, `ask`, `deny`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }

    /// The policy of this wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// The user's decision on a call that waits for approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run it.
    Approve {
        /// The arguments to run it with, when the user edited them (checked against the
        /// tool's schema first).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
        /// Let this tool run without asking in this thread from now on.
        #[serde(default)]
        always: bool,
    },
    /// Do not run it.
    Deny {
        /// Why, for the model: it reads this as the tool's result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// The call id and tool name a plan review waits under: the plan checkpoint is decided
/// like a call (approve, with the steps edited; deny, to cancel the run), and recorded
/// like one (APPROVAL).
pub const PLAN_REVIEW: &str = "plan";

/// Content of a `PLAN_REVIEW` observation: the run waits for the user's word on its plan
/// before any step runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReviewContent {
    /// The steps as planned.
    pub steps: Vec<crate::record::PlanStep>,
}

impl ApprovalDecision {
    /// Run it as proposed, this once.
    pub fn approve() -> Self {
        Self::Approve {
            arguments: None,
            always: false,
        }
    }
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The user, when asked.
    User,
    /// The thread's policy for the tool (`deny`).
    Policy,
}

/// Content of a `SUSPENSION` observation: the run waits for a decision on a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuspensionContent {
    /// The call that waits.
    pub call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// The arguments the model proposed.
    pub arguments: Value,
    /// The JSON Schema the arguments must match (an edit is checked against it).
    #[serde(default)]
    pub input_schema: Value,
    /// The MCP server the tool belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The plan step it is made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// The MCP server question (its id) the call waits on, when it waits for an answer
    /// rather than a decision: the run is kept while the question waits, so that it goes
    /// on with the answer even after the process that asked ended. Its
    /// `ELICITATION_ANSWER` ends the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_id: Option<String>,
}

/// Content of an `APPROVAL` observation: a decision on a call, and what ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalContent {
    /// The call decided on.
    pub call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// Whether it may run.
    pub approved: bool,
    /// Who decided.
    pub decided_by: Decider,
    /// The arguments the model proposed.
    pub proposed: Value,
    /// The arguments it runs with (approved calls; differ from `proposed` when edited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The user chose to let the tool run without asking in this thread from now on.
    #[serde(default)]
    pub always: bool,
    /// Why it was denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalContent {
    /// Whether the call runs with other arguments than the model proposed.
    pub fn edited(&self) -> bool {
        self.arguments.as_ref().is_some_and(|a| *a != self.proposed)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn decisions_have_one_wire_shape() {
        let approve: ApprovalDecision =
            serde_json::from_value(json!({ "decision": "approve" })).unwrap();
        assert_eq!(
            approve,
            ApprovalDecision::Approve {
                arguments: None,
                always: false
            }
        );
        let deny = ApprovalDecision::Deny {
            reason: Some("not now".into()),
        };
        assert_eq!(
            serde_json::to_value(&deny).unwrap(),
            json!({ "decision": "deny", "reason": "not now" })
        );
        for policy in ToolPolicy::ALL {
            assert_eq!(ToolPolicy::parse(policy.as_str()), Some(policy));
            assert_eq!(
                serde_json::to_value(policy).unwrap(),
                json!(policy.as_str())
            );
        }
    }
}
