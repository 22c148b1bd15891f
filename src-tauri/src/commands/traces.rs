//! Trace export from the Trace panel: the user picks the file in the native save dialog
//! (or, with `--export-dir DIR`, it goes there without asking), the export streams into
//! it with progress events (a failed export leaves no half-written file).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use art::export::{self, ExportError, Format, Options, Scope};
use art_types::commands::ExportTraces;
use art_types::{ErrorCode, ExportDone, ExportProgress, ExportScope, IpcError, events};
use tauri::{AppHandle, Emitter, Manager};
use tauri_plugin_dialog::DialogExt;

use super::{Handler, workbench};
use crate::state::AppState;

/// Progress events at most this often.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

fn export_error(e: ExportError) -> IpcError {
    let code = match &e {
        ExportError::NotFound { .. } => ErrorCode::NotFound,
        ExportError::Write(_) | ExportError::Create { .. } => ErrorCode::FileWrite,
        ExportError::Storage(_) | ExportError::Context(_) => ErrorCode::Storage,
    };
    IpcError::new(code, e.to_string())
}

/// A file name for the export, e.g. `art-thread-0196abcd.otlp.jsonl`.
fn suggested_name(scope: &ExportScope, format: Format) -> String {
    let what = match scope {
        ExportScope::Trace { id } => format!("run-{}", id.chars().take(8).collect::<String>()),
        ExportScope::Thread { id } => format!("thread-{}", id.chars().take(8).collect::<String>()),
        ExportScope::All => "all-threads".into(),
    };
    format!("art-{what}.{}", format.extension())
}

/// Where to write: the `--export-dir` folder, else wherever the user says (`None` when
/// they cancel the dialog).
async fn destination(
    app: &AppHandle,
    state: &AppState,
    name: String,
    format: Format,
) -> Result<Option<PathBuf>, IpcError> {
    if let Some(dir) = &state.export_dir {
        return Ok(Some(dir.join(name)));
    }
    let dialog = app
        .dialog()
        .file()
        .set_title("Export traces")
        .set_file_name(name)
        .add_filter(
            format.as_str(),
            &[format.extension().rsplit('.').next().unwrap_or("txt")],
        );
    let chosen = tokio::task::spawn_blocking(move || dialog.blocking_save_file())
        .await
        .map_err(|e| IpcError::new(ErrorCode::Internal, format!("the save dialog stopped: {e}")))?;
    chosen
        .map(|p| {
            p.into_path().map_err(|e| {
                IpcError::new(ErrorCode::InvalidInput, format!("cannot save there: {e}"))
            })
        })
        .transpose()
}

/// Export to the file the user chooses; `None` when they cancelled.
impl Handler for ExportTraces {
    async fn handle(self, app: AppHandle) -> Result<Option<ExportDone>, IpcError> {
        let Self { request } = self;
        let wb = workbench(&app)?;
        let state = app.state::<AppState>();
        let format = Format::parse(&request.format).ok_or_else(|| {
            IpcError::new(
                ErrorCode::InvalidInput,
                format!(
                    "the format must be one of {}",
                    Format::ALL.map(Format::as_str).join(", ")
                ),
            )
            .with_details(serde_json::json!({ "field": "format" }))
        })?;
        let Some(path) =
            destination(&app, &state, suggested_name(&request.scope, format), format).await?
        else {
            return Ok(None);
        };
        let redactor = art::standard::export_redactor(&wb.art, &wb.providers, &wb.secrets)
            .await
            .map_err(|e| {
                IpcError::new(
                    ErrorCode::Internal,
                    format!("the keychain call stopped: {e}"),
                )
            })?;
        let scope = match request.scope {
            ExportScope::Trace { id } => Scope::Trace(id),
            ExportScope::Thread { id } => Scope::Thread(id),
            ExportScope::All => Scope::All,
        };
        let options = Options {
            include_content: request.include_content,
            include_thinking: request.include_thinking,
        };
        let mut last = Instant::now() - PROGRESS_EVERY;
        let mut progress = |p: export::Progress| {
            if last.elapsed() >= PROGRESS_EVERY || p.done == p.total {
                last = Instant::now();
                let payload = ExportProgress {
                    done: p.done,
                    total: p.total,
                };
                if let Err(e) = app.emit(events::EXPORT_PROGRESS, payload) {
                    tracing::debug!("cannot emit export progress: {e}");
                }
            }
        };
        let written = export::export_to_file(
            &wb.art,
            &scope,
            format,
            options,
            &redactor,
            &path,
            &mut progress,
        )
        .await;
        match written {
            Ok(summary) => Ok(Some(ExportDone {
                path: path.display().to_string(),
                threads: summary.threads,
                messages: summary.messages,
                observations: summary.observations,
            })),
            Err(e) => Err(export_error(e)),
        }
    }
}
