use serde_json::json;

use super::*;

#[test]
fn json_object_in_fences_with_prose_and_thinking() {
    let raw = "<think>Need to add.</think>Sure! Here is my plan:\n```json\n{\n  \"title\": \"Sum\",\n  \"intent\": \"Add two numbers\",\n  \"plan\": [\"Call the calculator\", {\"description\": \"Report\"}],\n  \"toolCalls\": [{\"callId\": \"c1\", \"toolName\": \"calculator\", \"arguments\": {\"expression\": \"2+2\"}}]\n}\n```\nThanks.";
    let out = parse_planning(raw);
    assert_eq!(out.intent.as_deref(), Some("Add two numbers"));
    assert_eq!(out.title.as_deref(), Some("Sum"));
    assert_eq!(
        out.plan.as_deref(),
        Some("1. Call the calculator\n2. Report")
    );
    assert_eq!(out.thinking.as_deref(), Some("Need to add."));
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].call_id, "c1");
    assert_eq!(out.tool_calls[0].arguments, json!({"expression": "2+2"}));
    assert!(out.problems.is_empty());
}

#[test]
fn bare_json_with_openai_shaped_calls() {
    let raw = r#"Plan follows {"intent": "time", "plan": "Ask the clock", "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "current_time", "arguments": "{\"timezone\": \"UTC\"}"}}]} done"#;
    let out = parse_planning(raw);
    assert_eq!(out.tool_calls[0].call_id, "call_9");
    assert_eq!(out.tool_calls[0].tool_name, "current_time");
    assert_eq!(out.tool_calls[0].arguments, json!({"timezone": "UTC"}));
}

#[test]
fn braces_inside_strings_do_not_confuse_the_scanner() {
    let raw = r#"{"intent": "explain {braces} and \"quotes\"", "plan": "x", "toolCalls": []}"#;
    let out = parse_planning(raw);
    assert_eq!(
        out.intent.as_deref(),
        Some("explain {braces} and \"quotes\"")
    );
    assert!(out.tool_calls.is_empty());
}

#[test]
fn section_format_with_spacing_case_and_indentation() {
    let raw = "**Intent:** Convert units\n\nplan:\n1. Multiply\n   - by 2.54\n2. Answer\n\nTool Calls:\n```json\n[{\"toolName\": \"calculator\", \"arguments\": {\"expression\": \"3*2.54\"}}]\n```";
    let out = parse_planning(raw);
    assert_eq!(out.intent.as_deref(), Some("Convert units"));
    assert_eq!(
        out.plan.as_deref(),
        Some("1. Multiply\n   - by 2.54\n2. Answer")
    );
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].call_id, "call_1");
}

#[test]
fn sections_without_tool_calls() {
    let out = parse_planning("Intent: greet\nPlan: say hello\nTool Calls: []");
    assert_eq!(out.intent.as_deref(), Some("greet"));
    assert!(out.tool_calls.is_empty());
    assert!(out.problems.is_empty());
}

#[test]
fn malformed_calls_give_no_calls_and_a_problem() {
    let bad_args = r#"{"intent": "x", "toolCalls": [{"toolName": "calculator", "arguments": {"expression": "1"}}, {"id": "2", "function": {"name": "calculator", "arguments": "{not json"}}]}"#;
    let out = parse_planning(bad_args);
    assert!(out.tool_calls.is_empty());
    assert_eq!(out.problems.len(), 1);
    assert!(
        out.problems[0].contains("tool call 2"),
        "{:?}",
        out.problems
    );

    let not_array = parse_planning("Intent: x\nTool Calls: {\"a\": 1}");
    assert!(not_array.tool_calls.is_empty());
    assert!(!not_array.problems.is_empty());
}

#[test]
fn garbage_is_reported_not_panicked_on() {
    for raw in [
        "",
        "}{",
        "{{{{",
        "```",
        "Intent:",
        "\u{0}\u{ffff}",
        "<think>",
        "[1,2,3]",
    ] {
        let out = parse_planning(raw);
        assert!(out.tool_calls.is_empty());
    }
    assert!(!parse_planning("just prose").problems.is_empty());
}

#[test]
fn synthesis_is_trimmed_and_thinking_removed() {
    let (text, thinking) = parse_synthesis("  <think>why</think>\n The answer is 4. \n");
    assert_eq!(text, "The answer is 4.");
    assert_eq!(thinking.as_deref(), Some("why"));
}

/// A small model out of tokens mid-plan: the JSON is cut off. Nothing of it is a plan —
/// not its fragments read as sections (`Plan: "string",` shown as the plan before), not
/// an inner object.
#[test]
fn a_json_plan_cut_off_is_unreadable_and_yields_nothing() {
    for raw in [
        r#"{"title": "Secret", "intent": "find it", "steps": [{"id": "1", "description": "The secret word is PINEAPPLE", "tools": []}, {"id": "2", "descr"#,
        "```json\n{\"title\": \"x\",\n \"Plan\": \"string\",\n \"steps\": [",
        "  [{\"id\": \"1\"",
    ] {
        let out = parse_planning(raw);
        assert!(out.unreadable, "{raw}");
        assert!(
            out.steps.is_empty() && out.title.is_none() && out.plan.is_none(),
            "{out:?}"
        );
        assert!(out.tool_calls.is_empty());
        assert_eq!(out.problems.len(), 1, "{out:?}");
    }
    // Prose and sections are still read as before.
    let sections = parse_planning("Intent: add\nPlan:\n1. add them");
    assert!(!sections.unreadable && !sections.steps.is_empty());
}
