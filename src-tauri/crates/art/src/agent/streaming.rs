//! Consuming one LLM stream for an agent stage: tokens go to the stream socket as they
//! come (thinking separated from text, `<think>` tags included), thinking is recorded
//! in coalesced THOUGHTS observations, and the synthesis answer is checkpointed to the
//! database while it streams. Cancellation drops the stream, which aborts the request.
//!
//! Tokens that have already arrived together (an adapter hands over everything one network
//! read decoded) are handled as one: one socket event, one pass of the think-tag matcher,
//! one checkpoint check. Tokens of different types are never merged. The first token is
//! handled at once; after that, once the stream has nothing more ready, it is read again
//! no sooner than [`READ_EVERY`] after the last read: a model streaming faster than that
//! (a fast local model, a provider's burst) costs one wake-up per interval instead of one
//! per token, and a screen refreshed every 16 ms shows no difference.

use std::sync::Arc;
use std::time::{Duration, Instant};

use art_types::{
    ConversationMessage, LlmMetadata, MessageStatus, ObservationType, ParsedToolCall, StreamError,
    StreamEvent, StreamEventKind, TokenType,
};
use futures::{FutureExt, StreamExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::context::ConversationManager;
use crate::observation::{NewObservation, ObservationManager};
use crate::reasoning::provider::{CallStage, EventStream};
use crate::reasoning::think_tags::{Segment, ThinkTagMatcher};
use crate::sockets::Sockets;

/// How often a streaming answer is saved: a crash loses at most the tokens of the last
/// 100 ms (this interval, the gap to the next token, and the commit; measured by
/// `tests/crash.rs` and `cargo xtask stress`).
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(80);
/// Thinking is recorded when this much has gathered…
const THOUGHTS_FLUSH_BYTES: usize = 2_048;
/// …or this long has passed.
const THOUGHTS_FLUSH_EVERY: Duration = Duration::from_millis(500);
/// Tokens already waiting are merged up to this many bytes of text.
const MERGE_BYTES: usize = 16 * 1024;
/// Least time between two reads of a stream that has caught up with its source (see the
/// module's documentation). Tokens further apart than this are handled as they come.
pub const READ_EVERY: Duration = Duration::from_millis(2);

/// How a stage's stream ended.
#[derive(Debug)]
pub enum Ending {
    /// It completed.
    Completed,
    /// The provider failed.
    Failed(StreamError),
    /// The run was cancelled.
    Cancelled,
}

/// What a stage's stream produced.
#[derive(Debug)]
pub struct StageResult {
    /// How it ended.
    pub ending: Ending,
    /// Response text (thinking removed).
    pub text: String,
    /// All thinking.
    pub thinking: String,
    /// Usage and timing.
    pub metadata: LlmMetadata,
    /// Tool calls the model requested natively.
    pub tool_calls: Vec<ParsedToolCall>,
    /// Milliseconds from the call to its first token.
    pub first_token_ms: Option<u64>,
}

/// Where a stage's output goes.
pub struct StageSinks<'a> {
    /// Stream socket.
    pub sockets: &'a Sockets,
    /// THOUGHTS observations.
    pub observations: &'a ObservationManager,
    /// Thread and run.
    pub thread_id: &'a str,
    /// Run id.
    pub trace_id: &'a str,
    /// For synthesis: the AI message to checkpoint while streaming.
    pub checkpoint: Option<(Arc<ConversationManager>, ConversationMessage)>,
}

fn token_types(stage: CallStage) -> (TokenType, TokenType) {
    match stage {
        CallStage::Planning | CallStage::Execution => (
            TokenType::AgentThoughtLlmThinking,
            TokenType::AgentThoughtLlmResponse,
        ),
        CallStage::Synthesis => (
            TokenType::FinalSynthesisLlmThinking,
            TokenType::FinalSynthesisLlmResponse,
        ),
        CallStage::Other => (TokenType::LlmThinking, TokenType::LlmResponse),
    }
}

struct Collector<'a> {
    sinks: StageSinks<'a>,
    stage: CallStage,
    result: StageResult,
    thoughts: String,
    thoughts_since: Instant,
    last_checkpoint: Instant,
    checkpointed_len: usize,
}

impl Collector<'_> {
    fn publish(&self, kind: StreamEventKind) {
        self.sinks.sockets.stream.notify(&StreamEvent {
            thread_id: self.sinks.thread_id.to_owned(),
            trace_id: self.sinks.trace_id.to_owned(),
            kind,
        });
    }

    async fn segment(&mut self, segment: Segment) {
        let (thinking_type, text_type) = token_types(self.stage);
        match segment {
            Segment::Text(text) => {
                self.result.text.push_str(&text);
                self.publish(StreamEventKind::Token {
                    text,
                    token_type: text_type,
                });
                self.maybe_checkpoint(false).await;
            }
            Segment::Thinking(text) => {
                self.result.thinking.push_str(&text);
                self.thoughts.push_str(&text);
                self.publish(StreamEventKind::Token {
                    text,
                    token_type: thinking_type,
                });
                if self.thoughts.len() >= THOUGHTS_FLUSH_BYTES
                    || self.thoughts_since.elapsed() >= THOUGHTS_FLUSH_EVERY
                {
                    self.flush_thoughts().await;
                }
            }
        }
    }

    async fn flush_thoughts(&mut self) {
        self.thoughts_since = Instant::now();
        if self.thoughts.is_empty() {
            return;
        }
        let chunk = std::mem::take(&mut self.thoughts);
        let mut obs = NewObservation::new(
            self.sinks.thread_id,
            self.sinks.trace_id,
            ObservationType::Thoughts,
            json!({ "text": chunk }),
        );
        obs.metadata = json!({ "stage": format!("{:?}", self.stage).to_lowercase() });
        if let Err(e) = self.sinks.observations.record(obs).await {
            tracing::warn!("could not record thinking: {e}");
        }
    }

    /// Save the partial answer (at most every [`CHECKPOINT_EVERY`], or now if `force`).
    async fn maybe_checkpoint(&mut self, force: bool) {
        let Some((conversation, template)) = &self.sinks.checkpoint else {
            return;
        };
        let due = force || self.last_checkpoint.elapsed() >= CHECKPOINT_EVERY;
        if !due || self.result.text.len() == self.checkpointed_len {
            return;
        }
        let mut message = template.clone();
        message.content = self.result.text.clone();
        message.status = MessageStatus::Streaming;
        if let Err(e) = conversation
            .add_messages(&template.thread_id, std::slice::from_ref(&message))
            .await
        {
            tracing::warn!("could not checkpoint the streaming answer: {e}");
        }
        self.last_checkpoint = Instant::now();
        self.checkpointed_len = self.result.text.len();
    }
}

