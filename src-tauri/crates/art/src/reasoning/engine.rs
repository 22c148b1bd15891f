//! ReasoningEngine: one LLM call = acquire an adapter, stream, release. The lease rides
//! along inside the returned stream, so it is released when the stream ends, when it
//! fails, and when the caller drops it early.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use art_types::{Prompt, ProviderConfig, StreamEventKind};
use futures::Stream;

use super::provider::{AdapterLease, CallOptions, EventStream, ProviderError, ProviderSource};

/// Makes LLM calls through a [`ProviderSource`].
pub struct ReasoningEngine {
    providers: Arc<dyn ProviderSource>,
}

/// The stream of a call, holding the adapter lease until it is done or dropped.
struct LeasedStream {
    inner: EventStream,
    lease: Option<AdapterLease>,
}

impl Stream for LeasedStream {
    type Item = StreamEventKind;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(None | Some(StreamEventKind::End | StreamEventKind::Error(_))) = &polled
        {
            // Finished or failed: give the adapter back now, not when the caller drops us.
            self.lease.take();
        }
        polled
    }
}

impl ReasoningEngine {
    /// Whether provider `name` runs on this machine ([`ProviderSource::is_local`]).
    pub fn is_local(&self, name: &str) -> bool {
        self.providers.is_local(name)
    }

    /// An engine over `providers`.
    pub fn new(providers: Arc<dyn ProviderSource>) -> Self {
        Self { providers }
    }

    /// Start a streaming call.
    pub async fn call(
        &self,
        config: &ProviderConfig,
        prompt: &Prompt,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError> {
        let lease = self.providers.acquire(config).await?;
        // On error the lease is dropped here: released.
        let inner = lease.adapter.call(prompt, options).await?;
        Ok(Box::pin(LeasedStream {
            inner,
            lease: Some(lease),
        }))
    }

    /// The model's context window as its server reports it
    /// ([`ProviderSource::context_window`]), `None` when unknown.
    pub async fn context_window(&self, config: &ProviderConfig) -> Option<u64> {
        self.providers.context_window(config).await
    }

    /// Whether `config`'s model sees images ([`ProviderSource::sees_images`]), `None`
    /// when unknown.
    pub async fn sees_images(&self, config: &ProviderConfig) -> Option<bool> {
        self.providers.sees_images(config).await
    }
}
