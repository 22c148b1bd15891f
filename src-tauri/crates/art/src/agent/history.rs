//! Conversation history → standard prompt, keeping tool calls and results linked by id.

use art_types::message::{TOOL_ARGUMENTS, TOOL_CALL_ID, TOOL_NAME, TOOL_SIGNATURE};
use std::collections::HashSet;

use art_types::{
    ConversationMessage, FunctionCall, MessageRole, MessageStatus, Prompt, PromptMessage,
    PromptRole, ToolCallRequest, ToolStatus,
};
use serde::Deserialize;

use super::attached::Attached;
use serde_json::Value;

/// Tokens a text is estimated to take: three bytes each, on the safe side of what
/// tokenizers give for English (about four) and code or other scripts (fewer).
pub fn estimated_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3)
}

/// A message's estimated share of a prompt (its text, its tool call, a little framing).
fn message_tokens(m: &ConversationMessage) -> u64 {
    let arguments = m
        .metadata
        .get(TOOL_ARGUMENTS)
        .map_or(0, |a| a.to_string().len());
    let attached: u64 = m
        .attachments
        .iter()
        .map(art_types::Attachment::tokens)
        .sum();
    estimated_tokens(&m.content) + (arguments as u64).div_ceil(3) + attached + 8
}

/// Leave out the oldest turns of `history` (a question with what answered it, whole)
/// until what is left is estimated to fit in `budget` tokens; the newest question always
/// stays. Returns how many messages were left out.
pub fn fit(history: &mut Vec<ConversationMessage>, budget: u64) -> usize {
    let newest_question = history
        .iter()
        .rposition(|m| m.role == MessageRole::User)
        .unwrap_or(0);
    let mut total: u64 = history.iter().map(message_tokens).sum();
    let mut cut = 0;
    while total > budget && cut < newest_question {
        // The next turn starts at the next question after `cut`.
        let next = history[cut + 1..]
            .iter()
            .position(|m| m.role == MessageRole::User)
            .map_or(newest_question, |p| cut + 1 + p)
            .min(newest_question);
        total -= history[cut..next].iter().map(message_tokens).sum::<u64>();
        cut = next;
    }
    history.drain(..cut);
    cut
}

fn meta_str<'a>(m: &'a ConversationMessage, key: &str) -> Option<&'a str> {
    m.metadata.get(key).and_then(Value::as_str)
}

/// Convert history. Consecutive `TOOL` messages become one assistant message with
/// their tool calls followed by one tool result each, so every result answers a call.
/// A question that failed without an answer is left out, with whatever its run stored:
/// sent again, it would fail every question after it.
/// A question's documents and images come from `attached`.
pub fn to_prompt(history: &[ConversationMessage], attached: &Attached) -> Prompt {
    let failed: HashSet<&str> = history
        .iter()
        .filter(|m| m.status == MessageStatus::Failed)
        .filter_map(ConversationMessage::trace_id)
        .collect();
    let history: Vec<&ConversationMessage> = history
        .iter()
        .filter(|m| m.status != MessageStatus::Failed)
        .filter(|m| m.trace_id().is_none_or(|t| !failed.contains(t)))
        .collect();
    let mut prompt = Prompt::new();
    // Call ids go to providers that require them unique in a request (Anthropic): ids
    // repeated across runs (a model numbering its calls `t1` every time) are renamed.
    let mut seen: HashSet<String> = HashSet::new();
    let mut i = 0;
    while i < history.len() {
        let m = history[i];
        match m.role {
            MessageRole::User => prompt.push(attached.user_message(m)),
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
                    let ids: Vec<String> = run
                        .iter()
                        .map(|t| {
                            unique_id(meta_str(t, TOOL_CALL_ID).unwrap_or_default(), &mut seen)
                        })
                        .collect();
                    let mut assistant = PromptMessage::text(PromptRole::Assistant, "");
                    assistant.tool_calls = run
                        .iter()
                        .zip(&ids)
                        .map(|(t, id)| ToolCallRequest {
                            id: id.clone(),
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
                    for (t, id) in run.iter().zip(ids) {
                        let mut result = PromptMessage::text(PromptRole::ToolResult, &t.content);
                        result.tool_call_id = Some(id);
                        result.name = meta_str(t, TOOL_NAME).map(str::to_owned);
                        result.is_error = t
                            .metadata
                            .get("status")
                            .and_then(|s| ToolStatus::deserialize(s).ok())
                            == Some(ToolStatus::Error);
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

/// `id`, or a variant of it (`id_2`, …) when `seen` has it already; recorded as seen.
fn unique_id(id: &str, seen: &mut HashSet<String>) -> String {
    let id = match seen.contains(id) {
        false => id.to_owned(),
        true => (2..)
            .map(|n| format!("{id}_{n}"))
            .find(|candidate| !seen.contains(candidate))
            .unwrap_or_default(),
    };
    seen.insert(id.clone());
    id
}

/// The tool call ids the history's prompt holds (as [`to_prompt`] writes them): a new
/// run gives its calls other ones, so a request never holds one id twice.
pub fn call_ids(history: &[ConversationMessage]) -> impl Iterator<Item = String> {
    to_prompt(history, &Attached::default())
        .into_iter()
        .flat_map(|m| m.tool_calls.into_iter().map(|c| c.id))
}

#[cfg(test)]
mod tests {
    use art_types::MessageStatus;
    use serde_json::json;

    use super::*;

    fn message(role: MessageRole, content: &str) -> ConversationMessage {
        ConversationMessage {
            message_id: content.into(),
            thread_id: "t".into(),
            role,
            content: content.into(),
            timestamp: 0,
            status: MessageStatus::Complete,
            metadata: json!({}),
            parent_id: None,
            attachments: Vec::new(),
        }
    }

    /// Question, a tool result, answer; then again with longer texts; then the question.
    fn thread() -> Vec<ConversationMessage> {
        let long = "x".repeat(3_000);
        vec![
            message(MessageRole::User, "q1"),
            message(MessageRole::Tool, "t1"),
            message(MessageRole::Ai, &format!("a1 {long}")),
            message(MessageRole::User, &format!("q2 {long}")),
            message(MessageRole::Ai, "a2"),
            message(MessageRole::User, "q3"),
        ]
    }

    fn contents(history: &[ConversationMessage]) -> Vec<&str> {
        history.iter().map(|m| &m.content[..2]).collect()
    }

    #[test]
    fn the_oldest_whole_turns_go_until_the_rest_fits() {
        let mut all = thread();
        assert_eq!(fit(&mut all, 100_000), 0, "everything fits");
        assert_eq!(all.len(), 6);

        let mut some = thread();
        assert_eq!(
            fit(&mut some, 1_500),
            3,
            "the first turn, with its tool result"
        );
        assert_eq!(contents(&some), ["q2", "a2", "q3"]);

        let mut none = thread();
        assert_eq!(fit(&mut none, 0), 5, "the newest question always stays");
        assert_eq!(contents(&none), ["q3"]);
    }

    #[test]
    fn estimates_err_on_the_side_of_more_tokens() {
        assert_eq!(estimated_tokens(""), 0);
        assert_eq!(estimated_tokens("abcd"), 2);
        assert_eq!(estimated_tokens(&"word ".repeat(300)), 500);
    }
}
