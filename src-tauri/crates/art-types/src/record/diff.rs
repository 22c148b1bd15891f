//! Two recorded runs side by side — a comparison's columns, a replay and its original,
//! any two runs chosen in the Trace panel: the plans step by step, the tool calls
//! aligned with the arguments that differ, the answers word by word, and the figures.
//! [`RunDiff::between`] folds two [`RunView`]s into it; the app shows it, `art diff`
//! prints it, and both export it as JSON (serde) or Markdown ([`RunDiff::markdown`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use similar::{Algorithm, ChangeTag, DiffOp, TextDiff, capture_diff_slices};

use super::view::{RunView, ToolCard, ToolState};
use crate::RunStatus;

mod markdown;

/// How one place of two aligned sequences compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Edit {
    /// In both runs, alike.
    Same,
    /// In both runs, different (a step reworded; a call with other arguments or
    /// another result).
    Changed,
    /// Only in the first run.
    Removed,
    /// Only in the second run.
    Added,
}

/// One step of either plan, in its place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepPair {
    /// How the two compare.
    pub edit: Edit,
    /// The first run's step (its description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<String>,
    /// The second run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<String>,
}

/// One tool call as a diff shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSide {
    /// Call id in its run.
    pub call_id: String,
    /// Tool.
    pub tool_name: String,
    /// Arguments it ran with.
    pub arguments: Value,
    /// Its output, or why it failed (`None` while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Whether it failed.
    #[serde(default)]
    pub failed: bool,
    /// How long it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
}

impl From<&ToolCard> for ToolSide {
    fn from(card: &ToolCard) -> Self {
        let result = match card.state {
            ToolState::Error => card.error.clone().map(Value::String),
            _ => card.output.clone(),
        };
        Self {
            call_id: card.call_id.clone(),
            tool_name: card.tool_name.clone(),
            arguments: card.arguments.clone(),
            result,
            failed: card.state == ToolState::Error,
            duration_ms: card.duration_ms,
        }
    }
}

/// An argument whose value differs between two aligned calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentChange {
    /// Where it is in the arguments (`query`, `filters.year`, `ids[2]`; empty for the
    /// whole value).
    pub path: String,
    /// The first call's value (`None`: it has none there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<Value>,
    /// The second call's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<Value>,
}

/// Two calls of the same tool in the same place of their runs, or a call only one run
/// made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPair {
    /// How the two compare.
    pub edit: Edit,
    /// The first run's call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<ToolSide>,
    /// The second run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<ToolSide>,
    /// The arguments that differ (both calls there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<ArgumentChange>,
    /// Whether the results differ (both calls there).
    #[serde(default)]
    pub result_differs: bool,
}

/// A stretch of the answers' word diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Words {
    /// In both answers ([`Edit::Same`]), only the first's ([`Edit::Removed`]) or only the
    /// second's ([`Edit::Added`]).
    pub edit: Edit,
    /// The words, with the spaces between them.
    pub text: String,
}

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RunFigures {
    /// The run.
    pub trace_id: String,
    /// Its thread.
    pub thread_id: String,
    /// What it was asked, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Provider and model that answered, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How it ended, when it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    /// Wall time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The answer's first token, in ms after the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Model calls.
    pub llm_calls: u32,
    /// Tool calls.
    pub tool_calls: u32,
    /// What the provider charged, in billionths of a US dollar, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_nanos: Option<u64>,
}

impl RunFigures {
    /// The figures of `run`.
    pub fn of(run: &RunView) -> Self {
        let mut figures = Self {
            trace_id: run.trace_id.clone(),
            thread_id: run.thread_id.clone(),
            tool_calls: run.tools.len() as u32,
            first_token_ms: run.first_token_ms,
            ..Self::default()
        };
        if let Some(m) = &run.metadata {
            figures.provider = m.provider.clone();
            figures.model = m.model.clone();
            figures.status = Some(m.status);
            figures.duration_ms = Some(m.total_duration_ms);
            figures.input_tokens = m.usage.input_tokens;
            figures.output_tokens = m.usage.output_tokens;
            figures.llm_calls = m.llm_calls;
            figures.tool_calls = m.tool_calls;
            figures.cost_nanos = m.usage.cost_nanos;
        }
        figures
    }
}

/// Two runs compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDiff {
    /// The first run's figures.
    pub a: RunFigures,
    /// The second's.
    pub b: RunFigures,
    /// The plans' steps aligned (empty when neither run planned).
    pub steps: Vec<StepPair>,
    /// The tool calls aligned, in the order they were made.
    pub tools: Vec<ToolPair>,
    /// The answers, word by word.
    pub answer: Vec<Words>,
}

impl RunDiff {
    /// `a` and `b` compared (runs of any threads: [`RunDiff::same_thread`] says).
    pub fn between(a: &RunView, b: &RunView) -> Self {
        let steps_of = |run: &RunView| -> Vec<String> {
            run.plan
                .iter()
                .flat_map(|p| &p.steps)
                .map(|s| s.description.clone())
                .collect()
        };
        Self {
            a: RunFigures::of(a),
            b: RunFigures::of(b),
            steps: steps(&steps_of(a), &steps_of(b)),
            tools: tools(&a.tools, &b.tools),
            answer: words(&a.answer, &b.answer),
        }
    }

