//! What every adapter hands its consumer: a response decoded into an [`EventStream`] where
//! the consumer polls it ([`decoded`]), error events (key-shaped text scrubbed), and the
//! decoding of one JSON chunk of a stream (borrowing its strings where it can).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use art_types::{ErrorClass, FailureCode, StreamError, StreamEventKind};
use futures::Stream;
use serde_json::Value;

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

/// A response's source (body bytes, or SSE events framed from them) decoded into stream
/// events where the consumer polls: no task in between, so a token costs no wake-up of
/// another task or thread, and what has already arrived is decoded in one go when the
/// consumer asks again. Nothing is kept after the first END or error, and the source (so
/// the response) is dropped then: the request ends at once. Dropping the stream drops the
/// response too, which aborts the request.
struct Decoded<S: Stream, F> {
    source: Option<Pin<Box<S>>>,
    decode: F,
    /// Events decoded and not yet taken.
    ready: VecDeque<StreamEventKind>,
    /// The decoder's output buffer, kept for its capacity.
    scratch: Vec<StreamEventKind>,
}

impl<S, F> Stream for Decoded<S, F>
where
    S: Stream,
    F: FnMut(Option<S::Item>, &mut Vec<StreamEventKind>) + Unpin,
{
    type Item = StreamEventKind;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamEventKind>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(event));
            }
            let Some(source) = this.source.as_mut() else {
                return Poll::Ready(None);
            };
            let item = std::task::ready!(source.as_mut().poll_next(cx));
            let over = item.is_none();
            (this.decode)(item, &mut this.scratch);
            for event in this.scratch.drain(..) {
                let last = matches!(event, StreamEventKind::End | StreamEventKind::Error(_));
                this.ready.push_back(event);
                if last {
                    this.source = None;
                    break;
                }
            }
            if over {
                this.source = None;
            }
        }
    }
}

/// `source` decoded by `decode` as an [`EventStream`] (see [`Decoded`]): `decode` is given
/// each item of the source, then `None` when it ends, and appends the events it makes.
pub fn decoded<S>(
    source: S,
    decode: impl FnMut(Option<S::Item>, &mut Vec<StreamEventKind>) + Send + Unpin + 'static,
) -> EventStream
where
    S: Stream + Send + 'static,
{
    Box::pin(Decoded {
        source: Some(Box::pin(source)),
        decode,
        ready: VecDeque::new(),
        scratch: Vec::new(),
    })
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
