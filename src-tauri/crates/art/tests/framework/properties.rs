//! Property tests for the parsers that read what models write: the `<think>` tag
//! matcher gives the same thinking and answer whatever the chunking, the planning parser
//! never panics and finds a plan wrapped in prose, and the calculator answers or refuses
//! any expression without panicking.

use art::reasoning::output_parser::parse_planning;
use art::reasoning::think_tags::{Segment, ThinkTagMatcher, split};
use art::tools::calculator::evaluate;
use proptest::prelude::*;

/// Thinking and answer text of segments, each concatenated.
fn texts(segments: &[Segment]) -> (String, String) {
    let (mut thinking, mut text) = (String::new(), String::new());
    for s in segments {
        match s {
            Segment::Thinking(t) => thinking.push_str(t),
            Segment::Text(t) => text.push_str(t),
        }
    }
    (thinking, text)
}

/// Text made of tags, tag fragments and ordinary (also multibyte) words.
fn tagged_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<think>".to_owned()),
        Just("</think>".to_owned()),
        Just("<thi".to_owned()),
        Just("</".to_owned()),
        Just("<".to_owned()),
        "[a-zé🌍 ]{0,6}",
    ];
    proptest::collection::vec(piece, 0..16).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn think_tags_split_the_same_whatever_the_chunks(
        text in tagged_text(),
        cuts in proptest::collection::vec(0usize..200, 0..10),
    ) {
        let whole = texts(&split(&text));
        let mut bounds: Vec<usize> = cuts
            .into_iter()
            .map(|c| c.min(text.len()))
            .filter(|c| text.is_char_boundary(*c))
            .collect();
        bounds.sort_unstable();
        let mut matcher = ThinkTagMatcher::new();
        let mut segments = Vec::new();
        let mut from = 0;
        for cut in bounds.into_iter().chain([text.len()]) {
            segments.extend(matcher.push(&text[from..cut]));
            from = cut;
        }
        segments.extend(matcher.finish());
        prop_assert_eq!(texts(&segments), whole.clone());
        // Nothing is lost but tags (a stray closing tag stays as text).
        let (thinking, answer) = whole;
        let untagged = text.replace("<think>", "").replace("</think>", "");
        prop_assert!(thinking.len() + answer.len() >= untagged.len());
        prop_assert!(thinking.len() + answer.len() <= text.len());
    }

    #[test]
    fn the_planning_parser_never_panics(raw in "\\PC*") {
        let out = parse_planning(&raw);
        // Whatever it found or not, the call returns; problems are words, not panics.
        prop_assert!(out.problems.iter().all(|p| !p.is_empty()));
    }

    #[test]
    fn a_plan_wrapped_in_prose_is_found(
        before in "[a-zA-Z .,:]{0,60}",
        after in "[a-zA-Z .,:]{0,60}",
        expression in "[0-9]{1,4} [+*-] [0-9]{1,4}",
    ) {
        let plan = serde_json::json!({
            "intent": "compute", "plan": ["calculate"],
            "toolCalls": [{ "callId": "c1", "toolName": "calculator", "arguments": { "expression": expression } }],
        });
        let out = parse_planning(&format!("{before}\n```json\n{plan}\n```\n{after}"));
        prop_assert_eq!(out.intent.as_deref(), Some("compute"));
        prop_assert_eq!(out.tool_calls.len(), 1);
        prop_assert_eq!(out.tool_calls[0].arguments["expression"].as_str(), Some(expression.as_str()));
    }

    #[test]
    fn the_calculator_answers_or_refuses_anything(expression in "\\PC{0,40}", ans in proptest::option::of(-1e9f64..1e9)) {
        if let Ok(value) = evaluate(&expression, ans) {
            prop_assert!(value.is_finite(), "{expression} gave {value}");
        }
    }
}
