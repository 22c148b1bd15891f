//! Pieces the wire protocols share: tool schemas in the function shape, the reader task
//! that turns an SSE response into an [`EventStream`], and error events.

use std::time::Duration;

use art_types::{ErrorClass, StreamError, StreamEventKind, ToolSchema};
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use sse_stream::{Error as SseError, Sse, SseByteStream};
use tokio::sync::mpsc;

use super::http;
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

/// One chunk decoded as JSON, or the events a decoder returns instead: the
/// MALFORMED_STREAM error naming `who` sent it.
pub fn parse_chunk(who: &str, data: &str) -> Result<Value, Vec<StreamEventKind>> {
    serde_json::from_str(data).map_err(|e| {
        vec![error_event(
            ErrorClass::Transient,
            "MALFORMED_STREAM",
            format!("{who} sent data that is not JSON ({e})"),
        )]
    })
}

/// An optional string of a chunk, borrowed where it has no escapes.
pub type Text<'a> = Option<std::borrow::Cow<'a, str>>;

/// Deserialize a [`Text`] borrowing from the input (serde borrows a `Cow` only when told).
pub fn borrowed_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
    use serde::Deserialize;
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);
    Ok(Option::<Borrowed<'de>>::deserialize(d)?.map(|b| b.0))
}

/// Append `items` as a turn of `role` under `key` (`content`, `parts`), merging them into
/// the previous turn when it has the same role (Anthropic and Gemini want alternation).
pub fn push_merged(turns: &mut Vec<Value>, role: &str, key: &str, items: Vec<Value>) {
    if items.is_empty() {
        return;
    }
    if let Some(last) = turns.last_mut().filter(|t| t["role"] == role)
        && let Some(existing) = last[key].as_array_mut()
    {
        existing.extend(items);
        return;
    }
    turns.push(json!({ "role": role, key: items }));
}

/// The `thinking_budget` provider option (tokens), if set.
pub fn thinking_budget(options: &serde_json::Map<String, Value>) -> Option<u32> {
    options
        .get("thinking_budget")
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
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
                                "STREAM_INTERRUPTED",
                                e.to_string(),
                            ),
                        })
                    }
                    Some(Err(e)) => decoded.push(error_event(
                        ErrorClass::Transient,
                        "MALFORMED_STREAM",
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

/// At most this many events per hand-over to the consumer.
const MAX_BATCH: usize = 256;

/// Events on their way to the consumer; nothing is kept after the first END or error.
#[derive(Default)]
pub struct Batch {
    events: Vec<StreamEventKind>,
    finished: bool,
    /// The input ended: the reader stops after sending this batch.
    pub input_over: bool,
}

/// Adding events keeps them up to and including the first END or error.
impl Extend<StreamEventKind> for Batch {
    fn extend<I: IntoIterator<Item = StreamEventKind>>(&mut self, events: I) {
        for event in events {
            if self.finished {
                return;
            }
            self.finished = matches!(event, StreamEventKind::End | StreamEventKind::Error(_));
            self.events.push(event);
        }
    }
}

impl Batch {
    /// Whether the reader should stop after this batch.
    pub fn done(&self) -> bool {
        self.finished || self.input_over
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Hand the batch over; `Err` when the reader should stop (done, or nobody listens).
    pub async fn send(self, tx: &mpsc::Sender<Vec<StreamEventKind>>) -> Result<(), ()> {
        let done = self.done();
        if !self.events.is_empty() && tx.send(self.events).await.is_err() {
            return Err(());
        }
        if done { Err(()) } else { Ok(()) }
    }
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
pub fn receiver_stream(rx: mpsc::Receiver<Vec<StreamEventKind>>) -> EventStream {
    let pending = std::collections::VecDeque::new();
    Box::pin(futures::stream::unfold(
        (rx, pending),
        |(mut rx, mut pending)| async move {
            loop {
                if let Some(event) = pending.pop_front() {
                    return Some((event, (rx, pending)));
                }
                pending.extend(rx.recv().await?);
            }
        },
    ))
}

/// A stream error event; anything key-shaped in `message` is replaced.
pub fn error_event(class: ErrorClass, code: &str, message: impl Into<String>) -> StreamEventKind {
    let message = message.into();
    StreamEventKind::Error(StreamError {
        class,
        code: code.into(),
        message: crate::secrets::scrub(&message).into_owned(),
    })
}
