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
