//! The data model of ART Workbench that crosses the IPC boundary.
//!
//! Everything here is plain serde data: no I/O, no async runtime, no platform code, so
//! the crate compiles for the desktop backend and for the wasm32 UI alike. The backend
//! (`art`, `art-workbench`) produces these values; the UI (`art-ui`) renders them.
//!
//! May not depend on tokio, reqwest, rusqlite, Tauri or anything else that does I/O.

pub mod app;
pub mod error;
pub mod events;

pub use app::{AppInfo, KeychainStatus, ReadyEvent};
pub use error::{ErrorCode, IpcError};
