//! Events from the backend to the UI. Event names live in `art_types::events`.

use art_types::{ReadyEvent, events};
use tauri::{AppHandle, Emitter};

/// Tell the UI the thread list changed (it reloads it).
pub fn threads_changed(app: &AppHandle) {
    if let Err(e) = app.emit(events::THREADS, ()) {
        tracing::warn!("cannot emit the thread list change: {e}");
    }
}

/// Tell the UI the backend is up (answer to its `ui_ready` handshake).
pub fn emit_ready(app: &AppHandle, payload: &ReadyEvent) -> tauri::Result<()> {
    app.emit(events::READY, payload)
}
