//! What a run looks like while it happens, folded from the backend's events: the plan
//! card, live thinking, one card per tool call, the streaming answer, and how it ended.
//! Pure data (no DOM), so it is unit-tested natively.

use art_types::observation::plan_steps;
use art_types::{
    ExecutionMetadata, FailureCode, Observation, ObservationType, StreamEventKind, TokenType,
    ToolStatus,
};
use serde_json::Value;

/// The plan, as soon as planning finishes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanCard {
    /// Short title of the task.
    pub title: Option<String>,
    /// What the agent understood.
    pub intent: Option<String>,
    /// Numbered steps.
    pub steps: Vec<String>,
}

/// Where a tool call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Planned or running.
    Running,
    /// Returned output.
    Ok,
    /// Failed, refused or timed out.
    Error,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCard {
    /// Call id.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Arguments.
    pub arguments: Value,
    /// Where it is.
    pub state: ToolState,
    /// Output (when ok).
    pub output: Option<Value>,
    /// Error (when failed).
    pub error: Option<String>,
    /// How long it ran.
    pub duration_ms: Option<i64>,
    /// The MCP server it belongs to, if any.
    pub server: Option<String>,
    /// Images in its whole result (an MCP tool's), as `(MIME type, base64 data)`.
    pub images: Vec<(String, String)>,
}

/// The images of an MCP result's `content`: only `image/…` types with base64 data, so
/// the `data:` URL made of them can be nothing but an image.
pub fn result_images(result: &Value) -> Vec<(String, String)> {
    let Some(items) = result.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|i| i["type"] == "image")
        .filter_map(|i| {
            let mime = i.get("mimeType")?.as_str()?;
            let data = i.get("data")?.as_str()?;
            let mime_ok = mime.strip_prefix("image/").is_some_and(|sub| {
                !sub.is_empty()
                    && sub
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            });
            let data_ok = data
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c));
            (mime_ok && data_ok).then(|| (mime.to_owned(), data.to_owned()))
        })
        .collect()
}

