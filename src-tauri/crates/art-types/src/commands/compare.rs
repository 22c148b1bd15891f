//! Runs compared and replayed: one question to several models at once, "Replay with…"
//! on a recorded run, and the diff of any two runs (a comparison's columns, a replay and
//! its original, or two chosen in the Trace panel).

use serde::{Deserialize, Serialize};

use crate::{Attachment, ProviderConfig, ReplayMode, Unmatched};

/// Ask one question of 2–4 models at once in the thread: each model's answer is a run
/// on a branch of its own (a column), all started together; local models take turns.
/// Not while a run of the thread is at work or waits for a decision. Each column's end
/// is its own `RunFinished` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompareModels {
    /// The thread asked.
    pub thread_id: String,
    /// The question.
    pub text: String,
    /// Files with it, as with a message.
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// The models, one per column, in order (a provider entry's name and a model).
    pub models: Vec<ProviderConfig>,
}

/// A comparison started: its id and its columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The comparison's id (its columns' questions carry it as `comparison`).
    pub comparison_id: String,
    /// The thread.
    pub thread_id: String,
    /// The columns, in the order asked.
    pub columns: Vec<ComparisonColumn>,
}

/// One column of a comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparisonColumn {
    /// Its run's trace id (stopped with `CancelRun`).
    pub trace_id: String,
    /// The provider entry asked.
    pub provider: String,
    /// The model asked.
    pub model: String,
    /// The column it waits for (a local model, when the one before it is local too:
    /// the machine runs one at a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_for: Option<usize>,
}

/// "Keep this one": the thread shows run `trace_id`'s branch (a comparison's column, a
/// replay) from now on — the branch through its last message. Refused while the thread
/// answers. Returns the thread with its new head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShowRun {
    /// The thread.
    pub thread_id: String,
    /// The run whose branch it shows.
    pub trace_id: String,
}

/// Replay run `trace_id` of the thread: its question asked again on a new branch beside
/// it (the thread shows the replay), with the model, system prompt or tools given
/// (`None`: the thread's). Returns the replay's trace id; not while a run of the thread
/// is at work or waits for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayRun {
    /// The thread of the run.
    pub thread_id: String,
    /// The run replayed.
    pub trace_id: String,
    /// The provider and model to replay it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_config: Option<ProviderConfig>,
    /// A system prompt instead of the thread's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Tools (names) instead of the thread's enabled ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tools run again (live) or answered from the record.
    #[serde(default)]
    pub mode: ReplayMode,
    /// In recorded mode, what a call the run did not make gets.
    #[serde(default)]
    pub unmatched: Unmatched,
}

/// Two recorded runs compared (of one thread or two): plans, tool calls, answers and
/// figures ([`crate::record::diff::RunDiff`]; its `markdown()` is the Markdown export).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffRuns {
    /// The first run's trace id.
    pub a: String,
    /// The second run's trace id.
    pub b: String,
}
