//! A replay in recorded mode: the tool calls of the run replayed, with their results,
//! answer the replay's calls that have the same tool and arguments — nothing runs. A
//! call the record does not have is answered "not recorded" or runs after the user
//! approves it, as the replay says.

use art_types::message::RECORDED_FROM;
use art_types::record::ToolExecutionContent;
use art_types::{ObservationType, ParsedToolCall, Replay, ReplayMode, ToolResult, Unmatched};
use serde_json::{Value, json};

use crate::observation::{ObservationManager, ObservationQuery};
use crate::tools::ToolError;

/// The recorded calls of the run replayed.
pub(super) struct Recorded {
    /// The run replayed.
    of: String,
    /// What a call without a recorded match gets.
    pub(super) unmatched: Unmatched,
    /// Each execution as recorded, oldest first, with its result's metadata (error
    /// code, MCP server).
    calls: Vec<(ToolExecutionContent, Value)>,
}

/// What the record says of a call.
pub(super) enum Answer {
    /// The recorded result (the call's own id).
    Result(ToolResult),
    /// Nothing recorded: refused with this error.
    NotRecorded(ToolError),
    /// Nothing recorded: it runs once the user approves it.
    Ask,
}

impl Recorded {
    /// The record `replay` answers from (none in live mode), read from `observations`
    /// of thread `thread_id`.
    pub(super) async fn load(
        observations: &ObservationManager,
        thread_id: &str,
        replay: &Replay,
    ) -> Result<Option<Self>, crate::storage::StorageError> {
        if replay.mode == ReplayMode::Live {
            return Ok(None);
        }
        let query = ObservationQuery {
            thread_id: Some(thread_id.to_owned()),
            trace_ids: vec![replay.of.clone()],
            types: vec![ObservationType::ToolExecution],
            ..ObservationQuery::default()
        };
        let calls = observations
            .query(&query)
            .await?
            .into_iter()
            .filter_map(|o| Some((serde_json::from_value(o.content).ok()?, o.metadata)))
            .collect();
        Ok(Some(Self {
            of: replay.of.clone(),
            unmatched: replay.unmatched,
            calls,
        }))
    }

    /// The answer to `call`: the first recorded execution of the same tool with equal
    /// arguments (key order aside), else what the replay says for unmatched calls.
    pub(super) fn answer(&self, call: &ParsedToolCall) -> Answer {
        let found = self
            .calls
            .iter()
            .find(|(c, _)| c.tool_name == call.tool_name && c.arguments == call.arguments);
        match (found, self.unmatched) {
            (Some((recorded, metadata)), _) => {
                // As recorded (its error code, its MCP server), answered at once.
                let mut metadata = match metadata {
                    Value::Object(_) => metadata.clone(),
                    _ => json!({}),
                };
                metadata[RECORDED_FROM] = json!(self.of);
                metadata[ToolResult::DURATION_MS] = json!(0);
                Answer::Result(ToolResult {
                    call_id: call.call_id.clone(),
                    tool_name: call.tool_name.clone(),
                    status: recorded.status,
                    output: recorded.output.clone(),
                    error: recorded.error.clone(),
                    metadata,
                })
            }
            (None, Unmatched::Ask) => Answer::Ask,
            (None, Unmatched::NotRecorded) => Answer::NotRecorded(ToolError::new(
                Unmatched::NOT_RECORDED,
                format!(
                    "not recorded: run {} made no `{}` call with these arguments, and this \
                     replay runs no tools",
                    self.of, call.tool_name
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::ToolStatus;

    fn recorded(unmatched: Unmatched) -> Recorded {
        let call = |expression: &str, status, output: Value, code: Option<&str>| {
            let content = ToolExecutionContent {
                call_id: "old".into(),
                tool_name: "calculator".into(),
                arguments: json!({ "expression": expression, "precision": 2 }),
                status,
                output,
                error: (status == ToolStatus::Error).then(|| "bad expression".into()),
                result: None,
                step_id: None,
            };
            let metadata = match code {
                Some(code) => json!({ ToolResult::ERROR_CODE: code, ToolResult::DURATION_MS: 9 }),
                None => json!({ ToolResult::DURATION_MS: 9 }),
            };
            (content, metadata)
        };
        Recorded {
            of: "r0".into(),
            unmatched,
            calls: vec![
                call(
                    "19 + 23",
                    ToolStatus::Success,
                    json!({ "result": 42 }),
                    None,
                ),
                call("1 / 0", ToolStatus::Error, Value::Null, Some("TOOL_FAILED")),
            ],
        }
    }

    fn asked(arguments: Value) -> ParsedToolCall {
        ParsedToolCall {
            call_id: "new".into(),
            tool_name: "calculator".into(),
            arguments,
            signature: None,
        }
    }

    #[test]
    fn a_call_gets_the_recorded_result_of_the_same_tool_and_arguments() {
        let record = recorded(Unmatched::NotRecorded);
        // Keys in another order are the same arguments.
        let Answer::Result(ok) =
            record.answer(&asked(json!({ "precision": 2, "expression": "19 + 23" })))
        else {
            panic!("recorded")
        };
        assert_eq!(
            (ok.call_id.as_str(), ok.status),
            ("new", ToolStatus::Success)
        );
        assert_eq!(ok.output, json!({ "result": 42 }));
        assert_eq!(ok.metadata[RECORDED_FROM], "r0");
        assert_eq!(ok.metadata[ToolResult::DURATION_MS], 0, "nothing ran");
        // A failure recorded is given as it was, with its code.
        let Answer::Result(failed) =
            record.answer(&asked(json!({ "expression": "1 / 0", "precision": 2 })))
        else {
            panic!("recorded")
        };
        assert_eq!(failed.status, ToolStatus::Error);
        assert_eq!(failed.error.as_deref(), Some("bad expression"));
        assert_eq!(failed.metadata["errorCode"], "TOOL_FAILED");
    }

    #[test]
    fn a_call_the_record_lacks_is_refused_or_asked_as_the_replay_says() {
        let other = asked(json!({ "expression": "19 + 23", "precision": 3 }));
        match recorded(Unmatched::NotRecorded).answer(&other) {
            Answer::NotRecorded(error) => {
                assert_eq!(error.code, Unmatched::NOT_RECORDED);
                assert!(error.message.contains("not recorded"), "{}", error.message);
            }
            _ => panic!("not recorded"),
        }
        assert!(matches!(
            recorded(Unmatched::Ask).answer(&other),
            Answer::Ask
        ));
    }
}