/// A run of one thread, live.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// Thread.
    pub thread_id: String,
    /// Run id.
    pub trace_id: String,
    /// Plan, once known.
    pub plan: Option<PlanCard>,
    /// Thinking so far (all stages).
    pub thinking: String,
    /// The answer so far.
    pub answer: String,
    /// The model has sent something (planning output included).
    pub heard: bool,
    /// Tool calls in plan order.
    pub tools: Vec<ToolCard>,
    /// The error that ended (or hurt) the run: code and message.
    pub error: Option<(FailureCode, String)>,
    /// The run has ended.
    pub finished: bool,
    /// Figures of the finished run.
    pub metadata: Option<ExecutionMetadata>,
    /// Earlier messages left out of the prompt to fit the model's context window.
    pub history_left_out: u32,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl RunView {
    /// A run that has just been started.
    pub fn new(thread_id: &str, trace_id: &str) -> Self {
        Self {
            thread_id: thread_id.into(),
            trace_id: trace_id.into(),
            plan: None,
            thinking: String::new(),
            answer: String::new(),
            heard: false,
            tools: Vec::new(),
            error: None,
            finished: false,
            metadata: None,
            history_left_out: 0,
        }
    }

    /// Fold a batch of stream events in.
    pub fn apply_stream(&mut self, events: &[StreamEventKind]) {
        for event in events {
            if matches!(event, StreamEventKind::Token { .. }) {
                self.heard = true;
            }
            match event {
                StreamEventKind::Token { text, token_type } if token_type.is_thinking() => {
                    self.thinking.push_str(text);
                }
                // Planning output is JSON for the plan card, not the answer.
                StreamEventKind::Token {
                    text,
                    token_type: TokenType::FinalSynthesisLlmResponse | TokenType::LlmResponse,
                } => self.answer.push_str(text),
                _ => {}
            }
        }
    }

    /// A copy without the answer text (for views that show the rest: the answer can be
    /// long, and streams).
    pub fn without_answer(&self) -> Self {
        Self {
            thread_id: self.thread_id.clone(),
            trace_id: self.trace_id.clone(),
            plan: self.plan.clone(),
            thinking: self.thinking.clone(),
            answer: String::new(),
            heard: self.heard,
            tools: self.tools.clone(),
            error: self.error.clone(),
            finished: self.finished,
            metadata: self.metadata.clone(),
            history_left_out: self.history_left_out,
        }
    }

    /// What the run is doing now, in a few words (shown while it runs).
    pub fn progress(&self) -> String {
        if let Some(tool) = self.tools.iter().find(|t| t.state == ToolState::Running) {
            return format!("Running the {} tool…", tool.tool_name);
        }
        match (self.plan.is_some(), self.heard) {
            (true, _) => "Writing the answer…".into(),
            (false, true) => "Planning…".into(),
            (false, false) => {
                "Waiting for the model… (a local model is loaded on first use, which can take a while)"
                    .into()
            }
        }
    }

    fn tool(&mut self, content: &Value) -> &mut ToolCard {
        let call_id = text(content, "callId").unwrap_or_default();
        let index = match self.tools.iter().position(|t| t.call_id == call_id) {
            Some(i) => i,
            None => {
                self.tools.push(ToolCard {
                    call_id,
                    tool_name: text(content, "toolName").unwrap_or_default(),
                    arguments: content.get("arguments").cloned().unwrap_or(Value::Null),
                    state: ToolState::Running,
                    output: None,
                    error: None,
                    duration_ms: None,
                    server: None,
                    images: Vec::new(),
                });
                self.tools.len() - 1
            }
        };
        &mut self.tools[index]
    }

    /// Fold an observation in.
    pub fn apply_observation(&mut self, o: &Observation) {
        let c = &o.content;
        match o.kind {
            ObservationType::Title => {
                self.plan.get_or_insert_with(PlanCard::default).title = text(c, "title");
            }
            ObservationType::Plan => {
                let plan = self.plan.get_or_insert_with(PlanCard::default);
                plan.intent = text(c, "intent").or(plan.intent.take());
                plan.steps = plan_steps(c);
            }
            ObservationType::Intent => {
                self.plan.get_or_insert_with(PlanCard::default).intent = text(c, "intent");
            }
            ObservationType::ToolCall => {
                self.tool(c);
            }
            ObservationType::ToolExecution => {
                let duration = o.span.as_ref().and_then(|s| Some(s.end_ms? - s.start_ms));
                let card = self.tool(c);
                card.state = match c
                    .get("status")
                    .and_then(|s| serde_json::from_value::<ToolStatus>(s.clone()).ok())
                {
                    Some(ToolStatus::Success) => ToolState::Ok,
                    _ => ToolState::Error,
                };
                card.output = c.get("output").filter(|v| !v.is_null()).cloned();
                card.error = text(c, "error");
                card.duration_ms = duration;
                card.server = art_types::mcp::McpOrigin::of(&o.metadata).map(|m| m.server);
                card.images = c.get("result").map(result_images).unwrap_or_default();
            }
            ObservationType::FinalResponse => {
                let left_out = c
                    .pointer("/metadata/historyLeftOut")
                    .and_then(Value::as_u64);
                self.history_left_out =
                    left_out.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
            }
            // A planning output that is not a plan is an answer given straight away: the
            // trace keeps the note, the card shows no error.
            ObservationType::Error if o.metadata["recoverable"] == true => {}
            ObservationType::Error | ObservationType::LlmStreamError => {
                let code = FailureCode::parse(text(c, "code").as_deref().unwrap_or("ERROR"));
                let message = text(c, "message").unwrap_or_else(|| o.title.clone());
                // A recoverable planning problem does not end the run; keep the worst.
                if self.error.is_none() || o.kind == ObservationType::Error {
                    self.error = Some((code, message));
                }
            }
            _ => {}
        }
    }

    /// The run ended.
    pub fn finish(&mut self, metadata: Option<ExecutionMetadata>) {
        self.finished = true;
        for tool in &mut self.tools {
            if tool.state == ToolState::Running {
                tool.state = ToolState::Error;
                tool.error
                    .get_or_insert_with(|| "not run: the run ended first".into());
            }
        }
        if let Some(error) = metadata.as_ref().and_then(|m| m.error.as_ref()) {
            self.error = Some((error.code.clone(), error.message.clone()));
        }
        if let Some(m) = &metadata {
            self.history_left_out = m.history_left_out;
        }
        self.metadata = metadata;
    }
}

