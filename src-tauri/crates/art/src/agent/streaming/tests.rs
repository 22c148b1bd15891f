//! How a stage's stream reaches the stream socket, on tokio's paused clock (so token
//! gaps and the read interval are exact).

use std::sync::Arc;
use std::time::Duration;

use art_types::{StreamEvent, StreamEventKind, TokenType};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::observation::ObservationManager;
use crate::reasoning::provider::EventStream;
use crate::sockets::{All, Sockets, Subscription};
use crate::storage::memory::MemoryStorage;

/// `count` answer tokens `t0 t1 …`, one every `gap` on the source's own schedule (as a
/// server sends, whether or not anyone reads), then END.
fn paced(count: usize, gap: Duration) -> EventStream {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        for i in 0..count {
            tokio::time::sleep_until(start + gap * (i as u32 + 1)).await;
            let token = StreamEventKind::Token {
                text: format!("t{i} "),
                token_type: TokenType::LlmResponse,
            };
            if sender.send(token).is_err() {
                return;
            }
        }
        let _ = sender.send(StreamEventKind::End);
    });
    Box::pin(futures::stream::unfold(receiver, |mut r| async move {
        Some((r.recv().await?, r))
    }))
}

/// The texts of the token events the socket carried, in order.
fn token_texts(subscription: &mut Subscription<StreamEvent>) -> Vec<String> {
    std::iter::from_fn(|| subscription.try_recv())
        .filter_map(|e| match e.kind {
            StreamEventKind::Token { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

/// Consume `stream` as a synthesis-less stage and return what the socket carried.
async fn socket_texts(stream: EventStream) -> Vec<String> {
    let sockets = Arc::new(Sockets::default());
    let observations = ObservationManager::new(Arc::new(MemoryStorage::new()), sockets.clone());
    let mut subscription = sockets.stream.subscribe(All);
    let sinks = StageSinks {
        sockets: &sockets,
        observations: &observations,
        thread_id: "thread",
        trace_id: "run",
        checkpoint: None,
    };
    let result = consume(stream, CallStage::Other, sinks, &CancellationToken::new()).await;
    assert!(
        matches!(result.ending, Ending::Completed),
        "{:?}",
        result.ending
    );
    token_texts(&mut subscription)
}

fn expected(count: usize) -> String {
    (0..count).map(|i| format!("t{i} ")).collect()
}

#[tokio::test(start_paused = true)]
async fn a_stream_faster_than_the_read_interval_is_read_in_batches_losing_nothing() {
    let texts = socket_texts(paced(200, Duration::from_millis(1))).await;
    assert_eq!(texts.concat(), expected(200), "every token, in order");
    assert_eq!(texts[0], "t0 ", "the first token goes out alone, at once");
    // One token a millisecond, read at most every READ_EVERY (2 ms): about two a read.
    assert!(
        texts.len() <= 110,
        "{} socket events for 200 tokens: {texts:?}",
        texts.len()
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_slower_than_the_read_interval_goes_out_token_by_token() {
    let texts = socket_texts(paced(50, READ_EVERY + Duration::from_millis(3))).await;
    assert_eq!(texts, (0..50).map(|i| format!("t{i} ")).collect::<Vec<_>>());
}