    /// With each run's question (the CLI and app know it from the thread's messages).
    pub fn with_questions(mut self, a: Option<String>, b: Option<String>) -> Self {
        self.a.question = a;
        self.b.question = b;
        self
    }

    /// Whether the two runs are of one thread (else their questions and histories may
    /// differ, which a diff should say).
    pub fn same_thread(&self) -> bool {
        self.a.thread_id == self.b.thread_id
    }

    /// Whether the runs did the same: same steps, same calls with the same results,
    /// same answer.
    pub fn alike(&self) -> bool {
        self.steps.iter().all(|s| s.edit == Edit::Same)
            && self.tools.iter().all(|t| t.edit == Edit::Same)
            && self.answer.iter().all(|w| w.edit == Edit::Same)
    }
}

/// Steps compare by their words, give or take case and spacing.
fn step_key(description: &str) -> String {
    description
        .split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn steps(a: &[String], b: &[String]) -> Vec<StepPair> {
    let keys = |steps: &[String]| steps.iter().map(|s| step_key(s)).collect::<Vec<_>>();
    let (ka, kb) = (keys(a), keys(b));
    let mut out = Vec::new();
    align(&ka, &kb, |i, j| {
        let edit = match (i, j) {
            (Some(i), Some(j)) if ka[i] == kb[j] => Edit::Same,
            (Some(_), Some(_)) => Edit::Changed,
            (Some(_), None) => Edit::Removed,
            _ => Edit::Added,
        };
        out.push(StepPair {
            edit,
            a: i.map(|i| a[i].clone()),
            b: j.map(|j| b[j].clone()),
        });
    });
    out
}

fn tools(a: &[ToolCard], b: &[ToolCard]) -> Vec<ToolPair> {
    // Aligned by tool name: calls of one tool in the same place pair up, and their
    // arguments and results are compared.
    let names = |cards: &[ToolCard]| cards.iter().map(|c| c.tool_name.clone()).collect();
    let (na, nb): (Vec<String>, Vec<String>) = (names(a), names(b));
    let mut out = Vec::new();
    align(&na, &nb, |i, j| {
        let (a, b) = (
            i.map(|i| ToolSide::from(&a[i])),
            j.map(|j| ToolSide::from(&b[j])),
        );
        match (a, b) {
            (Some(a), Some(b)) if a.tool_name == b.tool_name => {
                let mut arguments = Vec::new();
                changes(&mut arguments, String::new(), &a.arguments, &b.arguments);
                let result_differs = a.result != b.result || a.failed != b.failed;
                let same = arguments.is_empty() && !result_differs;
                out.push(ToolPair {
                    edit: if same { Edit::Same } else { Edit::Changed },
                    a: Some(a),
                    b: Some(b),
                    arguments,
                    result_differs,
                });
            }
            // Different tools in one place: one call removed, another added.
            (a, b) => {
                let only = |edit, a, b| ToolPair {
                    edit,
                    a,
                    b,
                    arguments: Vec::new(),
                    result_differs: false,
                };
                if a.is_some() {
                    out.push(only(Edit::Removed, a, None));
                }
                if b.is_some() {
                    out.push(only(Edit::Added, None, b));
                }
            }
        }
    });
    out
}

/// Walk the alignment of `a` and `b` (a longest common subsequence): `place` hears
/// each place as (index in `a`, index in `b`) — both for a match or a replacement
/// paired in order, one for an element only one side has.
fn align<T: Eq + std::hash::Hash + Ord>(
    a: &[T],
    b: &[T],
    mut place: impl FnMut(Option<usize>, Option<usize>),
) {
    for op in capture_diff_slices(Algorithm::Myers, a, b) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => (0..len).for_each(|k| place(Some(old_index + k), Some(new_index + k))),
            DiffOp::Delete {
                old_index, old_len, ..
            } => (0..old_len).for_each(|k| place(Some(old_index + k), None)),
            DiffOp::Insert {
                new_index, new_len, ..
            } => (0..new_len).for_each(|k| place(None, Some(new_index + k))),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for k in 0..old_len.max(new_len) {
                    place(
                        (k < old_len).then_some(old_index + k),
                        (k < new_len).then_some(new_index + k),
                    );
                }
            }
        }
    }
}

/// The leaves where `a` and `b` differ, by path (objects by key, arrays by index).
fn changes(out: &mut Vec<ArgumentChange>, path: String, a: &Value, b: &Value) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => changes(out, at(key), x, y),
                    (x, y) => out.push(ArgumentChange {
                        path: at(key),
                        a: x.cloned(),
                        b: y.cloned(),
                    }),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                changes(out, format!("{path}[{i}]"), x, y);
            }
        }
        (a, b) if a != b => out.push(ArgumentChange {
            path,
            a: Some(a.clone()),
            b: Some(b.clone()),
        }),
        _ => {}
    }
}

/// The answers' word diff, runs of one kind merged.
fn words(a: &str, b: &str) -> Vec<Words> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_words(a, b);
    let mut out: Vec<Words> = Vec::new();
    for change in diff.iter_all_changes() {
        let edit = match change.tag() {
            ChangeTag::Equal => Edit::Same,
            ChangeTag::Delete => Edit::Removed,
            ChangeTag::Insert => Edit::Added,
        };
        match out.last_mut() {
            Some(last) if last.edit == edit => last.text.push_str(change.value()),
            _ => out.push(Words {
                edit,
                text: change.value().to_owned(),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests;
