//! The app's settings and the model picker: what new threads start with, and a
//! thread's model chosen in its header (remembered among the recent ones).

use art_types::commands::{ChooseModel, GetAppSettings, SetNewThreadDefaults};
use art_types::{AppSettings, IpcError, ModelChoice, ThreadConfig};
use tauri::AppHandle;

use super::settings::settings_error;
use super::{Handler, workbench};
use crate::error::storage_error;

impl Handler for GetAppSettings {
    async fn handle(self, app: AppHandle) -> Result<AppSettings, IpcError> {
        workbench(&app)?
            .art
            .settings
            .get()
            .await
            .map_err(storage_error)
    }
}

/// Every problem is listed in `details.problems[]`; nothing is saved unless none.
impl Handler for SetNewThreadDefaults {
    async fn handle(self, app: AppHandle) -> Result<AppSettings, IpcError> {
        let wb = workbench(&app)?;
        art::standard::save_new_thread_defaults(&wb.art, &wb.providers, &self.config)
            .await
            .map_err(settings_error)
    }
}

impl Handler for ChooseModel {
    async fn handle(self, app: AppHandle) -> Result<ThreadConfig, IpcError> {
        let Self {
            thread_id,
            provider,
            model,
            make_default,
        } = self;
        let wb = workbench(&app)?;
        let choice = ModelChoice { provider, model };
        art::standard::choose_model(&wb.art, &wb.providers, &thread_id, &choice, make_default)
            .await
            .map_err(settings_error)
    }
}
