//! "Send traces to": save the push's settings (headers into the keychain) and read its
//! status line.

use art::push::SaveError;
use art_types::commands::{SetTracePush, TracePushStatus};
use art_types::push::PushStatus;
use art_types::{ErrorCode, IpcError};
use tauri::AppHandle;

use super::settings::problems_error;
use super::{Handler, workbench};

/// Every problem in `details.problems[]` (the form shows each at its field); nothing is
/// saved unless none.
impl Handler for SetTracePush {
    async fn handle(self, app: AppHandle) -> Result<PushStatus, IpcError> {
        let wb = workbench(&app)?;
        let store = std::sync::Arc::clone(&wb.secrets) as _;
        art::push::save(&wb.art, store, &wb.push, self.settings, self.headers)
            .await
            .map_err(|e| match e {
                SaveError::Invalid(problems) => problems_error(&problems),
                SaveError::Keychain(message) => {
                    IpcError::new(ErrorCode::KeychainUnavailable, message)
                }
                SaveError::Storage(message) => IpcError::new(ErrorCode::Storage, message),
            })?;
        Ok(wb.push.status().borrow().clone())
    }
}

impl Handler for TracePushStatus {
    async fn handle(self, app: AppHandle) -> Result<PushStatus, IpcError> {
        Ok(workbench(&app)?.push.status().borrow().clone())
    }
}
