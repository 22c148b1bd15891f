//! Server-sent events, as the OpenAI, Anthropic and Gemini adapters read them: the
//! reader task that turns an SSE response into an [`EventStream`] through a protocol's
//! [`SseDecoder`], in batches of what has already arrived.

use std::time::Duration;

use art_types::{ErrorClass, FailureCode, StreamEventKind};
use futures::{FutureExt, StreamExt};
use sse_stream::{Error as SseError, Sse, SseByteStream};
use tokio::sync::mpsc;

use super::http;
use super::stream::{Batch, MAX_BATCH, error_event, receiver_stream};
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

/// Read a complete JSON answer on a task and hand its events over at once (same
/// dropping and abort behaviour as [`sse_stream`]).
fn whole_body(
    response: reqwest::Response,
    idle_timeout: Duration,
    mut decoder: impl SseDecoder,
) -> EventStream {
    let (tx, rx) = mpsc::channel::<Vec<StreamEventKind>>(1);
    tokio::spawn(async move {
        let mut body = Box::pin(http::idle_guarded(response, idle_timeout));
        let mut bytes = Vec::new();
        let events = loop {
            let next = tokio::select! {
                () = tx.closed() => return,
                next = body.next() => next,
            };
            match next {
                Some(Ok(piece)) if bytes.len() + piece.len() <= MAX_WHOLE_BODY => {
                    bytes.extend_from_slice(&piece);
                }
                Some(Ok(_)) => {
                    break vec![error_event(
                        ErrorClass::Permanent,
                        FailureCode::MalformedStream,
                        format!("the answer is larger than {MAX_WHOLE_BODY} bytes of JSON"),
                    )];
                }
                Some(Err(e)) => break vec![StreamEventKind::Error(e.into_stream_error())],
                None => break decoder.whole(&String::from_utf8_lossy(&bytes)),
            }
        };
        let mut batch = Batch::default();
        batch.extend(events);
        let _ = batch.send(&tx).await;
    });
    receiver_stream(rx)
}

/// The error for a stream that stopped before its protocol's terminator.
pub fn interrupted() -> StreamEventKind {
    error_event(
        ErrorClass::Transient,
        FailureCode::StreamInterrupted,
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
    if is_json(&response) {
        return whole_body(response, idle_timeout, decoder);
    }
    let mut events = Box::pin(SseByteStream::new(http::idle_guarded(
        response,
        idle_timeout,
    )));
    let (tx, rx) = mpsc::channel::<Vec<StreamEventKind>>(16);
    tokio::spawn(async move {
        // What the decoder produced for the current SSE block (kept for its capacity).
        let mut decoded = Vec::new();
        // The first event goes alone (time to first token); then everything already
        // received goes in one batch: one hand-over per network read, not per token.
        let mut limit = 1;
        loop {
            let next = tokio::select! {
                () = tx.closed() => return,
                next = events.next() => next,
            };
            let mut batch = Batch::default();
            let mut next = Some(next);
            while let Some(item) = next.take() {
                match item {
                    None => {
                        batch.input_over = true;
                        decoded.extend(decoder.end_of_stream());
                    }
                    Some(Err(SseError::Body(e))) => {
                        decoded.push(match e.downcast::<ProviderError>() {
                            Ok(e) => StreamEventKind::Error(e.into_stream_error()),
                            Err(e) => error_event(
                                ErrorClass::Transient,
                                FailureCode::StreamInterrupted,
                                e.to_string(),
                            ),
                        })
                    }
                    Some(Err(e)) => decoded.push(error_event(
                        ErrorClass::Transient,
                        FailureCode::MalformedStream,
                        e.to_string(),
                    )),
                    Some(Ok(event)) => dispatch(&mut decoder, &event, &mut decoded),
                }
                batch.extend(decoded.drain(..));
                if !batch.done() && batch.len() < limit {
                    next = events.next().now_or_never();
                }
            }
            if batch.send(&tx).await.is_err() {
                return;
            }
            limit = MAX_BATCH;
        }
    });
    receiver_stream(rx)
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
