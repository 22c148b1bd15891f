//! Conversation messages: what the user and the agent said in a thread.

use serde::{Deserialize, Serialize};

use crate::{Attachment, RunError};

/// Who a message is from (ART's `MessageRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageRole {
    /// The person using the app.
    User,
    /// The agent's answer.
    Ai,
    /// A system note kept in the history.
    System,
    /// A tool result kept in the history (with its call id and tool name).
    Tool,
}

impl MessageRole {
    /// The wire / storage form, e.g. `AI`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "USER",
            Self::Ai => "AI",
            Self::System => "SYSTEM",
            Self::Tool => "TOOL",
        }
    }

    /// Parse the wire / storage form.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::User, Self::Ai, Self::System, Self::Tool]
            .into_iter()
            .find(|role| role.as_str() == text)
    }
}

/// Whether a message is finished. Answers are checkpointed while they stream, so a
/// crash or a cancel leaves an `Interrupted` message rather than nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// Complete.
    #[default]
    Complete,
    /// Still being streamed (only seen while a run is live).
    Streaming,
    /// The run stopped (cancelled, failed, or the app died) before the answer ended.
    Interrupted,
    /// A question whose run failed before any answer (the provider refused it, say):
    /// kept and shown with its error (`metadata.error`), left out of later prompts so
    /// it cannot fail every question after it.
    Failed,
}

impl MessageStatus {
    /// The storage form, e.g. `interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Streaming => "streaming",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
        }
    }

    /// Parse the storage form.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Complete,
            Self::Streaming,
            Self::Interrupted,
            Self::Failed,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// Metadata key of a `TOOL` message: the call id linking it to its request.
pub const TOOL_CALL_ID: &str = "toolCallId";
/// Metadata key of a `TOOL` message: the tool's name.
pub const TOOL_NAME: &str = "toolName";
/// Metadata key of a `TOOL` message: the call's arguments.
pub const TOOL_ARGUMENTS: &str = "arguments";
/// Metadata key of a `TOOL` message: the provider's signature of the call (Gemini),
/// replayed with it.
pub const TOOL_SIGNATURE: &str = "signature";
/// Metadata key of every message a run stores: the run's trace id.
pub const TRACE_ID: &str = "traceId";
/// Metadata key of a question whose run failed before any answer: the run's error.
pub const FAILURE: &str = "error";
/// Metadata key of a replay's question: the run it replays (its trace id).
pub const REPLAY_OF: &str = "replayOf";
/// Metadata key of a comparison's questions (one per column): the comparison's id.
pub const COMPARISON: &str = "comparison";
/// Metadata key of a tool result answered from a recorded run (a replay's, in recorded
/// mode): that run's trace id.
pub const RECORDED_FROM: &str = "recordedFrom";

/// One message of a thread (ART's `ConversationMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationMessage {
    /// Unique id.
    pub message_id: String,
    /// The thread it belongs to.
    pub thread_id: String,
    /// Who said it.
    pub role: MessageRole,
    /// The text.
    pub content: String,
    /// Unix time in milliseconds.
    pub timestamp: i64,
    /// Finished, streaming or interrupted.
    #[serde(default)]
    pub status: MessageStatus,
    /// The message before this one on its branch; `None` for a thread's first message
    /// (or one of its alternatives). Edit & resend and regenerate add a message with the
    /// same parent as the one they replace: both stay, as alternatives ([`BranchPoint`]).
    /// Left empty by a writer, the thread's storage sets it to the end of the active
    /// path (`ThreadSummary::head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Extra facts: trace id of the run, tool call id and tool name for `TOOL`
    /// messages, the model that answered, token usage.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub metadata: serde_json::Value,
    /// Files the user gave with a question (their bytes are in the attachment store,
    /// named by [`Attachment::id`]); empty on every other message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

impl ConversationMessage {
    /// The run that stored this message (its trace id), if a run did.
    pub fn trace_id(&self) -> Option<&str> {
        self.metadata
            .get(TRACE_ID)
            .and_then(serde_json::Value::as_str)
    }

    /// The run this question's run replays, if it is a replay.
    pub fn replay_of(&self) -> Option<&str> {
        self.metadata
            .get(REPLAY_OF)
            .and_then(serde_json::Value::as_str)
    }

    /// The comparison this question is a column of (its id), if any.
    pub fn comparison(&self) -> Option<&str> {
        self.metadata
            .get(COMPARISON)
            .and_then(serde_json::Value::as_str)
    }

    /// Why this question got no answer (status [`MessageStatus::Failed`]).
    pub fn failure(&self) -> Option<RunError> {
        self.metadata
            .get(FAILURE)
            .and_then(|e| RunError::deserialize(e).ok())
    }

    /// Mark this question as failed without an answer, keeping `error` with it.
    pub fn mark_failed(&mut self, error: &RunError) {
        self.status = MessageStatus::Failed;
        if !self.metadata.is_object() {
            self.metadata = serde_json::Value::Object(Default::default());
        }
        if let (Some(metadata), Ok(error)) =
            (self.metadata.as_object_mut(), serde_json::to_value(error))
        {
            metadata.insert(FAILURE.into(), error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FailureCode;

    #[test]
    fn a_failed_question_keeps_its_run_and_error() {
        let mut question = ConversationMessage {
            message_id: "m".into(),
            thread_id: "t".into(),
            role: MessageRole::User,
            content: "q".into(),
            timestamp: 0,
            status: MessageStatus::Complete,
            metadata: serde_json::json!({ "traceId": "r1" }),
            parent_id: None,
            attachments: Vec::new(),
        };
        assert_eq!(question.trace_id(), Some("r1"));
        assert_eq!(question.failure(), None);
        let error = RunError {
            code: FailureCode::RateLimited,
            message: "slow down".into(),
        };
        question.mark_failed(&error);
        assert_eq!(question.status, MessageStatus::Failed);
        assert_eq!(question.failure(), Some(error));
        assert_eq!(question.metadata["error"]["code"], "RATE_LIMITED");
        assert_eq!(question.trace_id(), Some("r1"));
    }

    #[test]
    fn roles_and_statuses_round_trip_through_their_text_forms() {
        for role in [
            MessageRole::User,
            MessageRole::Ai,
            MessageRole::System,
            MessageRole::Tool,
        ] {
            assert_eq!(MessageRole::parse(role.as_str()), Some(role));
            assert_eq!(serde_json::to_value(role).unwrap(), role.as_str());
        }
        for status in [
            MessageStatus::Complete,
            MessageStatus::Streaming,
            MessageStatus::Interrupted,
            MessageStatus::Failed,
        ] {
            assert_eq!(MessageStatus::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!(MessageRole::parse("ai"), None);
    }
}

/// Where a thread's history branches: the messages that follow the same message (or
/// start the thread), oldest first. Only places with two or more alternatives are
/// branch points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchPoint {
    /// The message they all follow; `None` when they start the thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The first message of each branch, oldest first.
    pub alternatives: Vec<String>,
}

impl BranchPoint {
    /// Where `message_id` is among the alternatives: `(index, count)`.
    pub fn position(&self, message_id: &str) -> Option<(usize, usize)> {
        let index = self.alternatives.iter().position(|m| m == message_id)?;
        Some((index, self.alternatives.len()))
    }
}
