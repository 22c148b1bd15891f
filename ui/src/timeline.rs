//! A run's observations as a timeline: one bar per span (the run, planning, each LLM
//! call, each tool, synthesis), indented under its parent and placed by time; point
//! observations (tool calls asked for, thinking, errors) as marks in their span's row.
//! Pure, unit-tested natively; `views/trace.rs` draws it.

use std::collections::HashMap;

use art_types::{Observation, ObservationType, Phase};
use serde_json::Value;

/// What a bar stands for (its colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarKind {
    /// The whole run.
    Agent,
    /// Planning, synthesis.
    Chain,
    /// A call to the model.
    Llm,
    /// A tool.
    Tool,
}

impl BarKind {
    /// CSS class.
    pub fn class(self) -> &'static str {
        match self {
            Self::Agent => "bar-agent",
            Self::Chain => "bar-chain",
            Self::Llm => "bar-llm",
            Self::Tool => "bar-tool",
        }
    }
}

/// A point observation inside a row.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The observation.
    pub observation_id: String,
    /// Its type.
    pub kind: ObservationType,
    /// Position in the run, 0 to 1.
    pub at: f64,
}

/// One span.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The observation that describes it (click to see it).
    pub observation_id: String,
    /// E.g. `chat llama3.2`, `calculator`.
    pub label: String,
    /// Colour.
    pub kind: BarKind,
    /// Nesting under the run.
    pub depth: usize,
    /// Start in the run, 0 to 1.
    pub start: f64,
    /// Length in the run, 0 to 1.
    pub width: f64,
    /// Milliseconds.
    pub duration_ms: i64,
    /// It ended in an error.
    pub failed: bool,
    /// Point observations inside it.
    pub marks: Vec<Mark>,
}

/// One run, drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The run.
    pub trace_id: String,
    /// Unix ms of its start.
    pub start_ms: i64,
    /// Milliseconds from start to end.
    pub duration_ms: i64,
    /// Bars in start order, each after its parent.
    pub bars: Vec<Bar>,
    /// Tools the run called, whichever bars the filters show.
    pub tool_calls: usize,
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn label_and_kind(o: &Observation, phase: Phase) -> (String, BarKind) {
    match o.kind {
        ObservationType::ToolExecution => (
            text(&o.content, "toolName").unwrap_or("tool").to_owned(),
            BarKind::Tool,
        ),
        ObservationType::LlmStreamEnd | ObservationType::LlmStreamError => {
            let model = text(&o.metadata, "model").unwrap_or("model");
            (format!("chat {model}"), BarKind::Llm)
        }
        _ => match phase {
            Phase::Run => ("Run".into(), BarKind::Agent),
            Phase::Planning => ("Plan".into(), BarKind::Chain),
            Phase::Synthesis => ("Answer".into(), BarKind::Chain),
            Phase::Execution => ("Tools".into(), BarKind::Chain),
            Phase::Finalization => ("Finish".into(), BarKind::Chain),
        },
    }
}

/// How deep span `id` sits: its ancestors within the run (parents not in the run, from
/// cut-off data, do not count).
fn depth<'a>(parents: &HashMap<&'a str, Option<&'a str>>, mut id: &'a str) -> usize {
    let mut d = 0;
    while let Some(Some(parent)) = parents.get(id) {
        if !parents.contains_key(parent) || d > 32 {
            break;
        }
        d += 1;
        id = parent;
    }
    d
}

fn failed(o: &Observation) -> bool {
    o.kind == ObservationType::LlmStreamError
        || (o.kind == ObservationType::ToolExecution && text(&o.content, "status") == Some("error"))
}

/// The timelines of the runs in `observations` (any order), oldest run first, showing
/// only observations whose type is in `shown` (all when empty). A run that never
/// closed its root span (it failed or was stopped) gets a root bar over all it did.
pub fn timelines(observations: &[Observation], shown: &[ObservationType]) -> Vec<Timeline> {
    let visible = |o: &Observation| shown.is_empty() || shown.contains(&o.kind);
    let mut runs: Vec<(String, Vec<&Observation>)> = Vec::new();
    for o in observations {
        match runs.iter_mut().find(|(t, _)| *t == o.trace_id) {
            Some((_, list)) => list.push(o),
            None => runs.push((o.trace_id.clone(), vec![o])),
        }
    }
    let mut out: Vec<Timeline> = runs
        .into_iter()
        .map(|(trace_id, list)| timeline(trace_id, &list, &visible))
        .collect();
    out.sort_by_key(|t| t.start_ms);
    out
}

