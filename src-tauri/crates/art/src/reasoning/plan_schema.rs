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

/// Most steps a plan may have (a small model that loops writes the same step again and
/// again until it runs out of tokens).
pub const MAX_STEPS: usize = 8;
/// Most calls a plan may write ahead.
pub const MAX_CALLS: usize = 8;
/// Longest title, in characters.
pub const MAX_TITLE: usize = 80;
/// Longest intent or step description, in characters.
pub const MAX_TEXT: usize = 300;
/// Most tokens the planning call may write: a plan within the bounds above takes far
/// fewer, so a model that rambles is cut off instead of "Planning…" for minutes (a
/// thread's own smaller `max_tokens` wins).
pub const PLAN_MAX_TOKENS: u32 = 1536;

/// The plan's schema, the calls naming only `tools` (none: no calls), every part
/// bounded ([`MAX_STEPS`], [`MAX_CALLS`], [`MAX_TITLE`], [`MAX_TEXT`]).
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
    calls["maxItems"] = json!(if tools.is_empty() { 0 } else { MAX_CALLS });
    let step_tools = if tools.is_empty() {
        json!({ "type": "array", "items": { "type": "string" }, "maxItems": 0 })
    } else {
        json!({ "type": "array", "items": { "type": "string", "enum": tools } })
    };
    json!({
        "type": "object",
        "properties": {
            "title": { "type": "string", "maxLength": MAX_TITLE },
            "intent": { "type": "string", "maxLength": MAX_TEXT },
            "steps": {
                "type": "array",
                "maxItems": MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string", "maxLength": 8 },
                        "description": { "type": "string", "maxLength": MAX_TEXT },
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
