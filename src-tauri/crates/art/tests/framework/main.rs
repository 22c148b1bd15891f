//! The framework's integration tests, one binary with a module per area (one link step
//! for all of them). Real SQLite files in temporary directories, real HTTP over TCP to
//! the testkit's fake servers, real tools; `keychain` talks to the real Secret Service
//! (feature `keychain-tests`, inside the D-Bus session of `cargo xtask test`).

// Adapters over real TCP, one per protocol, and what every adapter shares.
mod anthropic;
mod cancellation;
mod embeddings;
mod gemini;
mod models;
mod ollama;
mod openai;

// Whole runs: the scripted provider, the real provider stack, faults, many at once.
mod approvals;
mod attachments;
mod branches;
mod compare;
mod concurrency;
mod faults;
mod pes;
mod pes_over_http;
mod stepped;
mod steps;

// Storage, exports, the keychain and the parsers' properties.
mod export;
#[cfg(feature = "keychain-tests")]
mod keychain;
mod mcp;
mod mcp_catalog;
mod mcp_faults;
mod mcp_oauth;
mod mcp_questions;
mod migration;
mod properties;
mod push;
mod retrieval;
mod storage;
mod usage;
