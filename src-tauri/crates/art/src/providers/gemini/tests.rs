use art_types::{FailureCode, FunctionCall, PromptMessage, ToolCallRequest, ToolSchema};

use super::*;
use crate::reasoning::provider::CallStage;

fn config() -> GeminiConfig {
    GeminiConfig {
        base_url: DEFAULT_BASE_URL.into(),
        api_key: Secret::new("k"),
        include_thoughts: true,
        thinking_budget: None,
        http: HttpOptions::default(),
    }
}

#[test]
fn roles_system_instruction_calls_with_signatures_and_responses() {
    let mut assistant = PromptMessage::text(PromptRole::Assistant, "");
    assistant.tool_calls = vec![ToolCallRequest {
        id: "fc-1".into(),
        kind: "function".into(),
        function: FunctionCall {
            name: "calculator".into(),
            arguments: r#"{"expression":"2+2"}"#.into(),
        },
        signature: Some("sig-abc".into()),
    }];
    let mut result = PromptMessage::text(PromptRole::ToolResult, "4");
    result.tool_call_id = Some("fc-1".into());
    result.name = Some("calculator".into());
    let mut object_result = PromptMessage::text(PromptRole::ToolResult, r#"{"time":"12:00"}"#);
    object_result.name = Some("current_time".into());
    let prompt = vec![
        PromptMessage::text(PromptRole::System, "Be brief."),
        PromptMessage::text(PromptRole::User, "2+2?"),
        assistant,
        result,
        object_result,
    ];
    let (system, contents) = translate(&prompt);
    assert_eq!(system, Some(json!({ "parts": [{ "text": "Be brief." }] })));
    assert_eq!(
        contents,
        json!([
            { "role": "user", "parts": [{ "text": "2+2?" }] },
            { "role": "model", "parts": [{
                "functionCall": { "id": "fc-1", "name": "calculator", "args": { "expression": "2+2" } },
                "thoughtSignature": "sig-abc"
            }] },
            { "role": "user", "parts": [
                { "functionResponse": { "id": "fc-1", "name": "calculator", "response": { "result": 4 } } },
                { "functionResponse": { "id": null, "name": "current_time", "response": { "time": "12:00" } } }
            ] }
        ])
        .as_array()
        .unwrap()
        .clone()
    );
}

#[test]
fn generation_thinking_and_tools_use_gemini_names() {
    let mut options = CallOptions {
        thread_id: "t".into(),
        trace_id: "r".into(),
        stage: CallStage::Planning,
        model_id: "gemini-test".into(),
        generation: Default::default(),
        tools: vec![ToolSchema {
            name: "calculator".into(),
            description: "Math".into(),
            input_schema: json!({ "type": "object", "additionalProperties": false }),
            output_schema: None,
            examples: Vec::new(),
        }],
        response_schema: None,
    };
    options.generation.max_tokens = Some(500);
    options.generation.top_p = Some(0.9);
    let mut cfg = config();
    cfg.thinking_from(&serde_json::from_value(json!({ "thinking_budget": 1024 })).unwrap());
    let body = request_body(
        &[PromptMessage::text(PromptRole::User, "Hi")],
        &options,
        &cfg,
    );
    assert_eq!(
        body["generationConfig"],
        json!({ "maxOutputTokens": 500, "topP": 0.9, "thinkingConfig": { "includeThoughts": true, "thinkingBudget": 1024 } })
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["additionalProperties"],
        false
    );
}

/// Structured output as Gemini's documentation words it: a JSON MIME type and the
/// schema as `responseJsonSchema` (full JSON Schema), beside the other settings.
#[test]
fn a_response_schema_asks_for_json_of_that_shape() {
    let schema = crate::reasoning::plan_schema::plan_schema(&["calculator".to_owned()]);
    let options = CallOptions {
        thread_id: "t".into(),
        trace_id: "r".into(),
        stage: CallStage::Planning,
        model_id: "gemini-test".into(),
        generation: Default::default(),
        tools: Vec::new(),
        response_schema: Some(schema.clone()),
    };
    let body = request_body(
        &[PromptMessage::text(PromptRole::User, "Hi")],
        &options,
        &config(),
    );
    assert_eq!(
        body["generationConfig"],
        json!({
            "responseMimeType": "application/json",
            "responseJsonSchema": schema,
            "thinkingConfig": { "includeThoughts": true },
        })
    );
    assert!(body.get("tools").is_none());
}

#[test]
fn usage_is_cumulative_and_the_end_needs_a_finish_reason() {
    let mut decoder = Decoder::default();
    decoder.decode(r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1}}"#);
    assert!(
        matches!(decoder.end_of_stream().as_slice(), [StreamEventKind::Error(e)] if e.code == FailureCode::StreamInterrupted)
    );
    decoder.decode(r#"{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2}}"#);
    let end = decoder.end_of_stream();
    let [StreamEventKind::Metadata(meta), StreamEventKind::End] = end.as_slice() else {
        panic!("{end:?}")
    };
    assert_eq!((meta.input_tokens, meta.output_tokens), (Some(5), Some(2)));
    assert_eq!(meta.cached_input_tokens, None);
    let mut cached = Decoder::default();
    cached.decode(r#"{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":500,"cachedContentTokenCount":480,"candidatesTokenCount":2}}"#);
    let end = cached.end_of_stream();
    let [StreamEventKind::Metadata(meta), StreamEventKind::End] = end.as_slice() else {
        panic!("{end:?}")
    };
    assert_eq!(
        (meta.input_tokens, meta.cached_input_tokens),
        (Some(500), Some(480))
    );
    assert_eq!(meta.stop_reason.as_deref(), Some("STOP"));
}

#[test]
fn errors_and_blocked_prompts_end_the_stream() {
    let mut decoder = Decoder::default();
    let events = decoder.decode(
        r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
    );
    assert!(
        matches!(events.as_slice(), [StreamEventKind::Error(e)] if e.class == ErrorClass::Transient && e.message.contains("overloaded"))
    );
    // A proxy's error without `status`: the message alone, not ": message".
    let events = Decoder::default().decode(r#"{"error":{"code":400,"message":"Bad model."}}"#);
    let [StreamEventKind::Error(e)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert_eq!(e.message, "Bad model.");
    let events = decoder.decode(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#);
    assert!(
        matches!(events.as_slice(), [StreamEventKind::Error(e)] if e.code == FailureCode::PromptBlocked)
    );
}
