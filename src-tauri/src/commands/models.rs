//! The Models page's commands over the Ollama provider's server: the installed models,
//! pulls through the app's queue (the page asks for their progress while one runs),
//! delete and unload.

use art_types::commands::{
    CancelPull, DeleteModel, DismissPulls, ListLocalModels, ModelPulls, OllamaAddress, PullModel,
    UnloadModel,
};
use art_types::models::{LocalModel, ModelsProblem, PullState};
use art_types::{ErrorCode, IpcError};
use tauri::AppHandle;

use super::{Handler, workbench};
use crate::error::storage_error;

/// A refusal as the command's error: the sentence, and the problem's facts as details.
fn refused(problem: ModelsProblem) -> IpcError {
    let details = serde_json::to_value(&problem).unwrap_or_default();
    IpcError::new(ErrorCode::Models, problem.to_string()).with_details(details)
}

impl Handler for ListLocalModels {
    async fn handle(self, app: AppHandle) -> Result<Vec<LocalModel>, IpcError> {
        workbench(&app)?
            .ollama()
            .models()
            .list()
            .await
            .map_err(refused)
    }
}

impl Handler for PullModel {
    async fn handle(self, app: AppHandle) -> Result<Vec<PullState>, IpcError> {
        workbench(&app)?
            .ollama()
            .pull(self.name.trim())
            .map_err(refused)
    }
}

impl Handler for ModelPulls {
    async fn handle(self, app: AppHandle) -> Result<Vec<PullState>, IpcError> {
        Ok(workbench(&app)?.ollama().states())
    }
}

impl Handler for CancelPull {
    async fn handle(self, app: AppHandle) -> Result<Vec<PullState>, IpcError> {
        Ok(workbench(&app)?.ollama().cancel(&self.name))
    }
}

impl Handler for DismissPulls {
    async fn handle(self, app: AppHandle) -> Result<Vec<PullState>, IpcError> {
        Ok(workbench(&app)?.ollama().dismiss_ended())
    }
}

impl Handler for DeleteModel {
    async fn handle(self, app: AppHandle) -> Result<u64, IpcError> {
        workbench(&app)?
            .ollama()
            .models()
            .delete(&self.name)
            .await
            .map_err(refused)
    }
}

impl Handler for UnloadModel {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        workbench(&app)?
            .ollama()
            .models()
            .unload(&self.name)
            .await
            .map_err(refused)
    }
}

impl Handler for OllamaAddress {
    async fn handle(self, app: AppHandle) -> Result<String, IpcError> {
        let wb = workbench(&app)?;
        let Some(wanted) = self.base_url.filter(|b| !b.trim().is_empty()) else {
            return Ok(wb.ollama().models().base_url().to_owned());
        };
        let checked = wb.checked_ollama_base(Some(wanted))?;
        wb.set_ollama(&checked)?;
        let used = wb.ollama().models().base_url().to_owned();
        // Kept for the next start.
        wb.art
            .settings
            .update(|s| s.ollama_base_url = Some(used.clone()))
            .await
            .map_err(storage_error)?;
        Ok(used)
    }
}
