//! Providers: the [`manager::ProviderManager`] that lends adapters (pooling, limits,
//! the local singleton), the shared HTTP behaviour ([`http`]) and the adapters, which
//! plug in through [`manager::AdapterFactory`]: [`openai`] (OpenAI Chat Completions and
//! the compatible DeepSeek and OpenRouter), [`anthropic`] (Messages), [`gemini`]
//! (`streamGenerateContent`) and [`ollama`] (the native API, plus what a server holds
//! and its doctor). [`options`] checks an entry's base URL and key (a leaf); above the
//! adapters, [`factory`] makes them and [`models`] lists what each provider offers —
//! neither importing the other —, and [`embeddings`] asks the providers that have them
//! for passages' vectors (knowledge collections that use a provider's model).

pub mod anthropic;
pub mod embeddings;
pub mod factory;
pub mod gemini;
pub mod http;
#[cfg(test)]
mod image_requests;
pub mod manager;
pub mod models;
pub(crate) mod ndjson;
pub mod ollama;
pub mod openai;
pub mod options;
pub(crate) mod request;
mod signature;
pub(crate) mod sse;
pub(crate) mod stream;

pub use manager::{AdapterFactory, ManagerOptions, ProviderEntry, ProviderManager};
