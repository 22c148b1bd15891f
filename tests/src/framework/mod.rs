//! Test support for code written against the `art` framework (feature `framework`): the
//! framework's own integration tests, the benchmarks, anything that runs an agent or an
//! adapter without a real model.
//!
//! - [`scripted`]: a provider that plays scripted streams and records the prompts it got.
//! - [`adapters`]: the real HTTP adapters pointed at a fake server, and what their tests
//!   read back from a stream (text per token type, tool calls, the final error).

pub mod adapters;
pub mod scripted;
