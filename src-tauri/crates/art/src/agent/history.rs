//! Conversation history → standard prompt, keeping tool calls and results linked by id.

use art_types::message::{TOOL_ARGUMENTS, TOOL_CALL_ID, TOOL_NAME, TOOL_SIGNATURE};
use std::collections::HashSet;

use art_types::{
    ConversationMessage, FunctionCall, MessageRole, MessageStatus, Prompt, PromptMessage,
    PromptRole, ToolCallRequest,
};
use serde_json::Value;

fn meta_str<'a>(m: &'a ConversationMessage, key: &str) -> Option<&'a str> {
    m.metadata.get(key).and_then(Value::as_str)
}

/// Convert history. Consecutive `TOOL` messages become one assistant message with
/// their tool calls followed by one tool result each, so every result answers a call.
/// A question that failed without an answer is left out, with whatever its run stored:
/// sent again, it would fail every question after it.
pub fn to_prompt(history: &[ConversationMessage]) -> Prompt {
    let failed: HashSet<&str> = history
        .iter()
        .filter(|m| m.status == MessageStatus::Failed)
        .filter_map(|m| meta_str(m, "traceId"))
        .collect();
    let history: Vec<&ConversationMessage> = history
        .iter()
        .filter(|m| m.status != MessageStatus::Failed)
        .filter(|m| meta_str(m, "traceId").is_none_or(|t| !failed.contains(t)))
        .collect();
    let mut prompt = Prompt::new();
    let mut i = 0;
    while i < history.len() {
        let m = history[i];
        match m.role {
            MessageRole::User => prompt.push(PromptMessage::text(PromptRole::User, &m.content)),
            MessageRole::Ai => {
                if !m.content.is_empty() {
                    prompt.push(PromptMessage::text(PromptRole::Assistant, &m.content));
                }
            }
            MessageRole::System => prompt.push(PromptMessage::text(PromptRole::System, &m.content)),
            MessageRole::Tool => {
                let count = history[i..]
                    .iter()
                    .take_while(|t| t.role == MessageRole::Tool)
                    .count();
                // Only tool messages that say which call they answer can be replayed.
                let run: Vec<&ConversationMessage> = history[i..i + count]
                    .iter()
                    .copied()
                    .filter(|t| {
                        meta_str(t, TOOL_CALL_ID).is_some() && meta_str(t, TOOL_NAME).is_some()
                    })
                    .collect();
                if !run.is_empty() {
                    let mut assistant = PromptMessage::text(PromptRole::Assistant, "");
                    assistant.tool_calls = run
                        .iter()
                        .map(|t| ToolCallRequest {
                            id: meta_str(t, TOOL_CALL_ID).unwrap_or_default().to_owned(),
                            kind: "function".into(),
                            function: FunctionCall {
                                name: meta_str(t, TOOL_NAME).unwrap_or_default().to_owned(),
                                arguments: t
                                    .metadata
                                    .get(TOOL_ARGUMENTS)
                                    .map(Value::to_string)
                                    .unwrap_or_else(|| "{}".into()),
                            },
                            signature: meta_str(t, TOOL_SIGNATURE).map(str::to_owned),
                        })
                        .collect();
                    prompt.push(assistant);
                    for t in run {
                        let mut result = PromptMessage::text(PromptRole::ToolResult, &t.content);
                        result.tool_call_id = meta_str(t, TOOL_CALL_ID).map(str::to_owned);
                        result.name = meta_str(t, TOOL_NAME).map(str::to_owned);
                        prompt.push(result);
                    }
                }
                i += count;
                continue;
            }
        }
        i += 1;
    }
    prompt
}
