//! What an LLM call sent, as its LLM_STREAM_START observation records it: the prompt in
//! the OpenTelemetry GenAI conventions' message form (`role` and `parts`: `text`,
//! `tool_call`, `tool_call_response`), so the OTLP export passes it on unchanged as
//! `gen_ai.input.messages`.
//!
//! A long thread sends its history with every call; recording all of it each time would
//! make the trace grow with the square of the thread. So at most [`CAP`] characters of
//! text are kept per call: the instructions (cut to a quarter of that), then the newest
//! messages, newest first until the rest is spent; the oldest message that only partly
//! fits is cut, and the ones before it are named by one marker message. Images are
//! named by their facts, never their bytes.

use art_types::{ParsedToolCall, PromptMessage, PromptRole};
use serde_json::{Value, json};

/// Characters of message text kept per call.
pub const CAP: usize = 16 * 1024;

/// Role of the marker standing for messages not recorded.
const MARKER_ROLE: &str = "system";

/// The prompt `messages` as recorded: GenAI-convention messages, at most [`CAP`]
/// characters of text.
pub fn messages(prompt: &[PromptMessage]) -> Value {
    let (instructions, rest) = match prompt.split_first() {
        Some((first, rest)) if first.role == PromptRole::System => (Some(first), rest),
        _ => (None, prompt),
    };
    let mut budget = CAP;
    let mut out = Vec::with_capacity(prompt.len().min(64) + 2);
    if let Some(system) = instructions {
        let keep = budget / 4;
        let text = cut(&system.content, keep);
        budget -= text.chars().count().min(budget);
        out.push(message("system", vec![text_part(text)]));
    }
    // Newest first, then turned back.
    let mut newest = Vec::new();
    let mut left_out = (0usize, 0usize);
    for (i, m) in rest.iter().enumerate().rev() {
        let size = text_size(m);
        if size <= budget {
            budget -= size;
            newest.push(convert(m, usize::MAX));
        } else if budget > 0 && newest.len() < rest.len() {
            // The oldest recorded: what fits of it.
            newest.push(convert(m, budget));
            budget = 0;
        } else {
            left_out = (i + 1, rest[..=i].iter().map(text_size).sum());
            break;
        }
    }
    if left_out.0 > 0 {
        let (count, chars) = left_out;
        let s = if count == 1 { "" } else { "s" };
        out.push(message(
            MARKER_ROLE,
            vec![text_part(format!(
                "[art: {count} earlier message{s} ({chars} characters) not recorded: each call \
                 records at most {CAP} characters]"
            ))],
        ));
    }
    out.extend(newest.into_iter().rev());
    Value::Array(out)
}

/// Characters of text in a message (what the cap counts).
fn text_size(m: &PromptMessage) -> usize {
    m.content.chars().count()
        + m.tool_calls
            .iter()
            .map(|c| c.function.arguments.chars().count())
            .sum::<usize>()
}

/// `text` cut to `keep` characters, saying how much was cut.
fn cut(text: &str, keep: usize) -> String {
    match text.char_indices().nth(keep) {
        None => text.to_owned(),
        Some((at, _)) => {
            let more = text[at..].chars().count();
            format!("{}…[art: {more} more characters not recorded]", &text[..at])
        }
    }
}

/// What a call answered (its text and the tools it called), in the conventions' output
/// form — one assistant message with its `finish_reason` — its text cut to [`CAP`]
/// characters.
pub fn answered(text: &str, calls: &[ParsedToolCall], stop: Option<&str>) -> Value {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(text_part(cut(text, CAP)));
    }
    for call in calls {
        parts.push(json!({
            "type": "tool_call",
            "id": call.call_id,
            "name": call.tool_name,
            "arguments": call.arguments,
        }));
    }
    let finish = match stop {
        _ if !calls.is_empty() => "tool_call",
        Some("length" | "max_tokens" | "MAX_TOKENS") => "length",
        _ => "stop",
    };
    json!([{ "role": "assistant", "parts": parts, "finish_reason": finish }])
}

fn message(role: &str, parts: Vec<Value>) -> Value {
    json!({ "role": role, "parts": parts })
}

fn text_part(content: String) -> Value {
    json!({ "type": "text", "content": content })
}

