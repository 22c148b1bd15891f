use serde_json::{Value, json};

use super::*;
use crate::record::view::{PlanCard, ToolCard, ToolState};
use crate::record::{PlanStep, StepStatus};
use crate::{ExecutionMetadata, RunStatus, TokenUsage};

fn run(
    thread: &str,
    trace: &str,
    steps: &[&str],
    tools: &[(&str, Value, &str)],
    answer: &str,
) -> RunView {
    let mut run = RunView::new(thread, trace);
    run.plan = Some(PlanCard {
        steps: steps
            .iter()
            .enumerate()
            .map(|(i, d)| PlanStep {
                id: (i + 1).to_string(),
                description: (*d).into(),
                status: StepStatus::Done,
                tools: Vec::new(),
                tools_optional: false,
            })
            .collect(),
        ..PlanCard::default()
    });
    run.tools = tools
        .iter()
        .enumerate()
        .map(|(i, (name, arguments, output))| ToolCard {
            call_id: format!("c{i}"),
            tool_name: (*name).into(),
            arguments: arguments.clone(),
            state: ToolState::Ok,
            output: Some(json!(output)),
            result: None,
            error: None,
            duration_ms: Some(3),
            mcp: None,
            step_id: None,
            approval: None,
            question: None,
            progress: None,
            recorded_from: None,
        })
        .collect();
    run.answer = answer.into();
    run.metadata = Some(ExecutionMetadata {
        thread_id: thread.into(),
        trace_id: trace.into(),
        status: RunStatus::Success,
        history_left_out: 0,
        total_duration_ms: 1500,
        planning_duration_ms: None,
        execution_duration_ms: None,
        synthesis_duration_ms: None,
        direct: false,
        llm_calls: 2,
        tool_calls: tools.len() as u32,
        usage: TokenUsage {
            input_tokens: 100,
            output_tokens: 20,
            cost_nanos: Some(1_200_000),
            ..TokenUsage::default()
        },
        provider: Some("ollama".into()),
        model: Some(format!("model-{trace}")),
        error: None,
    });
    run.finished = true;
    run
}

#[test]
fn a_run_compared_with_itself_is_alike() {
    let a = run(
        "t",
        "a",
        &["Add the numbers", "Answer"],
        &[("calculator", json!({"expression": "19 + 23"}), "42")],
        "It is 42.",
    );
    let diff = RunDiff::between(&a, &a);
    assert!(diff.alike() && diff.same_thread());
    assert_eq!(
        diff.answer,
        [Words {
            edit: Edit::Same,
            text: "It is 42.".into()
        }]
    );
    assert!(
        diff.markdown().contains("same plan and calls"),
        "{}",
        diff.markdown()
    );
}