/// Plain words for an error code, with what to do next.
pub fn advice(code: &FailureCode, message: &str) -> String {
    let hint = match code {
        FailureCode::OllamaNotRunning => "Start Ollama with `ollama serve`, then try again.",
        FailureCode::ApiKeyMissing => "Add the provider's API key under Providers.",
        FailureCode::AuthenticationFailed => "Check the API key under Providers.",
        FailureCode::RateLimited => "The provider is rate-limiting: wait a moment and try again.",
        FailureCode::QuotaExhausted => {
            "The account's quota is used up: check billing with the provider."
        }
        FailureCode::ContextLengthExceeded => {
            "Lower the history limit in the thread settings, or start a new thread."
        }
        FailureCode::NotFound => {
            "Check the model name in the thread settings (for Ollama: `ollama pull <model>`)."
        }
        FailureCode::IdleTimeout
        | FailureCode::StreamInterrupted
        | FailureCode::ProviderUnavailable => "The provider stopped answering: try again.",
        _ => "",
    };
    // The backend's own message may already say what to do.
    let already_said = *code == FailureCode::OllamaNotRunning && message.contains("ollama serve");
    if hint.is_empty() || already_said {
        message.to_owned()
    } else {
        format!("{message} — {hint}")
    }
}

#[cfg(test)]
mod tests {
    use art_types::SpanInfo;
    use serde_json::json;

    use super::*;

    fn obs(kind: ObservationType, content: Value) -> Observation {
        Observation {
            id: "o".into(),
            thread_id: "t".into(),
            trace_id: "r".into(),
            timestamp: 1,
            kind,
            title: "title".into(),
            content,
            metadata: Value::Null,
            span: None,
        }
    }

    #[test]
    fn an_mcp_call_names_its_server_and_brings_its_images() {
        let mut run = RunView::new("t", "r");
        let mut done = obs(
            ObservationType::ToolExecution,
            json!({ "callId": "c1", "toolName": "everything__get-tiny-image", "status": "success",
                    "output": "[image: image/png, 9 bytes]",
                    "result": { "content": [{ "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=" }] } }),
        );
        done.metadata = json!({ "durationMs": 5, "mcp": { "server": "everything", "transport": "stdio", "tool": "get-tiny-image" } });
        run.apply_observation(&done);
        let card = &run.tools[0];
        assert_eq!(card.server.as_deref(), Some("everything"));
        assert_eq!(card.images.len(), 1);
        assert_eq!(card.output, Some(json!("[image: image/png, 9 bytes]")));
    }

    #[test]
    fn only_real_images_become_data_urls() {
        let result = json!({ "content": [
            { "type": "text", "text": "Here:" },
            { "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=" },
            { "type": "image", "mimeType": "text/html", "data": "PHNjcmlwdD4=" },
            { "type": "image", "mimeType": "image/png", "data": "\"><script>" },
        ]});
        assert_eq!(
            result_images(&result),
            [("image/png".to_owned(), "iVBORw0KGgo=".to_owned())]
        );
        assert!(result_images(&json!({})).is_empty());
    }

    #[test]
    fn progress_says_what_the_run_waits_for() {
        let mut run = RunView::new("t", "r");
        assert!(
            run.progress().starts_with("Waiting for the model"),
            "{}",
            run.progress()
        );
        run.apply_stream(&[StreamEventKind::Token {
            text: "{\"plan".into(),
            token_type: TokenType::AgentThoughtLlmResponse,
        }]);
        assert_eq!(run.progress(), "Planning…");
        run.apply_observation(&obs(ObservationType::Plan, json!({ "plan": ["add"] })));
        run.apply_observation(&obs(
            ObservationType::ToolCall,
            json!({ "callId": "c1", "toolName": "calculator", "arguments": {} }),
        ));
        assert_eq!(run.progress(), "Running the calculator tool…");
        run.apply_observation(&obs(
            ObservationType::ToolExecution,
            json!({ "callId": "c1", "toolName": "calculator", "status": "success", "output": 4 }),
        ));
        assert_eq!(run.progress(), "Writing the answer…");
    }

