use art_types::{FailureCode, FunctionCall, PromptMessage, ReasoningBlock, ToolCallRequest};

use super::*;
use crate::reasoning::provider::CallStage;

fn call(id: &str, name: &str, args: &str) -> ToolCallRequest {
    ToolCallRequest {
        id: id.into(),
        kind: "function".into(),
        function: FunctionCall {
            name: name.into(),
            arguments: args.into(),
        },
        signature: None,
    }
}

fn options() -> CallOptions {
    CallOptions {
        thread_id: "t".into(),
        trace_id: "r".into(),
        stage: CallStage::Synthesis,
        model_id: "claude-test".into(),
        generation: Default::default(),
        tools: Vec::new(),
        response_schema: None,
    }
}

#[test]
fn system_is_top_level_and_turns_alternate_with_tool_results_in_user_turns() {
    let mut assistant = PromptMessage::text(PromptRole::Assistant, "Let me compute.");
    assistant.reasoning = Some(ReasoningBlock {
        text: "need a tool".into(),
        signature: Some("sig-1".into()),
    });
    assistant.tool_calls = vec![
        call("toolu_1", "calculator", r#"{"expression":"2+2"}"#),
        call("toolu_2", "current_time", "not json"),
    ];
    let mut result_1 = PromptMessage::text(PromptRole::ToolResult, "4");
    result_1.tool_call_id = Some("toolu_1".into());
    let mut result_2 = PromptMessage::text(PromptRole::ToolResult, "12:00");
    result_2.tool_call_id = Some("toolu_2".into());
    let prompt = vec![
        PromptMessage::text(PromptRole::System, "Be brief."),
        PromptMessage::text(PromptRole::System, "Use tools."),
        PromptMessage::text(PromptRole::User, "What is 2+2?"),
        PromptMessage::text(PromptRole::User, "And the time?"),
        assistant,
        result_1,
        result_2,
        PromptMessage::text(PromptRole::User, "Thanks"),
    ];
    let (system, turns) = translate(&prompt);
    assert_eq!(system.as_deref(), Some("Be brief.\n\nUse tools."));
    let roles: Vec<&str> = turns.iter().map(|t| t["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        turns[0]["content"].as_array().unwrap().len(),
        2,
        "two user messages merged"
    );
    assert_eq!(
        turns[1]["content"],
        json!([
            { "type": "thinking", "thinking": "need a tool", "signature": "sig-1" },
            { "type": "text", "text": "Let me compute." },
            { "type": "tool_use", "id": "toolu_1", "name": "calculator", "input": { "expression": "2+2" } },
            { "type": "tool_use", "id": "toolu_2", "name": "current_time", "input": {} },
        ])
    );
    assert_eq!(
        turns[2]["content"],
        json!([
            { "type": "tool_result", "tool_use_id": "toolu_1", "content": "4" },
            { "type": "tool_result", "tool_use_id": "toolu_2", "content": "12:00" },
            { "type": "text", "text": "Thanks" },
        ])
    );
}

#[test]
fn unsigned_thinking_is_not_sent_and_an_assistant_start_gets_a_user_turn() {
    let mut assistant = PromptMessage::text(PromptRole::Assistant, "Hello again.");
    assistant.reasoning = Some(ReasoningBlock {
        text: "unsigned".into(),
        signature: None,
    });
    let (_, turns) = translate(&[assistant, PromptMessage::text(PromptRole::User, "Hi")]);
    assert_eq!(turns[0]["role"], "user");
    assert_eq!(
        turns[1]["content"],
        json!([{ "type": "text", "text": "Hello again." }])
    );
}

#[test]
fn thinking_leaves_room_for_the_answer_and_drops_sampling_parameters() {
    let mut opts = options();
    opts.generation.temperature = Some(0.3);
    opts.generation.max_tokens = Some(1000);
    let body = request_body(
        &[PromptMessage::text(PromptRole::User, "Hi")],
        &opts,
        Some(2048),
    );
    assert_eq!(
        body["thinking"],
        json!({ "type": "enabled", "budget_tokens": 2048 })
    );
    assert!(body["max_tokens"].as_u64().unwrap() > 2048);
    assert!(body.get("temperature").is_none());
    let plain = request_body(&[PromptMessage::text(PromptRole::User, "Hi")], &opts, None);
    assert_eq!(
        (plain["max_tokens"].as_u64(), plain["temperature"].as_f64()),
        (Some(1000), Some(0.3))
    );
    assert_eq!(plain["stream"], true);
}

#[test]
fn a_mid_stream_error_event_is_classified() {
    let mut decoder = Decoder::default();
    let events = decoder
        .decode(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
    let [StreamEventKind::Error(e)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(
        (e.class, e.code.clone()),
        (ErrorClass::Transient, FailureCode::ProviderOverloaded)
    );
    assert!(e.message.contains("Overloaded"));
    assert!(
        matches!(decoder.end_of_stream().as_slice(), [StreamEventKind::Error(e)] if e.code == FailureCode::StreamInterrupted)
    );
}

#[test]
fn cached_prompt_tokens_count_as_input_and_are_kept_apart() {
    let mut decoder = Decoder::default();
    decoder.decode(r#"{"type":"message_start","message":{"usage":{"input_tokens":1,"cache_read_input_tokens":400,"cache_creation_input_tokens":20,"output_tokens":1}}}"#);
    decoder.decode(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#);
    let events = decoder.decode(r#"{"type":"message_stop"}"#);
    let meta = events
        .iter()
        .find_map(|e| match e {
            StreamEventKind::Metadata(m) => Some(m.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(
        meta.input_tokens,
        Some(421),
        "1 new + 400 read + 20 written"
    );
    assert_eq!(meta.cached_input_tokens, Some(400));
    assert_eq!(meta.cache_write_tokens, Some(20));
    assert_eq!(meta.output_tokens, Some(7));
}

/// The tool-use exchange of Anthropic's documentation ("Handling tool use and tool
/// result content blocks"), with a failed result as the docs mark it (`is_error`).
fn weather_exchange() -> Vec<PromptMessage> {
    let mut assistant = PromptMessage::text(PromptRole::Assistant, "I'll check the weather.");
    assistant.tool_calls = vec![call(
        "toolu_01A09q90qw90lq917835lq9",
        "get_weather",
        r#"{"location":"San Francisco, CA","unit":"celsius"}"#,
    )];
    let mut failed = PromptMessage::text(
        PromptRole::ToolResult,
        "ConnectionError: the weather service API is not available (HTTP 500)",
    );
    failed.tool_call_id = Some("toolu_01A09q90qw90lq917835lq9".into());
    failed.name = Some("get_weather".into());
    failed.is_error = true;
    vec![
        PromptMessage::text(
            PromptRole::User,
            "What's the weather like in San Francisco?",
        ),
        assistant,
        failed,
    ]
}

#[test]
fn a_failed_tool_result_is_sent_with_is_error_as_the_docs_show() {
    let mut options = options();
    options.tools = vec![art_types::ToolSchema {
        name: "get_weather".into(),
        description: "Get the current weather in a given location".into(),
        input_schema: json!({ "type": "object", "properties": { "location": { "type": "string" } }, "required": ["location"] }),
        output_schema: None,
        examples: Vec::new(),
    }];
    let body = request_body(&weather_exchange(), &options, None);
    assert_eq!(
        body["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "What's the weather like in San Francisco?" }] },
            { "role": "assistant", "content": [
                { "type": "text", "text": "I'll check the weather." },
                { "type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                  "input": { "location": "San Francisco, CA", "unit": "celsius" } },
            ] },
            { "role": "user", "content": [{
                "type": "tool_result",
                "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                "content": "ConnectionError: the weather service API is not available (HTTP 500)",
                "is_error": true,
            }] },
        ])
    );
    assert_eq!(body["tools"][0]["name"], "get_weather");
}

#[test]
fn a_request_without_tools_carries_earlier_calls_as_text() {
    // "Requests which include `tool_use` or `tool_result` blocks must define tools."
    let body = request_body(&weather_exchange(), &options(), None);
    assert!(body.get("tools").is_none());
    let text = body["messages"].to_string();
    assert!(
        !text.contains("tool_use") && !text.contains("tool_result"),
        "{text}"
    );
    assert!(text.contains("toolu_01A09q90qw90lq917835lq9"), "{text}");
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
}
