//! Observations: the recorded steps of an agent run (ART's Observation System), with the
//! span information needed to export a run as an OpenTelemetry span tree.

use serde::{Deserialize, Serialize};

/// Kind of observation: the ART v0.3 list, and the step agent's STEP, PLAN_UPDATE,
/// SUSPENSION, APPROVAL and PLAN_REVIEW, and an MCP server's question (ELICITATION,
/// ELICITATION_ANSWER).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ObservationType {
    /// The agent's understanding of the user's goal.
    Intent,
    /// A short title for the thread or run.
    Title,
    /// The plan (steps) produced by the planning call.
    Plan,
    /// Thinking text, recorded in coalesced chunks (never one per token).
    Thoughts,
    /// A tool call the plan asked for.
    ToolCall,
    /// A tool ran: arguments, result or error, status, duration.
    ToolExecution,
    /// The synthesis phase started or produced its answer.
    Synthesis,
    /// Something failed.
    Error,
    /// The final answer of the run.
    FinalResponse,
    /// Agent state was saved.
    StateUpdate,
    /// An LLM call started streaming.
    LlmStreamStart,
    /// An LLM call reported metadata (usage, timing, stop reason).
    LlmStreamMetadata,
    /// An LLM call finished.
    LlmStreamEnd,
    /// An LLM call failed.
    LlmStreamError,
    /// A plan step changed status (`record::StepContent`).
    Step,
    /// The plan was changed while it ran (`record::PlanUpdateContent`).
    PlanUpdate,
    /// The run waits for a decision on a tool call, or for the answer to an MCP server's
    /// question during one (`approval::SuspensionContent`).
    Suspension,
    /// A decision on a tool call: the user's, or the thread's policy
    /// (`approval::ApprovalContent`).
    Approval,
    /// The run waits for the user's word on its plan (`approval::PlanReviewContent`).
    PlanReview,
    /// An MCP server asked the user something during a tool call
    /// (`mcp::question::QuestionContent`).
    Elicitation,
    /// What became of a server's question (`mcp::question::AnsweredContent`).
    ElicitationAnswer,
    /// How far a running tool call has got, as its MCP server said
    /// (`mcp::catalog::ToolProgress`; at most a few a second are recorded).
    ToolProgress,
}

impl ObservationType {
    /// Every type, in ART's order.
    pub const ALL: [Self; 22] = [
        Self::Intent,
        Self::Title,
        Self::Plan,
        Self::Thoughts,
        Self::ToolCall,
        Self::ToolExecution,
        Self::Synthesis,
        Self::Error,
        Self::FinalResponse,
        Self::StateUpdate,
        Self::LlmStreamStart,
        Self::LlmStreamMetadata,
        Self::LlmStreamEnd,
        Self::LlmStreamError,
        Self::Step,
        Self::PlanUpdate,
        Self::Suspension,
        Self::Approval,
        Self::PlanReview,
        Self::Elicitation,
        Self::ElicitationAnswer,
        Self::ToolProgress,
    ];

    /// The wire / storage form, e.g. `TOOL_EXECUTION`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Intent => "INTENT",
            Self::Title => "TITLE",
            Self::Plan => "PLAN",
            Self::Thoughts => "THOUGHTS",
            Self::ToolCall => "TOOL_CALL",
            Self::ToolExecution => "TOOL_EXECUTION",
            Self::Synthesis => "SYNTHESIS",
            Self::Error => "ERROR",
            Self::FinalResponse => "FINAL_RESPONSE",
            Self::StateUpdate => "STATE_UPDATE",
            Self::LlmStreamStart => "LLM_STREAM_START",
            Self::LlmStreamMetadata => "LLM_STREAM_METADATA",
            Self::LlmStreamEnd => "LLM_STREAM_END",
            Self::LlmStreamError => "LLM_STREAM_ERROR",
            Self::Step => "STEP",
            Self::PlanUpdate => "PLAN_UPDATE",
            Self::Suspension => "SUSPENSION",
            Self::Approval => "APPROVAL",
            Self::PlanReview => "PLAN_REVIEW",
            Self::Elicitation => "ELICITATION",
            Self::ElicitationAnswer => "ELICITATION_ANSWER",
            Self::ToolProgress => "TOOL_PROGRESS",
        }
    }

    /// Parse the wire / storage form.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// Stage of the Plan-Execute-Synthesize run an observation belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The run as a whole (root span).
    Run,
    /// Planning call and its parsing.
    Planning,
    /// Tool execution.
    Execution,
    /// Synthesis call.
    Synthesis,
    /// Saving messages and state, returning the answer.
    Finalization,
}