fn timeline(
    trace_id: String,
    list: &[&Observation],
    visible: &dyn Fn(&Observation) -> bool,
) -> Timeline {
    let start_ms = list
        .iter()
        .map(|o| o.span.as_ref().map_or(o.timestamp, |s| s.start_ms))
        .min()
        .unwrap_or(0);
    let end_ms = list
        .iter()
        .map(|o| {
            o.span
                .as_ref()
                .and_then(|s| s.end_ms)
                .unwrap_or(o.timestamp)
        })
        .max()
        .unwrap_or(start_ms);
    let total = (end_ms - start_ms).max(1) as f64;
    let at = |ms: i64| ((ms - start_ms) as f64 / total).clamp(0.0, 1.0);
    // Spans: the observation that closed each, and its parent.
    let mut spans: Vec<(&str, Option<&str>, &Observation)> = list
        .iter()
        .filter_map(|o| {
            let s = o.span.as_ref()?;
            s.end_ms?;
            Some((s.span_id.as_str(), s.parent_span_id.as_deref(), *o))
        })
        .collect();
    let parents: HashMap<&str, Option<&str>> = spans.iter().map(|(id, p, _)| (*id, *p)).collect();
    // By start; a parent before the children that start with it.
    spans.sort_by_key(|(id, _, o)| {
        (
            o.span.as_ref().map_or(0, |s| s.start_ms),
            depth(&parents, id),
        )
    });
    let tool_calls = spans
        .iter()
        .filter(|(_, _, o)| {
            let phase = o.span.as_ref().expect("spans have span info").phase;
            label_and_kind(o, phase).1 == BarKind::Tool
        })
        .count();
    let has_root = spans.iter().any(|(_, p, _)| p.is_none());
    let offset = usize::from(!has_root);
    let mut bars: Vec<Bar> = spans
        .iter()
        .filter(|(_, _, o)| visible(o))
        .map(|(id, _, o)| {
            let s = o.span.as_ref().expect("spans have span info");
            let end = s.end_ms.unwrap_or(s.start_ms);
            let (label, kind) = label_and_kind(o, s.phase);
            Bar {
                observation_id: o.id.clone(),
                label,
                kind,
                depth: depth(&parents, id) + offset,
                start: at(s.start_ms),
                width: (at(end) - at(s.start_ms)).max(0.0),
                duration_ms: end - s.start_ms,
                failed: failed(o),
                marks: Vec::new(),
            }
        })
        .collect();
    if !has_root {
        bars.insert(
            0,
            Bar {
                observation_id: list.first().map(|o| o.id.clone()).unwrap_or_default(),
                label: "Run (did not finish)".into(),
                kind: BarKind::Agent,
                depth: 0,
                start: 0.0,
                width: 1.0,
                duration_ms: end_ms - start_ms,
                failed: list.iter().any(|o| o.kind == ObservationType::Error),
                marks: Vec::new(),
            },
        );
    }
    // Points go into the row of their span (else the run's row).
    let row_of: HashMap<&str, usize> = spans
        .iter()
        .filter(|(_, _, o)| visible(o))
        .enumerate()
        .map(|(i, (id, _, _))| (*id, i + offset))
        .collect();
    for o in list.iter().filter(|o| visible(o)) {
        let point = o.span.as_ref().is_none_or(|s| s.end_ms.is_none());
        if !point || bars.is_empty() {
            continue;
        }
        let row = o
            .span
            .as_ref()
            .and_then(|s| row_of.get(s.span_id.as_str()).copied())
            .unwrap_or(0);
        bars[row].marks.push(Mark {
            observation_id: o.id.clone(),
            kind: o.kind,
            at: at(o.timestamp),
        });
    }
    Timeline {
        trace_id,
        start_ms,
        duration_ms: end_ms - start_ms,
        bars,
        tool_calls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::SpanInfo;
    use serde_json::json;

    /// Phase, span id, parent, start, end.
    type SpanAt<'a> = (Phase, &'a str, Option<&'a str>, i64, Option<i64>);

    fn obs(id: &str, kind: ObservationType, at: i64, span: Option<SpanAt<'_>>) -> Observation {
        Observation {
            id: id.into(),
            thread_id: "t".into(),
            trace_id: "r".into(),
            timestamp: at,
            kind,
            title: id.into(),
            content: json!({ "toolName": "calculator", "status": if id == "tool2" { "error" } else { "success" } }),
            metadata: json!({ "model": "llama3.2" }),
            span: span.map(|(phase, span_id, parent, start_ms, end_ms)| SpanInfo {
                phase,
                span_id: span_id.into(),
                parent_span_id: parent.map(str::to_owned),
                start_ms,
                end_ms,
            }),
        }
    }

    fn run() -> Vec<Observation> {
        use ObservationType as T;
        vec![
            obs(
                "start",
                T::LlmStreamStart,
                10,
                Some((Phase::Planning, "llm", Some("plan"), 10, None)),
            ),
            obs(
                "llm",
                T::LlmStreamEnd,
                400,
                Some((Phase::Planning, "llm", Some("plan"), 10, Some(400))),
            ),
            obs(
                "plan",
                T::Plan,
                410,
                Some((Phase::Planning, "plan", Some("root"), 0, Some(410))),
            ),
            obs(
                "call",
                T::ToolCall,
                410,
                Some((Phase::Planning, "plan", Some("root"), 0, None)),
            ),
            obs(
                "tool1",
                T::ToolExecution,
                500,
                Some((Phase::Execution, "t1", Some("root"), 420, Some(500))),
            ),
            obs(
                "tool2",
                T::ToolExecution,
                600,
                Some((Phase::Execution, "t2", Some("root"), 500, Some(600))),
            ),
            obs("thought", T::Thoughts, 300, None),
            obs(
                "final",
                T::FinalResponse,
                1_000,
                Some((Phase::Run, "root", None, 0, Some(1_000))),
            ),
        ]
    }

    #[test]
    fn spans_become_nested_bars_placed_by_time() {
        let t = timelines(&run(), &[]);
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert_eq!(t.duration_ms, 1_000);
        let rows: Vec<(&str, usize, BarKind)> = t
            .bars
            .iter()
            .map(|b| (b.label.as_str(), b.depth, b.kind))
            .collect();
        assert_eq!(
            rows,
            [
                ("Run", 0, BarKind::Agent),
                ("Plan", 1, BarKind::Chain),
                ("chat llama3.2", 2, BarKind::Llm),
                ("calculator", 1, BarKind::Tool),
                ("calculator", 1, BarKind::Tool),
            ]
        );
        let tool1 = &t.bars[3];
        assert!((tool1.start - 0.42).abs() < 1e-9 && (tool1.width - 0.08).abs() < 1e-9);
        assert!(!tool1.failed && t.bars[4].failed);
        // Points sit in their span's row; the thinking (no span) in the run's.
        let marks = |i: usize| {
            t.bars[i]
                .marks
                .iter()
                .map(|m| m.observation_id.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(marks(0), ["thought"]);
        assert_eq!(marks(1), ["call"]);
        assert_eq!(marks(2), ["start"]);
    }

    #[test]
    fn a_run_that_did_not_finish_gets_a_root_and_filters_hide_types() {
        let mut list = run();
        list.retain(|o| o.id != "final");
        let t = &timelines(&list, &[])[0];
        assert_eq!(t.bars[0].label, "Run (did not finish)");
        assert_eq!(t.bars[1].depth, 1, "planning under the made-up root");
        let only_tools = &timelines(&run(), &[ObservationType::ToolExecution])[0];
        assert_eq!(only_tools.bars.len(), 2);
        assert!(only_tools.bars.iter().all(|b| b.kind == BarKind::Tool));
        // The run's tool calls are counted whatever the filters hide.
        let no_tools = &timelines(&run(), &[ObservationType::Plan])[0];
        assert!(no_tools.bars.iter().all(|b| b.kind != BarKind::Tool));
        assert_eq!(no_tools.tool_calls, 2);
        assert_eq!(only_tools.tool_calls, 2);
    }
}
