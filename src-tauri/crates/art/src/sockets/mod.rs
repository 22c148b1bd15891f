//! Typed publish/subscribe (ART's TypedSocket and its three sockets): stream events,
//! observations and conversation messages, each subscription with its own filter.
//!
//! Every subscriber has its own unbounded queue, so publishing never waits: a slow
//! subscriber only lets its own queue grow, and a subscriber that went away is removed
//! on the next publish. Dropping the [`Subscription`] unsubscribes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use art_types::{ConversationMessage, MessageRole, Observation, ObservationType, StreamEvent};
use tokio::sync::mpsc;

pub mod coalesce;

/// Decides which items a subscriber receives.
pub trait Filter<T>: Send + Sync + 'static {
    /// Whether `item` passes.
    fn matches(&self, item: &T) -> bool;
}

struct Subscriber<T> {
    id: u64,
    filter: Box<dyn Filter<T>>,
    sender: mpsc::UnboundedSender<T>,
}

type Subscribers<T> = Arc<Mutex<Vec<Subscriber<T>>>>;

/// A pub/sub channel for one item type.
pub struct TypedSocket<T> {
    subscribers: Subscribers<T>,
    next_id: AtomicU64,
}

impl<T> Default for TypedSocket<T> {
    fn default() -> Self {
        Self {
            subscribers: Arc::new(Mutex::new(Vec::new())),
            next_id: AtomicU64::new(1),
        }
    }
}

fn lock<T>(subscribers: &Subscribers<T>) -> std::sync::MutexGuard<'_, Vec<Subscriber<T>>> {
    subscribers.lock().unwrap_or_else(|p| p.into_inner())
}

impl<T: Clone + Send + 'static> TypedSocket<T> {
    /// A socket with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Receive every future item that passes `filter`.
    pub fn subscribe(&self, filter: impl Filter<T>) -> Subscription<T> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.subscribers).push(Subscriber {
            id,
            filter: Box::new(filter),
            sender,
        });
        Subscription {
            receiver,
            id,
            subscribers: Arc::downgrade(&self.subscribers),
        }
    }

    /// Deliver `item` to every matching subscriber. Never blocks.
    pub fn notify(&self, item: &T) {
        lock(&self.subscribers).retain(|s| {
            if s.sender.is_closed() {
                return false;
            }
            if s.filter.matches(item) {
                // A receiver dropped between the check and the send just goes away.
                return s.sender.send(item.clone()).is_ok();
            }
            true
        });
    }

    /// Number of live subscriptions.
    pub fn subscriber_count(&self) -> usize {
        lock(&self.subscribers).len()
    }
}

/// A live subscription: receive with [`Subscription::recv`]; drop to unsubscribe.
pub struct Subscription<T> {
    receiver: mpsc::UnboundedReceiver<T>,
    id: u64,
    // Weak: a subscription must not keep the socket (and so its own sender) alive, or
    // `recv` would never see the socket go.
    subscribers: Weak<Mutex<Vec<Subscriber<T>>>>,
}

impl<T> Subscription<T> {
    /// Next item; `None` once the socket is gone.
    pub async fn recv(&mut self) -> Option<T> {
        self.receiver.recv().await
    }

    /// Next item if one is queued.
    pub fn try_recv(&mut self) -> Option<T> {
        self.receiver.try_recv().ok()
    }
}

impl<T> Drop for Subscription<T> {
    fn drop(&mut self) {
        if let Some(subscribers) = self.subscribers.upgrade() {
            lock(&subscribers).retain(|s| s.id != self.id);
        }
    }
}

/// Everything passes.
#[derive(Debug, Clone, Copy, Default)]
pub struct All;

impl<T> Filter<T> for All {
    fn matches(&self, _: &T) -> bool {
        true
    }
}

/// Observations of a thread and/or of some types.
#[derive(Debug, Clone, Default)]
pub struct ObservationFilter {
    /// Only this thread.
    pub thread_id: Option<String>,
    /// Only these types (empty: all).
    pub types: Vec<ObservationType>,
}

impl Filter<Observation> for ObservationFilter {
    fn matches(&self, o: &Observation) -> bool {
        self.thread_id.as_ref().is_none_or(|t| *t == o.thread_id)
            && (self.types.is_empty() || self.types.contains(&o.kind))
    }
}

/// Messages of a thread and/or of some roles.
#[derive(Debug, Clone, Default)]
pub struct MessageFilter {
    /// Only this thread.
    pub thread_id: Option<String>,
    /// Only these roles (empty: all).
    pub roles: Vec<MessageRole>,
}

impl Filter<ConversationMessage> for MessageFilter {
    fn matches(&self, m: &ConversationMessage) -> bool {
        self.thread_id.as_ref().is_none_or(|t| *t == m.thread_id)
            && (self.roles.is_empty() || self.roles.contains(&m.role))
    }
}

/// Stream events of a thread and/or run.
#[derive(Debug, Clone, Default)]
pub struct StreamFilter {
    /// Only this thread.
    pub thread_id: Option<String>,
    /// Only this run.
    pub trace_id: Option<String>,
}

impl Filter<StreamEvent> for StreamFilter {
    fn matches(&self, e: &StreamEvent) -> bool {
        self.thread_id.as_ref().is_none_or(|t| *t == e.thread_id)
            && self.trace_id.as_ref().is_none_or(|t| *t == e.trace_id)
    }
}

/// The three sockets of an ART instance (ART's UISystem).
#[derive(Default)]
pub struct Sockets {
    /// LLM stream events (transient: no history).
    pub stream: TypedSocket<StreamEvent>,
    /// Observations, broadcast after they are persisted.
    pub observations: TypedSocket<Observation>,
    /// Conversation messages, broadcast after they are persisted.
    pub messages: TypedSocket<ConversationMessage>,
}

#[cfg(test)]
mod tests;
