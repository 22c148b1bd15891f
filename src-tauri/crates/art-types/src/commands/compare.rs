//! Runs compared and replayed: "Replay with…" on a recorded run, and the diff of any two
//! runs (a replay and its original, or two chosen in the Trace panel).

use serde::{Deserialize, Serialize};

use crate::{ProviderConfig, ReplayMode, Unmatched};

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