/// Where an observation sits in the run's span tree.
///
/// An observation whose `end_ms` is set describes a whole span (a tool execution, an
/// LLM call, a phase); one without is a point event inside span `span_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanInfo {
    /// Stage of the run.
    pub phase: Phase,
    /// The span this observation opens (if `end_ms` is set) or belongs to.
    pub span_id: String,
    /// The enclosing span; `None` for the run's root span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    /// Unix ms when the span (or event) started.
    pub start_ms: i64,
    /// Unix ms when the span ended; `None` for point events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_ms: Option<i64>,
}

/// One recorded step (ART's `Observation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// Unique id.
    pub id: String,
    /// Thread of the run.
    pub thread_id: String,
    /// One id per run (`process` call).
    pub trace_id: String,
    /// Unix ms when it was recorded.
    pub timestamp: i64,
    /// What happened (`PLAN`, `TOOL_EXECUTION`, …); decides the shape of `content`.
    #[serde(rename = "type")]
    pub kind: ObservationType,
    /// One line for people.
    pub title: String,
    /// Data of this kind of step (plan text, tool input and output, error, ...).
    pub content: serde_json::Value,
    /// Extra context (tool name, model, provider, ...).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub metadata: serde_json::Value,
    /// Position in the span tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<SpanInfo>,
}

/// The steps of a `PLAN` observation's content, as a reader wants them: its `plan` array
/// (or the lines of a plan written as text), without blank lines and without the "1." or
/// "2)" a model may have put in front (whoever shows them numbers them).
pub fn plan_steps(content: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let steps: Vec<String> = match content.get("plan") {
        Some(Value::Array(steps)) => steps
            .iter()
            .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_owned))
            .collect(),
        Some(Value::String(text)) => text.lines().map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    steps
        .iter()
        .map(|step| unnumbered(step.trim()))
        .filter(|step| !step.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A step without a leading "1." / "2)".
fn unnumbered(step: &str) -> &str {
    let digits = step.chars().take_while(char::is_ascii_digit).count();
    match step[digits..].strip_prefix(['.', ')']) {
        Some(rest) if digits > 0 => rest.trim_start(),
        _ => step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_steps_lose_the_models_numbers_and_blank_lines() {
        let listed = serde_json::json!({ "plan": ["1. calculate", "2) answer", "3rd place", 7] });
        assert_eq!(
            plan_steps(&listed),
            ["calculate", "answer", "3rd place", "7"]
        );
        let text = serde_json::json!({ "plan": "1. calculate\n\n  2) answer\n" });
        assert_eq!(plan_steps(&text), ["calculate", "answer"]);
        assert!(plan_steps(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn every_type_round_trips_and_matches_its_serde_name() {
        for kind in ObservationType::ALL {
            assert_eq!(ObservationType::parse(kind.as_str()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn observation_wire_shape_uses_type_and_camel_case() {
        let obs = Observation {
            id: "o1".into(),
            thread_id: "t1".into(),
            trace_id: "r1".into(),
            timestamp: 5,
            kind: ObservationType::ToolExecution,
            title: "calculator".into(),
            content: serde_json::json!({"output": 4}),
            metadata: serde_json::Value::Null,
            span: Some(SpanInfo {
                phase: Phase::Execution,
                span_id: "s".into(),
                parent_span_id: Some("p".into()),
                start_ms: 1,
                end_ms: Some(5),
            }),
        };
        let json = serde_json::to_value(&obs).unwrap();
        assert_eq!(json["type"], "TOOL_EXECUTION");
        assert_eq!(json["threadId"], "t1");
        assert_eq!(json["span"]["parentSpanId"], "p");
        assert!(json.get("metadata").is_none());
        assert_eq!(serde_json::from_value::<Observation>(json).unwrap(), obs);
    }
}
