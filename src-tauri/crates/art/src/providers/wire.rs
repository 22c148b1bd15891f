//! Small pieces both wire protocols share.

use art_types::{ErrorClass, StreamError, StreamEventKind, ToolSchema};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::reasoning::provider::EventStream;

/// Tool schemas in the `{"type": "function", "function": {…}}` shape that OpenAI-style
/// and Ollama requests both use.
pub fn function_tools(tools: &[ToolSchema]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": { "name": t.name, "description": t.description, "parameters": t.input_schema }
            })
        })
        .collect()
}

/// The receiving end of an adapter's reader task as an [`EventStream`]. Dropping the
/// stream closes the channel; the task sees `tx.closed()` and drops the response, which
/// aborts the request.
pub fn receiver_stream(rx: mpsc::Receiver<StreamEventKind>) -> EventStream {
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (event, rx))
    }))
}

/// A stream error event.
pub fn error_event(class: ErrorClass, code: &str, message: impl Into<String>) -> StreamEventKind {
    StreamEventKind::Error(StreamError {
        class,
        code: code.into(),
        message: message.into(),
    })
}
