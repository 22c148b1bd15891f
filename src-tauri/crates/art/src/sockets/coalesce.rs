//! Stream events coalesced per run into at most one batch per [`FRAME`] (a 60 Hz screen
//! cannot show more, and IPC is not free), never dropping or reordering one: what the
//! desktop bridge forwards to the UI as events, and what the headless pipeline benchmark
//! measures.

use std::collections::HashMap;
use std::time::Duration;

use art_types::{StreamBatch, StreamEvent, StreamEventKind, TokenType};

use crate::sockets::Subscription;
use tokio::time::Instant;

/// Least time between two batches of the same stream.
pub const FRAME: Duration = Duration::from_millis(16);

/// Add `event` to the batches, keeping one batch per run in first-arrival order.
fn push(batches: &mut Vec<StreamBatch>, event: StreamEvent) {
    match batches
        .iter_mut()
        .find(|b| b.trace_id == event.trace_id && b.thread_id == event.thread_id)
    {
        Some(batch) => batch.events.push(event.kind),
        None => batches.push(StreamBatch {
            thread_id: event.thread_id,
            trace_id: event.trace_id,
            events: vec![event.kind],
        }),
    }
}

/// Whether `event` starts a new stage of its run (planning → answer, thinking → text):
/// its token type differs from the run's last, in `pending` (not yet emitted) or else as
/// `last` remembers it. Such a token goes out at once.
fn new_stage(
    last: &HashMap<String, TokenType>,
    pending: &[StreamBatch],
    event: &StreamEvent,
) -> bool {
    let StreamEventKind::Token { token_type, .. } = &event.kind else {
        return false;
    };
    let waiting = pending
        .iter()
        .filter(|b| b.trace_id == event.trace_id)
        .flat_map(|b| b.events.iter().rev())
        .find_map(|e| match e {
            StreamEventKind::Token { token_type, .. } => Some(Some(*token_type)),
            StreamEventKind::End | StreamEventKind::Error(_) => Some(None),
            _ => None,
        });
    let previous = match waiting {
        Some(previous) => previous,
        None => last.get(&event.trace_id).copied(),
    };
    previous != Some(*token_type)
}

/// Remember the last token type of each batch's run (forgetting runs that ended).
fn note_stages(last: &mut HashMap<String, TokenType>, batches: &[StreamBatch]) {
    for batch in batches {
        if batch
            .events
            .iter()
            .any(|e| matches!(e, StreamEventKind::End | StreamEventKind::Error(_)))
        {
            last.remove(&batch.trace_id);
            continue;
        }
        let token_type = batch.events.iter().rev().find_map(|e| match e {
            StreamEventKind::Token { token_type, .. } => Some(*token_type),
            _ => None,
        });
        if let Some(t) = token_type {
            last.insert(batch.trace_id.clone(), t);
        }
    }
}

