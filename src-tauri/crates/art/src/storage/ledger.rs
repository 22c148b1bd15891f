//! What the storage keeps of each run's usage, and the sums it answers with. One row per
//! finished run (recorded once: a second record of the same run is ignored); SQLite
//! keeps rollups beside them (per thread, day, provider and model; per day, provider and
//! model), so sums over a million runs read a few thousand rows.

use std::collections::BTreeMap;

/// One finished run's usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    /// The run.
    pub trace_id: String,
    /// Its thread (kept after the thread is deleted: the ledger is a ledger).
    pub thread_id: String,
    /// Provider name (`""` when the run never reached one).
    pub provider: String,
    /// Model id (`""` likewise).
    pub model: String,
    /// Local calendar day it started, `YYYY-MM-DD`.
    pub day: String,
    /// Unix ms it started.
    pub started_at: i64,
    /// Wall time.
    pub duration_ms: u64,
    /// Prompt tokens (cached included).
    pub input_tokens: u64,
    /// Of those, from the provider's cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub thinking_tokens: u64,
    /// What the provider reported it cost (billionths of a dollar).
    pub cost_nanos: Option<u64>,
}

/// A column usage can be grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UsageKey {
    /// `YYYY-MM-DD`.
    Day,
    /// Thread id.
    Thread,
    /// Provider name.
    Provider,
    /// Model id.
    Model,
}

/// Which runs to sum, grouped how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageQuery {
    /// Group by these, in this order (none: one sum of everything).
    pub group: Vec<UsageKey>,
    /// Only runs from this day on (`YYYY-MM-DD`).
    pub since_day: Option<String>,
    /// Only this thread's runs.
    pub thread_id: Option<String>,
}

/// The sums of one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageSum {
    /// The group's values, in the query's `group` order.
    pub keys: Vec<String>,
    /// Runs.
    pub runs: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Cached prompt tokens.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub thinking_tokens: u64,
    /// Wall time.
    pub duration_ms: u64,
    /// Sum of the costs providers reported.
    pub reported_cost_nanos: u64,
    /// Runs with a reported cost.
    pub reported_runs: u64,
    /// Prompt tokens of the runs without one (what a user's price applies to).
    pub unreported_input_tokens: u64,
    /// Completion and reasoning tokens of the runs without one.
    pub unreported_output_tokens: u64,
}

impl UsageSum {
    fn add(&mut self, r: &UsageRecord) {
        self.runs += 1;
        self.input_tokens += r.input_tokens;
        self.cached_input_tokens += r.cached_input_tokens;
        self.output_tokens += r.output_tokens;
        self.thinking_tokens += r.thinking_tokens;
        self.duration_ms += r.duration_ms;
        match r.cost_nanos {
            Some(cost) => {
                self.reported_cost_nanos += cost;
                self.reported_runs += 1;
            }
            None => {
                self.unreported_input_tokens += r.input_tokens;
                self.unreported_output_tokens += r.output_tokens + r.thinking_tokens;
            }
        }
    }
}

fn key_of(r: &UsageRecord, key: UsageKey) -> &str {
    match key {
        UsageKey::Day => &r.day,
        UsageKey::Thread => &r.thread_id,
        UsageKey::Provider => &r.provider,
        UsageKey::Model => &r.model,
    }
}

/// Sum `records` as `query` asks (the in-memory store; SQLite does it in SQL), groups
/// in key order.
pub fn sum<'a>(
    records: impl IntoIterator<Item = &'a UsageRecord>,
    query: &UsageQuery,
) -> Vec<UsageSum> {
    let mut groups: BTreeMap<Vec<String>, UsageSum> = BTreeMap::new();
    for r in records {
        if query.since_day.as_ref().is_some_and(|d| r.day < *d)
            || query.thread_id.as_ref().is_some_and(|t| r.thread_id != *t)
        {
            continue;
        }
        let keys: Vec<String> = query
            .group
            .iter()
            .map(|k| key_of(r, *k).to_owned())
            .collect();
        groups
            .entry(keys.clone())
            .or_insert_with(|| UsageSum {
                keys,
                ..UsageSum::default()
            })
            .add(r);
    }
    groups.into_values().collect()
}
