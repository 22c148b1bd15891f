//! Commands about the app itself: `app_info` and the UI's `ui_ready` handshake.

use art_types::commands::{AppInfo, UiReady};
use art_types::{IpcError, ReadyEvent};
use tauri::{AppHandle, Manager};

use super::Handler;
use crate::events;
use crate::state::AppState;

impl Handler for AppInfo {
    async fn handle(self, app: AppHandle) -> Result<art_types::AppInfo, IpcError> {
        let state = app.state::<AppState>();
        let dir = state.data_dir.clone()?;
        Ok(art_types::AppInfo {
            name: art::APP_NAME.into(),
            version: art::VERSION.into(),
            data_dir: dir.root().display().to_string(),
            data_dir_overridden: dir.is_overridden(),
            database_path: dir.database_path().display().to_string(),
            log_dir: dir.log_dir().display().to_string(),
            keychain: state.keychain_status().await,
            platform: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        })
    }
}

/// The UI has subscribed to events and asks the backend to announce itself. Answering
/// with an event (not only a return value) proves the event path end to end, and it
/// cannot be missed: the UI subscribes before it calls this.
impl Handler for UiReady {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        let started = app.state::<AppState>().started;
        let uptime_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        tracing::info!(uptime_ms, "UI ready");
        let payload = ReadyEvent {
            version: art::VERSION.into(),
            uptime_ms,
        };
        events::emit_ready(&app, &payload).map_err(|e| {
            IpcError::new(
                art_types::ErrorCode::Internal,
                format!("could not emit the ready event: {e}"),
            )
        })
    }
}
