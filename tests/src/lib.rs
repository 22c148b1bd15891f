//! `art-testkit`: shared test machinery for ART Workbench.
//!
//! - [`bench`]: benchmark figures as data (median, range, budget) for BENCHMARKS.md.
//! - [`embedder`]: the built-in embedder's real weights, as `cargo xtask test` installs
//!   them.
//! - [`fake`]: fake provider servers over real TCP, scripted reply by reply, with fault
//!   injection (byte splits, delays, disconnects, silence); they record every request.
//! - [`hub`]: a local stand-in of the Hugging Face hub's download API, with faults.
//! - [`oauth`]: an OAuth authorization server and the MCP server it protects, with the
//!   sign-in faults the conformance suite does not script.
//! - [`otlp`]: an OTLP/HTTP trace receiver that decodes what it takes, with faults.
//! - [`phoenix`]: a real Arize Phoenix, as `cargo xtask test` installs it.
//! - [`fixtures`]: each provider's wire transcripts as constants.
//! - [`framework`] (feature `framework`): a scripted provider and the adapters' test
//!   helpers, for code written against the `art` framework.
//! - [`mcp`] (feature `framework` or `e2e`): the real MCP servers the tests use, as
//!   `cargo xtask test` installs them, the in-tree fault server, leftover processes.
//! - [`e2e`] (feature `e2e`): drives the real app binary through tauri-driver and
//!   WebKitWebDriver, the way a user would, and saves screenshots as artifacts.

pub mod bench;
#[cfg(feature = "e2e")]
pub mod e2e;
pub mod embedder;
pub mod fake;
pub mod fixtures;
#[cfg(feature = "framework")]
pub mod framework;
pub mod hub;
#[cfg(any(feature = "framework", feature = "e2e"))]
pub mod mcp;
pub mod oauth;
pub mod otlp;
pub mod phoenix;
