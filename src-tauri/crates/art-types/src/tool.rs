//! Tools: schemas the model sees, calls it makes, results it gets back.

use serde::{Deserialize, Serialize};

/// An example call shown to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExample {
    /// Arguments.
    pub input: serde_json::Value,
    /// Expected output, if useful.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// What the example shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What a tool is and what it accepts (ART's `ToolSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSchema {
    /// Unique name the model uses to call it.
    pub name: String,
    /// What it does, for the model and the settings form.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: serde_json::Value,
    /// JSON Schema of the output, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// Example calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<ToolExample>,
}

/// A tool call requested by the model (ART's `ParsedToolCall`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedToolCall {
    /// Id linking the call to its result.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Arguments (validated against the tool's schema before it runs).
    pub arguments: serde_json::Value,
    /// Opaque provider signature tied to this call (Gemini's `thoughtSignature`), sent
    /// back verbatim with the call in later turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Whether a tool call worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// It ran and returned output.
    Success,
    /// It was not run (disabled, unknown, invalid arguments) or it failed / timed out.
    Error,
}

/// The outcome of one tool call (ART's `ToolResult`). Failures are results, never
/// aborts: the agent carries on and tells the model what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// Id of the call.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Success or error.
    pub status: ToolStatus,
    /// Output on success (`null` on error).
    #[serde(default)]
    pub output: serde_json::Value,
    /// Clear message on error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Extra facts (duration, error code).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub metadata: serde_json::Value,
}

impl ToolResult {
    /// Metadata key: how long the call ran, in milliseconds.
    pub const DURATION_MS: &'static str = "durationMs";
    /// Metadata key: a failed call's error code.
    pub const ERROR_CODE: &'static str = "errorCode";
}
