use std::sync::Arc;
use std::time::Duration;

use art_types::{AgentState, ObservationType, ParsedToolCall, ToolSchema, ToolStatus};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::calculator::CalculatorTool;
use super::current_time::CurrentTimeTool;
use super::*;
use crate::observation::{ObservationManager, ObservationQuery};
use crate::sockets::Sockets;
use crate::storage::memory::MemoryStorage;

struct SlowTool(ToolSchema);

#[async_trait::async_trait]
impl ToolExecutor for SlowTool {
    fn schema(&self) -> &ToolSchema {
        &self.0
    }
    fn timeout(&self) -> Duration {
        Duration::from_millis(50)
    }
    async fn execute(&self, _: &Value, _: &ExecutionContext) -> Result<Value, ToolError> {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(Value::Null)
    }
}

fn slow_tool() -> Arc<SlowTool> {
    Arc::new(SlowTool(ToolSchema {
        name: "slow".into(),
        description: "sleeps".into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        examples: vec![],
    }))
}

fn setup() -> (ToolSystem, Arc<ObservationManager>, ExecutionContext) {
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(Arc::new(CalculatorTool::default()))
        .unwrap();
    registry
        .register(Arc::new(CurrentTimeTool::default()))
        .unwrap();
    registry.register(slow_tool()).unwrap();
    let observations = Arc::new(ObservationManager::new(
        Arc::new(MemoryStorage::new()),
        Arc::new(Sockets::default()),
    ));
    let context = ExecutionContext {
        thread_id: "t".into(),
        trace_id: "r".into(),
        state: Arc::new(Mutex::new(AgentState::default())),
        step_id: None,
        ..ExecutionContext::default()
    };
    (
        ToolSystem::new(registry, Arc::clone(&observations)),
        observations,
        context,
    )
}

fn call(id: &str, tool: &str, arguments: Value) -> ParsedToolCall {
    ParsedToolCall {
        call_id: id.into(),
        tool_name: tool.into(),
        arguments,
        signature: None,
    }
}

fn enabled(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn calls_run_in_order_and_ans_chains_through_state() {
    let (system, observations, ctx) = setup();
    let calls = [
        call("c1", "calculator", json!({"expression": "6 * 7"})),
        call("c2", "calculator", json!({"expression": "ans + 8"})),
    ];
    let results = system
        .execute_tools(&calls, &enabled(&["calculator"]), &ctx, None)
        .await;
    assert_eq!(results[0].output["result"], 42.0);
    assert_eq!(results[1].output["result"], 50.0);
    assert_eq!(results[1].call_id, "c2");
    assert_eq!(ctx.state.lock().await.data["ans"], 50.0);
    let recorded = observations
        .query(&ObservationQuery {
            types: vec![ObservationType::ToolExecution],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].content["arguments"]["expression"], "6 * 7");
    let span = recorded[1].span.as_ref().unwrap();
    assert!(span.end_ms.unwrap() >= span.start_ms);
}

#[tokio::test]
async fn every_failure_is_an_error_result_not_an_abort() {
    let (system, _, ctx) = setup();
    let calls = [
        call("disabled", "current_time", json!({})),
        call("unknown", "rm_rf", json!({})),
        call("invalid", "calculator", json!({"expr": "1"})),
        call("timeout", "slow", json!({})),
        call("div0", "calculator", json!({"expression": "1/0"})),
        call("fine", "calculator", json!({"expression": "1+1"})),
    ];
    let results = system
        .execute_tools(&calls, &enabled(&["calculator", "slow"]), &ctx, None)
        .await;
    let codes: Vec<_> = results
        .iter()
        .map(|r| {
            r.metadata
                .get("errorCode")
                .and_then(Value::as_str)
                .unwrap_or("ok")
        })
        .collect();
    assert_eq!(
        codes,
        [
            "TOOL_DISABLED",
            "TOOL_NOT_FOUND",
            "INVALID_TOOL_ARGUMENTS",
            "TOOL_TIMEOUT",
            "DIVISION_BY_ZERO",
            "ok"
        ]
    );
    assert!(
        results[2].error.as_deref().unwrap().contains("expression"),
        "{:?}",
        results[2].error
    );
    assert_eq!(results[5].status, ToolStatus::Success);
}

#[test]
fn registry_lists_enabled_tools_and_rejects_bad_schemas() {
    let registry = ToolRegistry::new();
    registry
        .register(Arc::new(CalculatorTool::default()))
        .unwrap();
    registry
        .register(Arc::new(CurrentTimeTool::default()))
        .unwrap();
    // Replacing is allowed.
    registry
        .register(Arc::new(CalculatorTool::default()))
        .unwrap();
    assert_eq!(registry.list().len(), 2);
    let only = registry.list_enabled(&enabled(&["current_time", "ghost"]));
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].name, "current_time");

    let mut bad = slow_tool().0.clone();
    bad.input_schema = json!({"type": 12});
    let err = registry.register(Arc::new(SlowTool(bad))).unwrap_err();
    assert!(matches!(err, RegistryError::InvalidSchema { .. }), "{err}");
    let mut unnamed = slow_tool().0.clone();
    unnamed.name = "has space".into();
    assert!(matches!(
        registry.register(Arc::new(SlowTool(unnamed))),
        Err(RegistryError::InvalidName(_))
    ));
}