    #[test]
    fn a_run_folds_into_plan_tools_thinking_and_answer() {
        let mut run = RunView::new("t", "r");
        run.apply_observation(&obs(ObservationType::Title, json!({ "title": "Sum" })));
        run.apply_observation(&obs(
            ObservationType::Plan,
            json!({ "intent": "add", "plan": "1. calculate\n2) answer" }),
        ));
        run.apply_observation(&obs(ObservationType::ToolCall, json!({ "callId": "c1", "toolName": "calculator", "arguments": { "expression": "2+2" } })));
        assert_eq!(run.tools[0].state, ToolState::Running);
        let mut done = obs(
            ObservationType::ToolExecution,
            json!({ "callId": "c1", "toolName": "calculator", "status": "success", "output": { "result": 4 } }),
        );
        done.span = Some(SpanInfo {
            phase: art_types::Phase::Execution,
            span_id: "s".into(),
            parent_span_id: None,
            start_ms: 10,
            end_ms: Some(13),
        });
        run.apply_observation(&done);
        run.apply_stream(&[
            StreamEventKind::Token {
                text: "{\"plan\"".into(),
                token_type: TokenType::AgentThoughtLlmResponse,
            },
            StreamEventKind::Token {
                text: "hmm".into(),
                token_type: TokenType::FinalSynthesisLlmThinking,
            },
            StreamEventKind::Token {
                text: "It is ".into(),
                token_type: TokenType::FinalSynthesisLlmResponse,
            },
            StreamEventKind::Token {
                text: "4.".into(),
                token_type: TokenType::FinalSynthesisLlmResponse,
            },
        ]);
        let plan = run.plan.clone().unwrap();
        assert_eq!(
            (plan.title.as_deref(), plan.intent.as_deref()),
            (Some("Sum"), Some("add"))
        );
        assert_eq!(plan.steps, ["calculate", "answer"]);
        assert_eq!(run.tools.len(), 1);
        assert_eq!(
            (run.tools[0].state, run.tools[0].duration_ms),
            (ToolState::Ok, Some(3))
        );
        assert_eq!(run.tools[0].output, Some(json!({ "result": 4 })));
        assert_eq!(
            (run.thinking.as_str(), run.answer.as_str()),
            ("hmm", "It is 4.")
        );
    }

    #[test]
    fn history_left_out_is_read_from_the_final_response() {
        let mut run = RunView::new("t", "r");
        run.apply_observation(&obs(
            ObservationType::FinalResponse,
            json!({ "messageId": "m", "metadata": { "historyLeftOut": 6 } }),
        ));
        assert_eq!(run.history_left_out, 6);
    }

    #[test]
    fn a_plain_answer_without_a_plan_is_no_error() {
        let mut run = RunView::new("t", "r");
        let mut note = obs(
            ObservationType::Error,
            json!({ "code": "PLANNING_OUTPUT_UNPARSEABLE", "problems": ["no plan"] }),
        );
        note.metadata = json!({ "recoverable": true });
        run.apply_observation(&note);
        run.finish(None);
        assert_eq!(run.error, None);
    }

    #[test]
    fn errors_come_with_advice_and_unfinished_tools_are_closed() {
        let mut run = RunView::new("t", "r");
        run.apply_observation(&obs(
            ObservationType::ToolCall,
            json!({ "callId": "c1", "toolName": "calculator" }),
        ));
        run.apply_observation(&obs(
            ObservationType::Error,
            json!({ "code": "OLLAMA_NOT_RUNNING", "message": "Ollama is not reachable" }),
        ));
        run.finish(None);
        assert_eq!(run.tools[0].state, ToolState::Error);
        let (code, message) = run.error.clone().unwrap();
        assert_eq!(code, FailureCode::OllamaNotRunning);
        assert!(advice(&code, &message).contains("ollama serve"));
        let said = "Ollama is not reachable: start it with `ollama serve`";
        assert_eq!(advice(&code, said), said, "the hint is not repeated");
    }
}
