//! A server's question on a tool card: what the run records when an MCP server asks the
//! user something in the middle of a tool call ([`QuestionContent`], observation
//! `Elicitation`), and what became of it ([`AnsweredContent`], observation
//! `ElicitationAnswer`). The app shows the question as a form on the call's card while
//! the call waits (its time limit stands still meanwhile); `art run` asks it on the
//! terminal. Both are in the trace and its exports like an approval.

use serde::{Deserialize, Serialize};

use super::elicit::{ElicitAnswer, ElicitQuestion};

/// A question asked during a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionContent {
    /// Its id (what an answer names).
    pub question_id: String,
    /// The tool call it came in.
    pub call_id: String,
    /// That call's tool.
    pub tool_name: String,
    /// What the server asks.
    pub question: ElicitQuestion,
}

/// What became of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnsweredContent {
    /// The question.
    pub question_id: String,
    /// The tool call it came in.
    pub call_id: String,
    /// The answer, or why there was none.
    pub outcome: QuestionOutcome,
}

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum QuestionOutcome {
    /// The user answered (accept with values, decline, or cancel).
    Answered {
        /// The answer sent to the server.
        answer: ElicitAnswer,
    },
    /// The call ended before anyone answered (the run stopped, the server gave up or
    /// went away); the server was told `cancel`.
    Ended {
        /// Why, in plain words.
        why: String,
    },
}

impl std::fmt::Display for QuestionOutcome {
    /// What the tool card (and the Markdown export) says of it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Answered {
                answer: ElicitAnswer::Accept(values),
            } if values.is_empty() => f.write_str("You accepted."),
            Self::Answered {
                answer: ElicitAnswer::Accept(values),
            } => {
                let said: Vec<String> = values
                    .iter()
                    .map(|(k, v)| match v {
                        serde_json::Value::String(s) => format!("{k}: {s}"),
                        other => format!("{k}: {other}"),
                    })
                    .collect();
                write!(f, "You answered — {}", said.join(", "))
            }
            Self::Answered {
                answer: ElicitAnswer::Decline,
            } => f.write_str("You declined to answer."),
            Self::Answered {
                answer: ElicitAnswer::Cancel,
            } => f.write_str("You dismissed the question."),
            Self::Ended { why } => write!(f, "Not answered: {why}."),
        }
    }
}

/// A question on a tool card, with its outcome once there is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionCard {
    /// The question.
    pub asked: QuestionContent,
    /// What became of it; `None` while it waits (or, in a run that is over, never
    /// answered: the app closed while it waited).
    pub outcome: Option<QuestionOutcome>,
}

/// Answer the question an MCP server asked during a thread's tool call; the call goes on
/// with it (a page to open is opened in the browser when accepted). Fails with `NOT_FOUND` when the question no longer waits (answered
/// elsewhere, or its call ended).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerQuestion {
    /// The question ([`QuestionContent::question_id`]).
    pub question_id: String,
    /// The answer; values are checked against the question's fields before they go.
    pub answer: ElicitAnswer,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_says_what_was_answered() {
        let mut values = serde_json::Map::new();
        values.insert("name".into(), "Ada".into());
        values.insert("agree".into(), true.into());
        let note = QuestionOutcome::Answered {
            answer: ElicitAnswer::Accept(values),
        }
        .to_string();
        assert_eq!(note, "You answered — agree: true, name: Ada");
        let ended = QuestionOutcome::Ended {
            why: "the call ended".into(),
        };
        assert_eq!(ended.to_string(), "Not answered: the call ended.");
    }
}
