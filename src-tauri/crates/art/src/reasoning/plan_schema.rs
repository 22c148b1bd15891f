//! The plan's JSON Schema: what the planning prompt asks for, given to a provider that
//! takes one (structured output: Ollama's `format`, the OpenAI-compatible
//! `response_format`, Gemini's `responseJsonSchema`), so a small local model's plan is
//! valid JSON of the right shape every time instead of free text that fails to parse.
//! The tools a call may name are listed (`enum`): a planner cannot name one that is not
//! there.
//!
//! A server that refuses it is recognised ([`refuses_schema`]): the call is made again
//! without, and the thread remembers not to ask.

use serde_json::{Value, json};

/// What a server says when it refuses a response schema, in each server's words (lower
/// case): DeepSeek ("this response_format type is unavailable"), vLLM and llama.cpp's
/// server naming `response_format` or `json_schema`, Gemini naming
/// `response_json_schema`, an Ollama older than 0.5 ("invalid format").
const REFUSALS: &[&str] = &[
    "response_format",
    "json_schema",
    "response_json_schema",
    "responsejsonschema",
    "invalid format",
    "structured output",
];

/// Whether a provider's error `message` refuses the response schema.
pub fn refuses_schema(message: &str) -> bool {
    let message = message.to_lowercase();
    REFUSALS.iter().any(|m| message.contains(m))
}

/// The plan's schema, the calls naming only `tools` (none: no calls).
pub fn plan_schema(tools: &[String]) -> Value {
    let tool_name = if tools.is_empty() {
        json!({ "type": "string" })
    } else {
        json!({ "type": "string", "enum": tools })
    };
    let mut calls = json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "callId": { "type": "string" },
                "toolName": tool_name,
                "arguments": { "type": "object" }
            },
            "required": ["callId", "toolName", "arguments"]
        }
    });
    if tools.is_empty() {
        calls["maxItems"] = json!(0);
    }
    let step_tools = if tools.is_empty() {
        json!({ "type": "array", "items": { "type": "string" }, "maxItems": 0 })
    } else {
        json!({ "type": "array", "items": { "type": "string", "enum": tools } })
    };
    json!({
        "type": "object",
        "properties": {
            "title": { "type": "string" },
            "intent": { "type": "string" },
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "description": { "type": "string" },
                        "tools": step_tools
                    },
                    "required": ["id", "description", "tools"]
                }
            },
            "toolCalls": calls
        },
        "required": ["title", "intent", "steps", "toolCalls"]
    })
}
