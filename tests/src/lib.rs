//! `art-testkit`: shared test machinery for ART Workbench.
//!
//! - [`e2e`] (feature `e2e`): drives the real app binary through tauri-driver and
//!   WebKitWebDriver, the way a user would, and saves screenshots as artifacts.

#[cfg(feature = "e2e")]
pub mod e2e;
