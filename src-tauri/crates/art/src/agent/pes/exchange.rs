//! The run's tool exchange as later calls read it: the calls and their results
//! (natively, or as text for models that write their calls), the todo list with what
//! each step produced, and the calls a reply asks for.

use art_types::{
    FailureCode, FunctionCall, ParsedToolCall, PromptMessage, PromptRole, StreamError,
    ToolCallRequest, ToolCalling, ToolResult, ToolStatus,
};
use serde_json::{Value, json};

use super::super::streaming::StageResult;
use super::PesAgent;
use super::calls::output_text;
use super::run::Run;
use crate::reasoning::output_parser::parse_calls_in;
use crate::reasoning::text_form;

/// Whether a provider refused the call because the model cannot take tools natively
/// (the adapters' code for it, or a stream error saying so in the server's words).
pub(super) fn refuses_tools(error: &StreamError) -> bool {
    error.code == FailureCode::ToolsUnsupported || text_form::refuses_tools(&error.message)
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The todo list as the model reads it: each step with its status and what it produced
/// (`max` characters of each output at most).
pub(super) fn plan_text(run: &Run, max: usize) -> String {
    if run.steps.is_empty() {
        return "(no steps: answer directly)".into();
    }
    run.steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut line = format!("{}. [{}] {}", i + 1, s.status.label(), s.description);
            if let Some(outcome) = run.outcomes.get(&s.id) {
                line.push_str(" — ");
                line.push_str(&clip(outcome, max));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool results as one text (the step output of calls the planner wrote, and the text
/// form of tool calling).
pub(super) fn results_text(results: &[ToolResult]) -> String {
    if results.is_empty() {
        return "(no tools were used)".into();
    }
    results
        .iter()
        .map(|r| match r.status {
            ToolStatus::Success => format!(
                "- {} ({}): {}",
                r.tool_name,
                r.call_id,
                output_text(&r.output)
            ),
            ToolStatus::Error => format!(
                "- {} ({}) FAILED: {}",
                r.tool_name,
                r.call_id,
                r.error.as_deref().unwrap_or("")
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn request(call: &ParsedToolCall) -> ToolCallRequest {
    ToolCallRequest {
        id: call.call_id.clone(),
        kind: "function".into(),
        function: FunctionCall {
            name: call.tool_name.clone(),
            arguments: call.arguments.to_string(),
        },
        signature: call.signature.clone(),
    }
}

impl PesAgent {
    /// The calls and their results, as later calls of the run read them: natively an
    /// assistant message with the calls and one result each; in text, what the model
    /// wrote and a message with the results.
    pub(super) fn exchange_results(
        &self,
        run: &mut Run,
        calls: &[ParsedToolCall],
        said: &str,
        results: &[ToolResult],
    ) {
        if run.tool_calling == ToolCalling::Native {
            let mut assistant = PromptMessage::text(PromptRole::Assistant, said);
            assistant.tool_calls = calls.iter().map(request).collect();
            run.exchange.push(assistant);
            for r in results {
                let content = match r.status {
                    ToolStatus::Success => output_text(&r.output),
                    ToolStatus::Error => {
                        format!("Error: {}", r.error.as_deref().unwrap_or("the tool failed"))
                    }
                };
                let mut message = PromptMessage::text(PromptRole::ToolResult, content);
                message.is_error = r.status == ToolStatus::Error;
                message.tool_call_id = Some(r.call_id.clone());
                message.name = Some(r.tool_name.clone());
                run.exchange.push(message);
            }
        } else {
            let written = if said.trim().is_empty() {
                json!({ "toolCalls": calls }).to_string()
            } else {
                said.to_owned()
            };
            run.exchange
                .push(PromptMessage::text(PromptRole::Assistant, written));
            run.exchange.push(PromptMessage::text(
                PromptRole::User,
                format!("Results of your tool calls:\n{}", results_text(results)),
            ));
        }
    }

    /// One call answered by the agent itself (`update_plan`).
    pub(super) fn exchange_one(
        &self,
        run: &mut Run,
        call: &ParsedToolCall,
        said: &str,
        answer: &str,
    ) {
        let result = ToolResult {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            status: ToolStatus::Success,
            output: Value::String(answer.to_owned()),
            error: None,
            metadata: Value::Null,
        };
        self.exchange_results(run, std::slice::from_ref(call), said, &[result]);
    }
}

/// The calls a reply asks for: native ones, else those written as JSON in its text
/// (with the problem when they were written wrongly).
pub(super) fn asked_calls(reply: &StageResult) -> (Vec<ParsedToolCall>, Option<String>) {
    if !reply.tool_calls.is_empty() {
        return (reply.tool_calls.clone(), None);
    }
    match parse_calls_in(&reply.text) {
        None => (Vec::new(), None),
        Some(Ok(calls)) => (calls, None),
        Some(Err(problem)) => (Vec::new(), Some(problem)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_the_adapters_code_or_the_servers_words() {
        let error = |code, message: &str| StreamError {
            class: art_types::ErrorClass::Permanent,
            code,
            message: message.into(),
        };
        assert!(refuses_tools(&error(
            FailureCode::ToolsUnsupported,
            "HTTP 500"
        )));
        assert!(refuses_tools(&error(
            FailureCode::OllamaError,
            "registry.ollama.ai/library/gemma:2b does not support tools"
        )));
        assert!(!refuses_tools(&error(
            FailureCode::NotFound,
            "model not found"
        )));
    }

    #[test]
    fn long_outputs_are_clipped_on_a_character_boundary() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hi", 5), "hi");
    }
}
