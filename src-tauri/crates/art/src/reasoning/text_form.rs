//! Tool calls in the text form: for a server that refused native tools (or a thread
//! that asks for text), the calls and results already in a prompt are rewritten as the
//! plain text the text form uses, so no request replays `tool_calls` and `tool`
//! messages (or Anthropic's `tool_use` / `tool_result` blocks) to a server that cannot
//! take them.

use art_types::{PromptMessage, PromptRole};
use serde_json::{Value, json};

/// What a server says when it refuses native tools, in each server's words (lower case):
/// Ollama, OpenAI-compatible servers, llama.cpp's server without `--jinja`, vLLM
/// without `--enable-auto-tool-choice`.
const REFUSALS: &[&str] = &[
    "does not support tools",
    "does not support tool",
    "tools are not supported",
    "tool use is not supported",
    "does not support function calling",
    "function calling is not supported",
    "tools param requires --jinja",
    "requires --enable-auto-tool-choice",
];

/// Whether a provider's error `message` says the model cannot take tools natively.
pub fn refuses_tools(message: &str) -> bool {
    let message = message.to_lowercase();
    REFUSALS.iter().any(|m| message.contains(m))
}

/// `prompt` with every native tool call and result rewritten as text: an assistant
/// message's calls as the `{"toolCalls": […]}` JSON the text form writes, each result
/// as a user message naming its tool and call. Other messages are unchanged.
pub fn calls_as_text(prompt: Vec<PromptMessage>) -> Vec<PromptMessage> {
    prompt
        .into_iter()
        .map(|m| match m.role {
            PromptRole::Assistant | PromptRole::ToolRequest if !m.tool_calls.is_empty() => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = serde_json::from_str::<Value>(&c.function.arguments)
                            .unwrap_or_else(|_| Value::String(c.function.arguments.clone()));
                        json!({ "callId": c.id, "toolName": c.function.name, "arguments": arguments })
                    })
                    .collect();
                let written = json!({ "toolCalls": calls }).to_string();
                let content = match m.content.trim() {
                    "" => written,
                    said => format!("{said}\n{written}"),
                };
                let mut text = PromptMessage::text(PromptRole::Assistant, content);
                text.reasoning = m.reasoning;
                text
            }
            PromptRole::ToolResult => {
                let tool = m.name.as_deref().unwrap_or("a tool");
                let call = m.tool_call_id.as_deref().unwrap_or("?");
                let verdict = if m.is_error { "failed" } else { "returned" };
                PromptMessage::text(
                    PromptRole::User,
                    format!("Result of your tool call {call}: {tool} {verdict}:\n{}", m.content),
                )
            }
            _ => m,
        })
        .collect()
}

/// Whether `prompt` holds native tool calls or results.
pub fn has_native_calls(prompt: &[PromptMessage]) -> bool {
    prompt
        .iter()
        .any(|m| !m.tool_calls.is_empty() || m.role == PromptRole::ToolResult)
}

#[cfg(test)]
mod tests {
    use art_types::{FunctionCall, ToolCallRequest};

    use super::*;

    #[test]
    fn refusals_are_recognised_in_each_servers_words() {
        assert!(refuses_tools(
            "registry.ollama.ai/library/gemma:2b does not support tools"
        ));
        assert!(refuses_tools(
            "Function calling is not supported by this model"
        ));
        assert!(refuses_tools("HTTP 500: tools param requires --jinja flag"));
        assert!(refuses_tools(
            "HTTP 400: \"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        ));
        assert!(!refuses_tools("model not found"));
    }

    #[test]
    fn calls_and_results_become_text_and_the_rest_stays() {
        let mut asked = PromptMessage::text(PromptRole::Assistant, "Let me add.");
        asked.tool_calls = vec![ToolCallRequest {
            id: "call_1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "calculator".into(),
                arguments: r#"{"expression":"2+2"}"#.into(),
            },
            signature: None,
        }];
        let mut result = PromptMessage::text(PromptRole::ToolResult, "4");
        result.tool_call_id = Some("call_1".into());
        result.name = Some("calculator".into());
        let mut failed = PromptMessage::text(PromptRole::ToolResult, "Error: no");
        failed.tool_call_id = Some("call_2".into());
        failed.name = Some("calculator".into());
        failed.is_error = true;
        let question = PromptMessage::text(PromptRole::User, "2+2?");
        let prompt = vec![question.clone(), asked, result, failed];
        assert!(has_native_calls(&prompt));
        let text = calls_as_text(prompt);
        assert!(!has_native_calls(&text));
        assert_eq!(text[0], question);
        assert_eq!(text[1].role, PromptRole::Assistant);
        assert_eq!(
            text[1].content,
            "Let me add.\n{\"toolCalls\":[{\"arguments\":{\"expression\":\"2+2\"},\"callId\":\"call_1\",\"toolName\":\"calculator\"}]}"
        );
        assert_eq!(text[2].role, PromptRole::User);
        assert_eq!(
            text[2].content,
            "Result of your tool call call_1: calculator returned:\n4"
        );
        assert!(text[3].content.contains("calculator failed:\nError: no"));
    }
}
