//! ToolSystem: runs a plan's tool calls in order. Every problem (disabled, unknown,
//! invalid arguments, failure, timeout) becomes an error result the model can read;
//! nothing aborts the run. Each call is recorded as a TOOL_EXECUTION observation.

use std::sync::Arc;
use std::time::Instant;

use art_types::record::ToolExecutionContent;
use art_types::{ObservationType, ParsedToolCall, Phase, SpanInfo, ToolResult, ToolStatus};
use serde_json::{Value, json};

use super::{ExecutionContext, ToolError, ToolRegistry};
use crate::clock;
use crate::observation::{NewObservation, ObservationManager};

/// Executes tool calls.
pub struct ToolSystem {
    registry: Arc<ToolRegistry>,
    observations: Arc<ObservationManager>,
}

impl ToolSystem {
    /// A tool system over `registry`, recording into `observations`.
    pub fn new(registry: Arc<ToolRegistry>, observations: Arc<ObservationManager>) -> Self {
        Self {
            registry,
            observations,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// Run `calls` one after the other; results come back in the same order.
    pub async fn execute_tools(
        &self,
        calls: &[ParsedToolCall],
        enabled: &[String],
        context: &ExecutionContext,
        parent_span_id: Option<&str>,
    ) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let start_ms = clock::now_ms();
            let started = Instant::now();
            let outcome = self.run_one(call, enabled, context).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let mut result = to_result(call, outcome, duration_ms);
            // A tool may give the model less than it returned (an MCP image as a note);
            // the trace keeps all of it.
            let mut whole = None;
            if let Some(entry) = self.registry.entry(&call.tool_name) {
                if result.status == ToolStatus::Success
                    && let Some(shown) = entry.tool.for_model(&result.output)
                {
                    whole = Some(std::mem::replace(&mut result.output, shown));
                }
                if let (Some(origin), Value::Object(metadata)) =
                    (entry.tool.origin(), &mut result.metadata)
                {
                    metadata.insert(
                        art_types::mcp::ORIGIN_KEY.into(),
                        serde_json::to_value(origin).unwrap_or_default(),
                    );
                }
            }
            self.record(&result, whole, call, context, parent_span_id, start_ms)
                .await;
            results.push(result);
        }
        results
    }

    /// A call that does not run (denied): its error result, recorded like an execution
    /// so cards and exports show it.
    pub async fn refuse(
        &self,
        call: &ParsedToolCall,
        error: ToolError,
        context: &ExecutionContext,
        parent_span_id: Option<&str>,
    ) -> ToolResult {
        let start_ms = clock::now_ms();
        let mut result = to_result(call, Err(error), 0);
        if let (Some(entry), Value::Object(metadata)) =
            (self.registry.entry(&call.tool_name), &mut result.metadata)
            && let Some(origin) = entry.tool.origin()
        {
            metadata.insert(
                art_types::mcp::ORIGIN_KEY.into(),
                serde_json::to_value(origin).unwrap_or_default(),
            );
        }
        self.record(&result, None, call, context, parent_span_id, start_ms)
            .await;
        result
    }

    /// A call answered without running (from a replay's record): `result` recorded
    /// like an execution, so cards and exports show it.
    pub async fn answered(
        &self,
        call: &ParsedToolCall,
        result: &ToolResult,
        context: &ExecutionContext,
        parent_span_id: Option<&str>,
    ) {
        self.record(result, None, call, context, parent_span_id, clock::now_ms())
            .await;
    }

    async fn run_one(
        &self,
        call: &ParsedToolCall,
        enabled: &[String],
        context: &ExecutionContext,
    ) -> Result<Value, ToolError> {
        if !enabled.contains(&call.tool_name) {
            let known = self.registry.contains(&call.tool_name);
            return Err(if known {
                ToolError::new(
                    "TOOL_DISABLED",
                    format!(
                        "the tool `{}` is not enabled for this thread",
                        call.tool_name
                    ),
                )
            } else {
                not_found(&call.tool_name)
            });
        }
        let entry = self
            .registry
            .entry(&call.tool_name)
            .ok_or_else(|| not_found(&call.tool_name))?;
        self.registry
            .check_arguments(&call.tool_name, &call.arguments)?;
        let context = ExecutionContext {
            call_id: call.call_id.clone(),
            user_time: Arc::default(),
            ..context.clone()
        };
        super::user_time::run_within(&*entry.tool, &call.tool_name, &call.arguments, &context).await
    }

    async fn record(
        &self,
        result: &ToolResult,
        whole: Option<Value>,
        call: &ParsedToolCall,
        context: &ExecutionContext,
        parent_span_id: Option<&str>,
        start_ms: i64,
    ) {
        let content = json!(ToolExecutionContent {
            call_id: result.call_id.clone(),
            tool_name: result.tool_name.clone(),
            arguments: call.arguments.clone(),
            status: result.status,
            output: result.output.clone(),
            error: result.error.clone(),
            result: whole,
            step_id: context.step_id.clone(),
        });
        let mut new = NewObservation::new(
            &context.thread_id,
            &context.trace_id,
            ObservationType::ToolExecution,
            content,
        );
        new.title = Some(format!("Tool: {}", result.tool_name));
        new.metadata = result.metadata.clone();
        new.span = Some(SpanInfo {
            phase: Phase::Execution,
            span_id: clock::new_id(),
            parent_span_id: parent_span_id.map(str::to_owned),
            start_ms,
            end_ms: Some(clock::now_ms()),
        });
        if let Err(e) = self.observations.record(new).await {
            tracing::warn!(tool = %result.tool_name, "could not record the tool execution: {e}");
        }
    }
}

/// No such tool: for an MCP tool, say that its server is what is missing.
fn not_found(name: &str) -> ToolError {
    match art_types::mcp::server_of(name) {
        Some(server) => ToolError::new(
            "TOOL_UNAVAILABLE",
            format!(
                "`{name}` is a tool of the MCP server `{server}`, which is not running \
                 (disabled, removed, or it failed to start)"
            ),
        ),
        None => ToolError::new("TOOL_NOT_FOUND", format!("there is no tool named `{name}`")),
    }
}

fn to_result(
    call: &ParsedToolCall,
    outcome: Result<Value, ToolError>,
    duration_ms: u64,
) -> ToolResult {
    match outcome {
        Ok(output) => ToolResult {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            status: ToolStatus::Success,
            output,
            error: None,
            metadata: json!({ ToolResult::DURATION_MS: duration_ms }),
        },
        Err(e) => ToolResult {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            status: ToolStatus::Error,
            output: Value::Null,
            error: Some(e.message),
            metadata: json!({
                ToolResult::DURATION_MS: duration_ms,
                ToolResult::ERROR_CODE: e.code,
            }),
        },
    }
}
