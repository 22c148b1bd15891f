//! Server-sent events, as the OpenAI, Anthropic and Gemini adapters read them: an SSE
//! response turned into an [`EventStream`] through a protocol's [`SseDecoder`], decoded
//! where the consumer polls it (no reader task, no hand-over per token).

use std::time::Duration;

use art_types::{ErrorClass, FailureCode, StreamEventKind};
use sse_stream::{Error as SseError, Sse, SseByteStream};

use super::http;
use super::stream::{decoded, error_event};
use crate::reasoning::provider::{EventStream, ProviderError};

/// Turns the server-sent events of one protocol into stream events.
pub trait SseDecoder: Send + 'static {
    /// One event: its `event:` name (`message` when absent) and `data:` payload; what it
    /// produces is appended to `out` (one buffer for the whole stream, not a list per
    /// event).
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<StreamEventKind>);
    /// The server closed the stream after the last event: END (with what was pending)
    /// when the protocol allows ending this way, else an interruption error.
    fn end_of_stream(&mut self) -> Vec<StreamEventKind>;

    /// The server answered with one complete JSON body instead of events (a proxy that
    /// does not stream): the whole answer's events, ending in END or an error. By default
    /// the body is one event's data (a JSON array: each element is one), then the end of
    /// the stream; a protocol whose complete answer has another shape says so here.
    fn whole(&mut self, body: &str) -> Vec<StreamEventKind> {
        let mut out = Vec::new();
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(serde_json::Value::Array(items)) => {
                for item in items {
                    self.event("message", &item.to_string(), &mut out);
                }
            }
            _ => self.event("message", body, &mut out),
        }
        out.extend(self.end_of_stream());
        out
    }
}

/// Largest complete JSON body read from a server that did not stream.
const MAX_WHOLE_BODY: usize = 32 * 1024 * 1024;

/// Whether the server answered with plain JSON rather than an event stream.
fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().starts_with("application/json"))
}

/// A complete JSON answer, its events handed over once it has all arrived (at most
/// [`MAX_WHOLE_BODY`] bytes).
fn whole_body(
    response: reqwest::Response,
    idle_timeout: Duration,
    mut decoder: impl SseDecoder + Unpin,
) -> EventStream {
    let mut bytes = Vec::new();
    decoded(
        http::idle_guarded(response, idle_timeout),
        move |piece, out| match piece {
            Some(Ok(piece)) if bytes.len() + piece.len() <= MAX_WHOLE_BODY => {
                bytes.extend_from_slice(&piece);
            }
            Some(Ok(_)) => out.push(error_event(
                ErrorClass::Permanent,
                FailureCode::MalformedStream,
                format!("the answer is larger than {MAX_WHOLE_BODY} bytes of JSON"),
            )),
            Some(Err(e)) => out.push(StreamEventKind::Error(e.into_stream_error())),
            None => out.extend(decoder.whole(&String::from_utf8_lossy(&bytes))),
        },
    )
}

/// The error for a stream that stopped before its protocol's terminator.
pub fn interrupted() -> StreamEventKind {
    error_event(
        ErrorClass::Transient,
        FailureCode::StreamInterrupted,
        "the connection closed before the answer was complete",
    )
}

/// An SSE response decoded with `decoder` as the consumer reads it, until END or an
/// error. Dropping the returned stream drops the response, which aborts the request.
pub fn sse_stream(
    response: reqwest::Response,
    idle_timeout: Duration,
    mut decoder: impl SseDecoder + Unpin,
) -> EventStream {
    if is_json(&response) {
        return whole_body(response, idle_timeout, decoder);
    }
    let events = SseByteStream::new(http::idle_guarded(response, idle_timeout));
    decoded(events, move |event, out| match event {
        Some(Ok(event)) => dispatch(&mut decoder, &event, out),
        None => out.extend(decoder.end_of_stream()),
        Some(Err(SseError::Body(e))) => out.push(match e.downcast::<ProviderError>() {
            Ok(e) => StreamEventKind::Error(e.into_stream_error()),
            Err(e) => error_event(
                ErrorClass::Transient,
                FailureCode::StreamInterrupted,
                e.to_string(),
            ),
        }),
        Some(Err(e)) => out.push(error_event(
            ErrorClass::Transient,
            FailureCode::MalformedStream,
            e.to_string(),
        )),
    })
}

/// Hand one SSE block to `decoder` as an EventSource would dispatch it, its events
/// appended to `out`: blocks without data (comments, keep-alives, a lone `retry:`) are
/// skipped; no `event:` means `message`.
pub fn dispatch(
    decoder: &mut (impl SseDecoder + ?Sized),
    event: &Sse,
    out: &mut Vec<StreamEventKind>,
) {
    if let Some(data) = event.data.as_deref().filter(|d| !d.is_empty()) {
        decoder.event(event.event.as_deref().unwrap_or("message"), data, out);
    }
}
