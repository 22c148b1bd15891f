//! Pieces the wire protocols share: tool schemas in the function shape, the reader task
//! that turns an SSE response into an [`EventStream`], and error events.

use std::time::Duration;

use art_types::{ErrorClass, StreamError, StreamEventKind, ToolSchema};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::http;
use crate::reasoning::provider::EventStream;

/// Turns the server-sent events of one protocol into stream events.
pub trait SseDecoder: Send + 'static {
    /// One event: its `event:` name (`message` when absent) and `data:` payload.
    fn event(&mut self, name: &str, data: &str) -> Vec<StreamEventKind>;
    /// The server closed the stream after the last event: END (with what was pending)
    /// when the protocol allows ending this way, else an interruption error.
    fn end_of_stream(&mut self) -> Vec<StreamEventKind>;
}

/// The error for a stream that stopped before its protocol's terminator.
pub fn interrupted() -> StreamEventKind {
    error_event(
        ErrorClass::Transient,
        "STREAM_INTERRUPTED",
        "the connection closed before the answer was complete",
    )
}

/// Read an SSE response on a task, decoding with `decoder`, until END or an error.
/// Dropping the returned stream stops the task, which drops the response and so aborts
/// the request.
pub fn sse_stream(
    response: reqwest::Response,
    idle_timeout: Duration,
    mut decoder: impl SseDecoder,
) -> EventStream {
    let mut events = Box::pin(http::idle_guarded(response, idle_timeout).eventsource());
    let (tx, rx) = mpsc::channel::<StreamEventKind>(64);
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                () = tx.closed() => return,
                next = events.next() => next,
            };
            let eof = next.is_none();
            let produced = match next {
                None => decoder.end_of_stream(),
                Some(Err(EventStreamError::Transport(e))) => {
                    vec![StreamEventKind::Error(e.into_stream_error())]
                }
                Some(Err(e)) => vec![error_event(
                    ErrorClass::Transient,
                    "MALFORMED_STREAM",
                    e.to_string(),
                )],
                Some(Ok(event)) => decoder.event(&event.event, &event.data),
            };
            for event in produced {
                let last = matches!(event, StreamEventKind::End | StreamEventKind::Error(_));
                if tx.send(event).await.is_err() || last {
                    return;
                }
            }
            if eof {
                return;
            }
        }
    });
    receiver_stream(rx)
}

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
