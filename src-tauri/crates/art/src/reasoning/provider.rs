//! The seam between the agent and LLM providers: [`ProviderAdapter`] (one provider's
//! wire protocol, streaming [`StreamEventKind`]s) and [`ProviderSource`] (hands out
//! adapters for a configuration and takes them back; the full ProviderManager with
//! pooling and limits implements it).

use std::pin::Pin;
use std::sync::Arc;

use art_types::{
    ErrorClass, FailureCode, GenerationParams, Prompt, ProviderConfig, StreamError,
    StreamEventKind, ToolSchema,
};
use futures::Stream;

/// A stream of events from one LLM call. Dropping it cancels the call.
pub type EventStream = Pin<Box<dyn Stream<Item = StreamEventKind> + Send>>;

/// Which stage of the agent makes a call (decides the token types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStage {
    /// The planning call.
    Planning,
    /// A call made while working on a plan step.
    Execution,
    /// The synthesis call.
    Synthesis,
    /// Any other call.
    Other,
}

/// Options of one LLM call (ART's CallOptions).
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// Thread of the run.
    pub thread_id: String,
    /// The run the call belongs to.
    pub trace_id: String,
    /// Planning or synthesis: decides the token types of what streams back.
    pub stage: CallStage,
    /// The provider's name for the model (`gpt-4o`, `llama3.2:3b`).
    pub model_id: String,
    /// Sampling parameters.
    pub generation: GenerationParams,
    /// Tools offered natively to the model (empty: none).
    pub tools: Vec<ToolSchema>,
    /// The JSON Schema the answer must follow, asked as the provider's structured
    /// output where it has one (Ollama's `format`, the OpenAI-compatible
    /// `response_format`, Gemini's `responseJsonSchema`; Anthropic's API has none, and
    /// the prompt alone asks); `None`: free text.
    pub response_schema: Option<serde_json::Value>,
}

/// Why a provider could not be used or a call could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    /// Class (decides retry and the user message).
    pub class: ErrorClass,
    /// Stable code, e.g. `UNKNOWN_PROVIDER`.
    pub code: FailureCode,
    /// Message for people, keeping the provider's own words.
    pub message: String,
}

impl ProviderError {
    /// A provider error; anything key-shaped in `message` (providers may repeat the
    /// key they were given) is replaced.
    pub fn new(class: ErrorClass, code: FailureCode, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            class,
            code,
            message: crate::secrets::scrub(&message).into_owned(),
        }
    }

    /// As the error event of a stream.
    pub fn into_stream_error(self) -> StreamError {
        StreamError {
            class: self.class,
            code: self.code,
            message: self.message,
        }
    }
}

/// One provider's implementation.
#[async_trait::async_trait]
pub trait ProviderAdapter: Send + Sync {
    /// Provider name, e.g. `openai`.
    fn provider_name(&self) -> &str;

    /// Start a streaming call. Errors before the first byte come back here; errors
    /// after it arrive as a [`StreamEventKind::Error`] event.
    async fn call(
        &self,
        prompt: &Prompt,
        options: &CallOptions,
    ) -> Result<EventStream, ProviderError>;

    /// Free what the provider holds for this adapter (Ollama: unload the model with
    /// `keep_alive: 0`). Called when the manager evicts it. Default: nothing.
    async fn unload(&self) {}

    /// How many tokens of prompt and answer the model takes, when the server can say
    /// (Ollama: the loaded model's window, else the `num_ctx` of its Modelfile, else its
    /// trained context length). Default: unknown.
    async fn context_window(&self) -> Option<u64> {
        None
    }

    /// Whether the model takes images, when the server can say (Ollama: `vision` among
    /// the capabilities `/api/show` lists). Default: unknown.
    async fn sees_images(&self) -> Option<bool> {
        None
    }
}

/// An adapter lent for one call; whatever `release` holds is dropped when the lease is
/// (that is how the lender learns the call is over).
pub struct AdapterLease {
    /// The adapter to make the call with, for as long as the lease is held.
    pub adapter: Arc<dyn ProviderAdapter>,
    /// Dropped when the call ends, errs, or its stream is dropped.
    pub release: Box<dyn Send + Sync>,
}

/// Lends adapters for a provider configuration.
#[async_trait::async_trait]
pub trait ProviderSource: Send + Sync {
    /// Borrow an adapter for `config` (may wait for capacity).
    async fn acquire(&self, config: &ProviderConfig) -> Result<AdapterLease, ProviderError>;

    /// The context window of `config`'s model as its server reports it, when asking is
    /// cheap and the answer reliable (a local server); `None` otherwise. Default: `None`.
    async fn context_window(&self, _config: &ProviderConfig) -> Option<u64> {
        None
    }

    /// Whether `config`'s model sees images: the thread's
    /// [`VISION_OPTION`](art_types::provider::VISION_OPTION), else a local server's
    /// answer; `None` when unknown. Default: the option alone.
    async fn sees_images(&self, config: &ProviderConfig) -> Option<bool> {
        config.sees_images()
    }

    /// Whether provider `name` runs on this machine (Ollama): its models answer one at
    /// a time. Default: no.
    fn is_local(&self, name: &str) -> bool {
        let _ = name;
        false
    }
}
