//! The prompt library: list, save (create or edit) and delete named system prompts.

use art_types::{ErrorCode, IpcError, SavedPrompt};
use tauri::State;

use crate::error::context_error;
use crate::state::AppState;

/// Every library prompt, by name.
#[tauri::command]
pub async fn list_prompts(state: State<'_, AppState>) -> Result<Vec<SavedPrompt>, IpcError> {
    let wb = state.workbench()?;
    wb.art.library.list().await.map_err(context_error)
}

/// Create a prompt (no `prompt_id`) or edit one; returns it as stored. Problems come
/// back with the field they concern (`name`, `content` or `promptId`).
#[tauri::command]
pub async fn save_prompt(
    state: State<'_, AppState>,
    prompt_id: Option<String>,
    name: String,
    content: String,
) -> Result<SavedPrompt, IpcError> {
    let wb = state.workbench()?;
    wb.art
        .library
        .save(prompt_id.as_deref(), &name, &content)
        .await
        .map_err(context_error)
}

/// Delete a prompt; threads that picked it fall back to the app's default.
#[tauri::command]
pub async fn delete_prompt(state: State<'_, AppState>, prompt_id: String) -> Result<(), IpcError> {
    let wb = state.workbench()?;
    match wb
        .art
        .library
        .delete(&prompt_id)
        .await
        .map_err(context_error)?
    {
        true => Ok(()),
        false => Err(IpcError::new(
            ErrorCode::NotFound,
            "that prompt no longer exists",
        )),
    }
}
