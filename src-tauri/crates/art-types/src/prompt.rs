//! The provider-agnostic prompt (ART's `ArtStandardPrompt`): adapters translate it into
//! each provider's wire format, faithfully (tool call ids and names included).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::Attachment;

/// Role of a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptRole {
    /// Instructions.
    System,
    /// The person.
    User,
    /// The model (text and/or tool calls).
    Assistant,
    /// A tool call request recorded as its own message.
    ToolRequest,
    /// A tool's result, linked by `tool_call_id`, named by `name`.
    ToolResult,
}

/// The function part of a tool call request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON string (as the OpenAI-style wire carries them).
    pub arguments: String,
}

/// A tool call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// Call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name and arguments.
    pub function: FunctionCall,
    /// Opaque provider signature of the call (Gemini's `thoughtSignature`), returned
    /// verbatim; other providers never see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Thinking attached to an assistant message, for providers that need it sent back
/// (Anthropic signatures, Gemini thought signatures).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningBlock {
    /// The thinking text.
    pub text: String,
    /// Opaque provider signature, returned verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// One prompt message (ART's `ArtStandardMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Role.
    pub role: PromptRole,
    /// Text content (may be empty for an assistant message that only calls tools).
    #[serde(default)]
    pub content: String,
    /// For `tool_result`: the tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For `assistant`: the tools it calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// For `tool_result`: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `assistant`: thinking to send back, where the provider wants it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningBlock>,
    /// For `tool_result`: the call failed (the content says why); providers that mark
    /// failed results (Anthropic's `is_error`) get it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// For `user`: images sent with the text, in the provider's own image form.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<PromptImage>,
}

/// An image in a prompt. Serialized (a recorded prompt, the request inspector) it is the
/// attachment's facts and the size sent, never the bytes; the bytes are held only for
/// the adapter that encodes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptImage {
    /// The attachment it comes from.
    pub attachment: Attachment,
    /// Media type of the bytes sent (`image/png`, `image/jpeg`, …).
    pub mime: String,
    /// Bytes sent (the original, or the copy made for providers).
    pub size: u64,
    #[serde(skip)]
    data: Option<Arc<Vec<u8>>>,
}

impl PromptImage {
    /// An image of `attachment` to send as `data` of type `mime`.
    pub fn new(attachment: Attachment, mime: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            attachment,
            mime: mime.into(),
            size: data.len() as u64,
            data: Some(Arc::new(data)),
        }
    }

    /// The bytes to send; `None` once the image was serialized and read back (a
    /// recorded prompt holds no bytes).
    pub fn data(&self) -> Option<&[u8]> {
        self.data.as_deref().map(Vec::as_slice)
    }
}

impl PromptMessage {
    /// A message with just a role and text.
    pub fn text(role: PromptRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: None,
            is_error: false,
            images: Vec::new(),
        }
    }
}

/// A whole prompt.
pub type Prompt = Vec<PromptMessage>;