/// Drive `stream` to its end (or cancellation), routing everything to `sinks`.
pub async fn consume(
    stream: EventStream,
    stage: CallStage,
    sinks: StageSinks<'_>,
    cancel: &CancellationToken,
) -> StageResult {
    let started = Instant::now();
    let mut c = Collector {
        sinks,
        stage,
        result: StageResult {
            ending: Ending::Completed,
            text: String::new(),
            thinking: String::new(),
            metadata: LlmMetadata::default(),
            tool_calls: Vec::new(),
            first_token_ms: None,
        },
        thoughts: String::new(),
        thoughts_since: Instant::now(),
        last_checkpoint: Instant::now(),
        checkpointed_len: 0,
    };
    let mut matcher = ThinkTagMatcher::new();
    let mut stream = stream;
    // What the last merge read past: the next event, or the end (`Some(None)`).
    let mut held: Option<Option<StreamEventKind>> = None;
    // When the last read that found the stream caught up happened (none before the first).
    let mut caught_up_at: Option<tokio::time::Instant> = None;
    // One waiter for the whole stream, not one registered and removed per token.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    loop {
        let next = match held.take() {
            Some(next) => next,
            None => {
                let due = caught_up_at
                    .take()
                    .map(|at| at + READ_EVERY)
                    .filter(|due| tokio::time::Instant::now() < *due);
                let read = async {
                    if let Some(due) = due {
                        tokio::time::sleep_until(due).await;
                    }
                    stream.next().await
                };
                tokio::select! {
                    biased;
                    () = &mut cancelled => {
                        c.result.ending = Ending::Cancelled;
                        break;
                    }
                    next = read => next,
                }
            }
        };
        let Some(event) = next else { break };
        match event {
            StreamEventKind::Token {
                mut text,
                token_type,
            } => {
                c.result.first_token_ms.get_or_insert_with(|| {
                    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
                });
                held = merge_ready(&mut stream, &mut text, token_type).await;
                if held.is_none() && text.len() < MERGE_BYTES {
                    caught_up_at = Some(tokio::time::Instant::now());
                }
                let segments = if token_type.is_thinking() {
                    vec![Segment::Thinking(text)]
                } else {
                    matcher.push(&text)
                };
                for segment in segments {
                    c.segment(segment).await;
                }
            }
            StreamEventKind::ToolCall(call) => c.result.tool_calls.push(call),
            StreamEventKind::Metadata(meta) => {
                c.publish(StreamEventKind::Metadata(meta.clone()));
                c.result.metadata.merge(meta);
            }
            StreamEventKind::Error(error) => {
                c.result.ending = Ending::Failed(error);
                break;
            }
            StreamEventKind::End => break,
        }
    }
    // Dropping the stream here aborts the request if it is still open.
    drop(stream);
    for segment in matcher.finish() {
        c.segment(segment).await;
    }
    c.flush_thoughts().await;
    c.maybe_checkpoint(true).await;
    if c.result.metadata.time_to_first_token_ms.is_none() {
        c.result.metadata.time_to_first_token_ms = c.result.first_token_ms;
    }
    c.result
        .metadata
        .total_generation_time_ms
        .get_or_insert(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    match &c.result.ending {
        Ending::Completed => c.publish(StreamEventKind::End),
        Ending::Failed(error) => c.publish(StreamEventKind::Error(error.clone())),
        Ending::Cancelled => {}
    }
    c.result
}

/// Append to `text` the tokens of `token_type` that are already waiting (up to
/// [`MERGE_BYTES`]); returns what stopped the merge if it was read: another event, or the
/// end of the stream (`Some(None)`). `None`: the stream has caught up with its source.
///
/// "Waiting" includes what the HTTP client has read but not handed over yet: it hands
/// over one HTTP chunk at a time from its own task, so when nothing is ready the merge
/// lets that task run once before it concludes the stream has caught up.
async fn merge_ready(
    stream: &mut EventStream,
    text: &mut String,
    token_type: TokenType,
) -> Option<Option<StreamEventKind>> {
    let mut yielded = false;
    while text.len() < MERGE_BYTES {
        match stream.next().now_or_never() {
            Some(Some(StreamEventKind::Token {
                text: more,
                token_type: same,
            })) if same == token_type => {
                text.push_str(&more);
                yielded = false;
            }
            Some(other) => return Some(other),
            None if yielded => return None,
            None => {
                tokio::task::yield_now().await;
                yielded = true;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