#[test]
fn steps_calls_arguments_and_words_are_aligned_and_marked() {
    let a = run(
        "t",
        "a",
        &["Look up the weather", "Add the numbers", "Answer"],
        &[
            (
                "search",
                json!({"query": "weather Paris", "filters": {"year": 2025}}),
                "sunny",
            ),
            ("calculator", json!({"expression": "19 + 23"}), "42"),
        ],
        "The answer is 42 and it is sunny.",
    );
    let b = run(
        "t",
        "b",
        &["add the  numbers", "Check the result", "Answer"],
        &[
            ("calculator", json!({"expression": "19 + 24"}), "43"),
            ("fetch", json!({"url": "https://example.org"}), "<html>"),
        ],
        "The answer is 43 and it is sunny.",
    );
    let diff = RunDiff::between(&a, &b);
    assert!(!diff.alike());
    // Steps: case and spacing do not count; the others are removed, added or kept.
    let steps: Vec<(Edit, Option<&str>, Option<&str>)> = diff
        .steps
        .iter()
        .map(|s| (s.edit, s.a.as_deref(), s.b.as_deref()))
        .collect();
    assert_eq!(
        steps,
        [
            (Edit::Removed, Some("Look up the weather"), None),
            (
                Edit::Same,
                Some("Add the numbers"),
                Some("add the  numbers")
            ),
            (Edit::Added, None, Some("Check the result")),
            (Edit::Same, Some("Answer"), Some("Answer")),
        ]
    );
    // Calls: aligned by tool; the calculator's argument and result differ.
    let tools: Vec<(Edit, &str)> = diff
        .tools
        .iter()
        .map(|t| {
            (
                t.edit,
                t.a.as_ref().or(t.b.as_ref()).unwrap().tool_name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            (Edit::Removed, "search"),
            (Edit::Changed, "calculator"),
            (Edit::Added, "fetch")
        ]
    );
    let calculator = &diff.tools[1];
    assert_eq!(
        calculator.arguments,
        [ArgumentChange {
            path: "expression".into(),
            a: Some(json!("19 + 23")),
            b: Some(json!("19 + 24")),
        }]
    );
    assert!(calculator.result_differs);
    // The answers: only the number differs.
    let changed: Vec<(Edit, &str)> = diff
        .answer
        .iter()
        .filter(|w| w.edit != Edit::Same)
        .map(|w| (w.edit, w.text.as_str()))
        .collect();
    assert_eq!(changed, [(Edit::Removed, "42"), (Edit::Added, "43")]);
    // The figures are each run's.
    assert_eq!(
        (diff.a.model.as_deref(), diff.b.model.as_deref()),
        (Some("model-a"), Some("model-b"))
    );
    assert_eq!((diff.a.tool_calls, diff.b.cost_nanos), (2, Some(1_200_000)));

    let md = diff.markdown();
    for expected in [
        "| Model | ollama:model-a | ollama:model-b |",
        "| Cost | $0.0012 | $0.0012 |",
        "- − <del>Look up the weather</del> (A only)",
        "- + <ins>Check the result</ins> (B only)",
        "### 2. `calculator` — arguments differ, results differ",
        "| `expression` | `\"19 + 23\"` | `\"19 + 24\"` |",
        "The answer is <del>42</del><ins>43</ins> and it is sunny.",
    ] {
        assert!(md.contains(expected), "{expected:?} not in:\n{md}");
    }
    // Piped: no tags, the answers as `-` / `+` lines; on a terminal, in colour.
    let plain = diff.text(false);
    assert!(
        !plain.contains("<del>") && !plain.contains("<ins>"),
        "{plain}"
    );
    assert!(!plain.contains('\x1b'), "{plain}");
    assert!(
        plain.contains("- − Look up the weather (A only)"),
        "{plain}"
    );
    assert!(
        plain.contains("\n- The answer is 42 and it is sunny.\n"),
        "{plain}"
    );
    assert!(
        plain.contains("\n+ The answer is 43 and it is sunny.\n"),
        "{plain}"
    );
    let coloured = diff.text(true);
    assert!(
        coloured.contains("is \x1b[31;9m42\x1b[0m\x1b[32m43\x1b[0m and"),
        "{coloured}"
    );
    assert!(!coloured.contains("<del>"), "{coloured}");
    // JSON round-trips (what `art diff --format json` and the app export).
    let text = serde_json::to_string(&diff).unwrap();
    assert_eq!(serde_json::from_str::<RunDiff>(&text).unwrap(), diff);
}

#[test]
fn nested_arguments_missing_keys_and_other_threads_are_said() {
    let a = run(
        "t1",
        "a",
        &[],
        &[(
            "search",
            json!({"q": "x", "opts": {"n": [1, 2]}, "old": true}),
            "r",
        )],
        "",
    );
    let b = run(
        "t2",
        "b",
        &[],
        &[(
            "search",
            json!({"q": "x", "opts": {"n": [1, 3]}, "new": 1}),
            "r",
        )],
        "Found.",
    );
    let diff = RunDiff::between(&a, &b);
    assert!(!diff.same_thread());
    assert!(diff.steps.iter().all(|s| s.edit == Edit::Same) && diff.steps.is_empty());
    let paths: Vec<(&str, Option<&Value>, Option<&Value>)> = diff.tools[0]
        .arguments
        .iter()
        .map(|c| (c.path.as_str(), c.a.as_ref(), c.b.as_ref()))
        .collect();
    assert_eq!(
        paths,
        [
            ("new", None, Some(&json!(1))),
            ("old", Some(&json!(true)), None),
            ("opts.n[1]", Some(&json!(2)), Some(&json!(3))),
        ]
    );
    assert!(!diff.tools[0].result_differs);
    assert_eq!(
        diff.answer,
        [Words {
            edit: Edit::Added,
            text: "Found.".into()
        }]
    );
    let md = diff
        .with_questions(Some("a | b\nc".into()), None)
        .markdown();
    assert!(md.contains("different threads"), "{md}");
    assert!(md.contains("| Question | a \\| b c |  |"), "{md}");
}
