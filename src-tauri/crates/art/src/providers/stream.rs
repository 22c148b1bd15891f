//! What every adapter's reader task hands its consumer: events in [`Batch`]es through a
//! channel read as an [`EventStream`], error events (key-shaped text scrubbed), and the
//! decoding of one JSON chunk of a stream (borrowing its strings where it can).

use art_types::{ErrorClass, FailureCode, StreamError, StreamEventKind};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::reasoning::provider::EventStream;

/// One chunk decoded as JSON, or the events a decoder returns instead: the
/// MALFORMED_STREAM error naming `who` sent it.
pub fn parse_chunk(who: &str, data: &str) -> Result<Value, Vec<StreamEventKind>> {
    serde_json::from_str(data).map_err(|e| {
        vec![error_event(
            ErrorClass::Transient,
            FailureCode::MalformedStream,
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

/// At most this many events per hand-over to the consumer.
pub const MAX_BATCH: usize = 256;

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
pub fn error_event(
    class: ErrorClass,
    code: FailureCode,
    message: impl Into<String>,
) -> StreamEventKind {
    let message = message.into();
    StreamEventKind::Error(StreamError {
        class,
        code,
        message: crate::secrets::scrub(&message).into_owned(),
    })
}