/// One prompt message in the conventions' form, its text cut to `keep` characters.
fn convert(m: &PromptMessage, keep: usize) -> Value {
    let mut parts = Vec::new();
    let role = match m.role {
        PromptRole::System => "system",
        PromptRole::User => "user",
        PromptRole::Assistant | PromptRole::ToolRequest => "assistant",
        PromptRole::ToolResult => "tool",
    };
    if m.role == PromptRole::ToolResult {
        // `result` as the conventions' schema vendored here names it, `response` as
        // their current revision does (Phoenix reads that one: without it a tool
        // message showed its role and no content).
        let result = cut(&m.content, keep);
        parts.push(json!({
            "type": "tool_call_response",
            "id": m.tool_call_id.as_deref().unwrap_or(""),
            "result": result,
            "response": result,
        }));
    } else if !m.content.is_empty() {
        parts.push(text_part(cut(&m.content, keep)));
    }
    for image in &m.images {
        let a = &image.attachment;
        parts.push(text_part(format!(
            "[image {}: {}, {} bytes sent]",
            a.name, image.mime, image.size
        )));
    }
    for call in &m.tool_calls {
        let arguments = serde_json::from_str::<Value>(&call.function.arguments)
            .unwrap_or_else(|_| Value::String(cut(&call.function.arguments, keep)));
        parts.push(json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.function.name,
            "arguments": arguments,
        }));
    }
    message(role, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::{FunctionCall, ToolCallRequest};

    fn text(role: PromptRole, content: &str) -> PromptMessage {
        PromptMessage::text(role, content)
    }

    #[test]
    fn a_prompt_becomes_the_conventions_messages() {
        let mut call = text(PromptRole::Assistant, "");
        call.tool_calls.push(ToolCallRequest {
            id: "c1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "calculator".into(),
                arguments: r#"{"expression":"2+2"}"#.into(),
            },
            signature: None,
        });
        let mut result = text(PromptRole::ToolResult, "4");
        result.tool_call_id = Some("c1".into());
        let sent = messages(&[
            text(PromptRole::System, "Be brief."),
            text(PromptRole::User, "What is 2+2?"),
            call,
            result,
        ]);
        assert_eq!(
            sent,
            json!([
                { "role": "system", "parts": [{ "type": "text", "content": "Be brief." }] },
                { "role": "user", "parts": [{ "type": "text", "content": "What is 2+2?" }] },
                { "role": "assistant", "parts": [{ "type": "tool_call", "id": "c1",
                  "name": "calculator", "arguments": { "expression": "2+2" } }] },
                { "role": "tool", "parts": [{ "type": "tool_call_response", "id": "c1", "result": "4", "response": "4" }] },
            ])
        );
    }

    #[test]
    fn a_long_history_keeps_the_instructions_and_the_newest_within_the_cap() {
        let long = "x".repeat(CAP);
        let mut prompt = vec![text(PromptRole::System, &long)];
        for n in 0..40 {
            prompt.push(text(PromptRole::User, &format!("{n}:{}", "y".repeat(1000))));
        }
        prompt.push(text(PromptRole::User, "the question"));
        let sent = messages(&prompt);
        let all = sent.as_array().unwrap();
        let total: usize = all
            .iter()
            .flat_map(|m| m["parts"].as_array().unwrap())
            .map(|p| p["content"].as_str().unwrap().chars().count())
            .sum();
        // The cap, plus the markers' own words.
        assert!(total <= CAP + 400, "{total}");
        let system = all[0]["parts"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("xxx") && system.ends_with("characters not recorded]"));
        assert!(
            all[1]["parts"][0]["content"]
                .as_str()
                .unwrap()
                .contains("earlier messages")
        );
        assert_eq!(all.last().unwrap()["parts"][0]["content"], "the question");
        // The oldest recorded is the one cut; everything after it is whole.
        let second = all[2]["parts"][0]["content"].as_str().unwrap();
        assert!(second.ends_with("characters not recorded]"), "{second}");
        assert!(all[3..].iter().all(|m| {
            !m["parts"][0]["content"]
                .as_str()
                .unwrap()
                .contains("not recorded")
        }));
    }
}
