//! `art`: the ART agent framework, ported to Rust, and the engine of ART Workbench.
//!
//! This crate owns everything the app does that is not a window: where data lives,
//! secrets in the OS keychain, storage (SQLite), the context system (threads, messages,
//! thread configuration and state), observations, typed sockets, tools, the reasoning
//! seam (provider adapters, prompts, output parsing) and the Plan-Execute-Synthesize
//! agent, assembled by [`ArtInstance`].
//!
//! Architecture invariant: this crate never depends on Tauri or a webview. Everything in
//! it is testable headless; the desktop shell (`art-workbench`) is a thin layer on top.

pub mod agent;
pub mod attachments;
pub mod clock;
pub mod compare;
pub mod context;
pub mod export;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod instance;
pub mod knowledge;
pub mod net;
pub mod observation;
pub mod panics;
pub mod paths;
pub mod providers;
pub mod push;
pub mod reasoning;
pub mod secrets;
pub mod settings;
pub mod sockets;
pub mod standard;
pub mod storage;
pub mod tools;
pub mod usage;

pub use instance::{ArtInstance, ArtInstanceBuilder};

/// Product name shown to users.
pub const APP_NAME: &str = "ART Workbench";

/// Reverse-DNS application identifier; also the folder name of the OS data directory.
/// Must match `identifier` in `tauri.conf.json`.
pub const APP_IDENTIFIER: &str = "org.artworkbench.desktop";

/// Environment variable holding the log filter of the app and of `art`, in
/// `tracing`'s `EnvFilter` syntax (`debug`, `art=trace,info`).
pub const LOG_ENV: &str = "ART_WORKBENCH_LOG";

/// Version of this build.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
