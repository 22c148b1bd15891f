//! The prompt library: list, save (create or edit) and delete named system prompts.

use art_types::commands::{DeletePrompt, ListPrompts, SavePrompt};
use art_types::{ErrorCode, IpcError, SavedPrompt};
use tauri::AppHandle;

use super::{Handler, workbench};
use crate::error::context_error;

impl Handler for ListPrompts {
    async fn handle(self, app: AppHandle) -> Result<Vec<SavedPrompt>, IpcError> {
        let wb = workbench(&app)?;
        wb.art.library.list().await.map_err(context_error)
    }
}

impl Handler for SavePrompt {
    async fn handle(self, app: AppHandle) -> Result<SavedPrompt, IpcError> {
        let wb = workbench(&app)?;
        wb.art
            .library
            .save(self.prompt_id.as_deref(), &self.name, &self.content)
            .await
            .map_err(context_error)
    }
}

impl Handler for DeletePrompt {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        let wb = workbench(&app)?;
        let deleted = wb
            .art
            .library
            .delete(&self.prompt_id)
            .await
            .map_err(context_error)?;
        match deleted {
            true => Ok(()),
            false => Err(IpcError::new(
                ErrorCode::NotFound,
                "that prompt no longer exists",
            )),
        }
    }
}
