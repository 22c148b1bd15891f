//! Names of the events the backend emits to the UI. One place, so both sides agree.

/// The backend answered the UI's `ui_ready` handshake; payload [`crate::ReadyEvent`].
pub const READY: &str = "art://ready";
