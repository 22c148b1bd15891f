//! Providers: the [`manager::ProviderManager`] that lends adapters (pooling, limits,
//! the local singleton), the shared HTTP behaviour ([`http`]) and the adapters
//! ([`openai`]: OpenAI Chat Completions and compatibles; [`ollama`]: Ollama's native
//! API), which plug in through
//! [`manager::AdapterFactory`].

pub mod factory;
pub mod http;
pub mod manager;
mod ndjson;
pub mod ollama;
pub mod openai;
mod signature;
mod wire;

pub use manager::{AdapterFactory, ManagerOptions, ProviderEntry, ProviderManager};
