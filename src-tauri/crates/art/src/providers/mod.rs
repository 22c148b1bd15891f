//! Providers: the [`manager::ProviderManager`] that lends adapters (pooling, limits,
//! the local singleton). The HTTP adapters for each provider plug in through
//! [`manager::AdapterFactory`].

pub mod manager;
mod signature;

pub use manager::{AdapterFactory, ManagerOptions, ProviderEntry, ProviderManager};
