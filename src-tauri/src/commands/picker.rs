//! The system's file picker, or `--pick-dir` in its place (scripted use and the
//! end-to-end tests): the backend asks for paths itself, so the page never names one.

use std::path::{Path, PathBuf};

use art_types::{ErrorCode, IpcError};
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::DialogExt;

use crate::state::AppState;

/// What to ask the user for.
pub enum Pick {
    /// Several files, offered through `filters` (`(label, extensions)`; none: any file).
    Files {
        /// The picker's title.
        title: &'static str,
        /// The file types offered.
        filters: &'static [(&'static str, &'static [&'static str])],
    },
    /// One folder.
    Folder {
        /// The picker's title.
        title: &'static str,
    },
}

/// The paths picked: with `--pick-dir`, its files (or the folder itself); else what the
/// user chose. Empty when the picker is closed.
pub async fn pick(app: &AppHandle, pick: Pick) -> Result<Vec<PathBuf>, IpcError> {
    if let Some(dir) = &app.state::<AppState>().pick_dir {
        return match pick {
            Pick::Files { .. } => files_in(dir),
            Pick::Folder { .. } => Ok(vec![dir.clone()]),
        };
    }
    let dialog = app.dialog().file();
    let chosen = tokio::task::spawn_blocking(move || match pick {
        Pick::Files { title, filters } => filters
            .iter()
            .fold(dialog.set_title(title), |d, (label, extensions)| {
                d.add_filter(*label, extensions)
            })
            .blocking_pick_files(),
        Pick::Folder { title } => dialog
            .set_title(title)
            .blocking_pick_folder()
            .map(|f| vec![f]),
    })
    .await
    .map_err(|e| IpcError::new(ErrorCode::Internal, format!("the file picker stopped: {e}")))?
    .unwrap_or_default();
    Ok(chosen
        .into_iter()
        .filter_map(|file| file.into_path().ok())
        .collect())
}

/// The files of `dir`, by name.
fn files_in(dir: &Path) -> Result<Vec<PathBuf>, IpcError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        IpcError::new(
            ErrorCode::InvalidInput,
            format!("cannot read {}: {e}", dir.display()),
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}
