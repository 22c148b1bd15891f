//! The prompt library: named system prompts a thread can pick (ART's PromptManager
//! fragments, made editable by users).

use serde::{Deserialize, Serialize};

/// A named system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedPrompt {
    /// Stable id (threads refer to it).
    pub prompt_id: String,
    /// Unique name shown in lists (case-insensitively unique).
    pub name: String,
    /// The prompt text.
    pub content: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last edit.
    pub updated_at: i64,
}