/// Forward everything `subscription` receives to `emit` in batches, until the socket
/// closes. The first event after a quiet spell goes out at once (time to first token),
/// and so does the first token of a new stage of a run — the answer's first token right
/// after the plan goes out with the plan's end, not a frame later; while events keep
/// coming, one batch per run per frame, timed by one timer per frame.
pub async fn coalesce(
    mut subscription: Subscription<StreamEvent>,
    mut emit: impl FnMut(StreamBatch),
) {
    let mut last_emit = Instant::now() - FRAME;
    let mut stages: HashMap<String, TokenType> = HashMap::new();
    let mut open = true;
    while open {
        let Some(first) = subscription.recv().await else {
            return;
        };
        let mut batches = Vec::new();
        let now = new_stage(&stages, &batches, &first);
        push(&mut batches, first);
        let deadline = last_emit + FRAME;
        if !now && Instant::now() < deadline {
            let frame = tokio::time::sleep_until(deadline);
            tokio::pin!(frame);
            loop {
                tokio::select! {
                    biased;
                    () = &mut frame => break,
                    event = subscription.recv() => {
                        let Some(event) = event else {
                            open = false;
                            break;
                        };
                        let now = new_stage(&stages, &batches, &event);
                        push(&mut batches, event);
                        if now {
                            break;
                        }
                    }
                }
            }
        }
        // What is already queued joins this batch.
        while let Some(event) = subscription.try_recv() {
            push(&mut batches, event);
        }
        note_stages(&mut stages, &batches);
        for batch in batches {
            emit(batch);
        }
        last_emit = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use crate::sockets::{All, Sockets};
    use art_types::{StreamEventKind, TokenType};

    use super::*;

    fn token(trace: &str, text: &str) -> StreamEvent {
        StreamEvent {
            thread_id: "t".into(),
            trace_id: trace.into(),
            kind: StreamEventKind::Token {
                text: text.into(),
                token_type: TokenType::LlmResponse,
            },
        }
    }

    fn text(batches: &[StreamBatch], trace: &str) -> String {
        batches
            .iter()
            .filter(|b| b.trace_id == trace)
            .flat_map(|b| &b.events)
            .filter_map(|e| match e {
                StreamEventKind::Token { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fast_streams_are_batched_per_frame_and_nothing_is_lost() {
        let sockets = Arc::new(Sockets::default());
        let subscription = sockets.stream.subscribe(All);
        let emitted = Arc::new(Mutex::new(Vec::<(Instant, StreamBatch)>::new()));
        let sink = Arc::clone(&emitted);
        let bridge = tokio::spawn(coalesce(subscription, move |b| {
            sink.lock().unwrap().push((Instant::now(), b))
        }));
        // Two runs interleaved, 20,000 tokens each, in bursts over ~200 ms.
        let mut sent = (String::new(), String::new());
        for i in 0..40_000 {
            let (trace, word) = if i % 2 == 0 {
                ("a", format!("a{i} "))
            } else {
                ("b", format!("b{i} "))
            };
            if trace == "a" {
                sent.0.push_str(&word)
            } else {
                sent.1.push_str(&word)
            }
            sockets.stream.notify(&token(trace, &word));
            if i % 400 == 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        drop(sockets);
        bridge.await.unwrap();
        let emitted = emitted.lock().unwrap();
        let batches: Vec<StreamBatch> = emitted.iter().map(|(_, b)| b.clone()).collect();
        assert_eq!(text(&batches, "a"), sent.0, "run a: every token, in order");
        assert_eq!(text(&batches, "b"), sent.1, "run b: every token, in order");
        // Far fewer events than tokens, and a run's batches are a frame apart
        // (allowing the scheduler a millisecond).
        assert!(batches.len() < 400, "{} batches", batches.len());
        let a_times: Vec<Instant> = emitted
            .iter()
            .filter(|(_, b)| b.trace_id == "a")
            .map(|(t, _)| *t)
            .collect();
        // (The last batch goes out as soon as the socket closes, so it is left out; so are
        // a's first two: run b's first token starts a stage, which goes out at once and
        // takes a's queued tokens with it.)
        for pair in a_times[1..a_times.len() - 1].windows(2) {
            assert!(
                pair[1] - pair[0] >= FRAME - Duration::from_millis(1),
                "{:?}",
                pair[1] - pair[0]
            );
        }
    }

    /// A coalescer on a fresh socket; its batches arrive with the time they left.
    fn bridge() -> (
        Arc<Sockets>,
        tokio::sync::mpsc::UnboundedReceiver<(Instant, StreamBatch)>,
    ) {
        let sockets = Arc::new(Sockets::default());
        let subscription = sockets.stream.subscribe(All);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(coalesce(subscription, move |b| {
            let _ = tx.send((Instant::now(), b));
        }));
        (sockets, rx)
    }

    /// A token of `trace`'s plan (the stage before the answer).
    fn plan_token(trace: &str) -> StreamEvent {
        let mut plan = token(trace, "plan");
        plan.kind = StreamEventKind::Token {
            text: "plan".into(),
            token_type: TokenType::AgentThoughtLlmResponse,
        };
        plan
    }

    #[tokio::test]
    async fn the_answers_first_token_right_after_the_plan_goes_out_at_once() {
        let (sockets, mut rx) = bridge();
        sockets.stream.notify(&plan_token("a"));
        let (_, first) = rx.recv().await.unwrap();
        assert_eq!(text(&[first], "a"), "plan");
        // Well within the frame after the plan's batch: the answer does not wait for it.
        let sent = Instant::now();
        sockets.stream.notify(&token("a", "answer"));
        let (at, batch) = rx.recv().await.unwrap();
        assert_eq!(text(&[batch], "a"), "answer");
        assert!(at - sent < Duration::from_millis(5), "{:?}", at - sent);
        // More of the same stage within the frame waits for it again.
        let sent = Instant::now();
        sockets.stream.notify(&token("a", " more"));
        let (at, _) = rx.recv().await.unwrap();
        assert!(at - sent >= Duration::from_millis(8), "{:?}", at - sent);
    }

    /// The plan's last token and its END go out a frame apart; the answer's first token,
    /// arriving while the END waits for its frame, goes out at once with it.
    #[tokio::test]
    async fn the_answer_does_not_wait_behind_the_plans_end() {
        let (sockets, mut rx) = bridge();
        sockets.stream.notify(&plan_token("a"));
        let _ = rx.recv().await.unwrap();
        let mut end = token("a", "");
        end.kind = StreamEventKind::End;
        sockets.stream.notify(&end);
        tokio::time::sleep(Duration::from_millis(2)).await;
        let sent = Instant::now();
        sockets.stream.notify(&token("a", "answer"));
        let (at, batch) = rx.recv().await.unwrap();
        assert!(matches!(batch.events[0], StreamEventKind::End), "{batch:?}");
        assert_eq!(text(&[batch], "a"), "answer");
        assert!(at - sent < Duration::from_millis(5), "{:?}", at - sent);
    }

    #[tokio::test]
    async fn the_first_token_after_a_pause_goes_out_at_once() {
        let (sockets, mut rx) = bridge();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let sent = Instant::now();
        sockets.stream.notify(&token("a", "hello"));
        let (at, batch) = rx.recv().await.unwrap();
        assert_eq!(text(&[batch], "a"), "hello");
        assert!(at - sent < Duration::from_millis(5), "{:?}", at - sent);
    }
}
