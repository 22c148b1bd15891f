//! Trace exports as the UI asks for them and hears about them.

use serde::{Deserialize, Serialize};

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum ExportScope {
    /// One run.
    Trace {
        /// Its trace id.
        id: String,
    },
    /// One thread.
    Thread {
        /// Its id.
        id: String,
    },
    /// Every thread.
    All,
}

/// An export the user asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportRequest {
    /// What to export.
    pub scope: ExportScope,
    /// `jsonl`, `otlp`, `otlp-proto` or `markdown`.
    pub format: String,
    /// OTLP: include questions, answers, tool arguments and results.
    #[serde(default)]
    pub include_content: bool,
    /// Markdown: include the model's thinking.
    #[serde(default)]
    pub include_thinking: bool,
}

/// A finished export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportDone {
    /// Where the file was written.
    pub path: String,
    /// Threads written.
    pub threads: u64,
    /// Messages written.
    pub messages: u64,
    /// Observations written.
    pub observations: u64,
}

/// How far an export is (observations written of the total).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportProgress {
    /// Written so far.
    pub done: u64,
    /// In the scope.
    pub total: u64,
}
