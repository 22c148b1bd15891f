//! Attachments: files chosen in the picker, dropped on the window or pasted are read,
//! checked and kept in the attachment store (off the async workers: reading a PDF's text
//! takes a while); the composer shows what came back, and sends it with the question.
//! An attachment is shown by reading it back from the store.

use std::path::PathBuf;
use std::sync::Arc;

use art::attachments::Attachments;
use art_types::commands::{
    AttachBytes, AttachmentContent, PickAttachments, Picked, ReadAttachment,
};
use art_types::{Attachment, AttachmentProblem, ErrorCode, IpcError, events};
use base64::Engine;
use tauri::{AppHandle, Emitter};

use super::picker::{self, Pick};
use super::{Handler, workbench};

/// The store, or why this app takes no attachments.
pub(super) fn store(app: &AppHandle) -> Result<Arc<Attachments>, IpcError> {
    workbench(app)?.art.attachments.clone().ok_or_else(|| {
        IpcError::new(
            ErrorCode::Internal,
            "this app was built without an attachment store",
        )
    })
}

/// A refusal as the command's error: the sentence, and the problem's facts as details.
pub fn refused(problem: AttachmentProblem) -> IpcError {
    let details = serde_json::to_value(&problem).unwrap_or_default();
    IpcError::new(ErrorCode::Attachment, problem.to_string()).with_details(details)
}

/// Run blocking attachment work off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AttachmentProblem> + Send + 'static,
) -> Result<T, IpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| {
            IpcError::new(
                ErrorCode::Internal,
                format!("reading the file stopped: {e}"),
            )
        })?
        .map_err(refused)
}

impl Handler for AttachBytes {
    async fn handle(self, app: AppHandle) -> Result<Attachment, IpcError> {
        let store = store(&app)?;
        let AttachBytes { name, data } = self;
        // base64 is 4/3 the size: a paste larger than the store takes is refused unread.
        let size = (data.len() as u64 / 4) * 3;
        if size > store.limit() {
            return Err(refused(AttachmentProblem::TooLarge {
                name,
                size,
                limit: store.limit(),
            }));
        }
        blocking(move || {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| AttachmentProblem::Malformed {
                    name: name.clone(),
                    detail: format!("the pasted data is not base64: {e}"),
                })?;
            store.add_bytes(&name, &bytes)
        })
        .await
    }
}

impl Handler for ReadAttachment {
    async fn handle(self, app: AppHandle) -> Result<AttachmentContent, IpcError> {
        let store = store(&app)?;
        let ReadAttachment {
            attachment,
            original,
        } = self;
        blocking(move || {
            if let Some(text) = store.text(&attachment)? {
                return Ok(AttachmentContent::Text(text));
            }
            let (bytes, mime) = match original {
                true => (store.original(&attachment)?, attachment.mime.clone()),
                false => store.image_to_send(&attachment)?.unwrap_or_default(),
            };
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            Ok(AttachmentContent::Image(format!(
                "data:{mime};base64,{data}"
            )))
        })
        .await
    }
}

/// The files the user picks (`--pick-dir`'s files, else the system's file picker).
async fn picked_paths(app: &AppHandle) -> Result<Vec<PathBuf>, IpcError> {
    picker::pick(
        app,
        Pick::Files {
            title: "Attach files",
            filters: &[
                (
                    "Images and documents",
                    &[
                        "png", "jpg", "jpeg", "webp", "gif", "pdf", "docx", "html", "htm", "txt",
                        "md", "csv", "json", "rs", "py", "js", "ts",
                    ],
                ),
                ("All files", &["*"]),
            ],
        },
    )
    .await
}

/// Attach each of `paths`, keeping what was refused and why.
async fn attach_all(store: Arc<Attachments>, paths: Vec<PathBuf>) -> Result<Picked, IpcError> {
    tokio::task::spawn_blocking(move || {
        let mut picked = Picked::default();
        for path in paths {
            match store.add_file(&path) {
                Ok(attachment) => picked.attached.push(attachment),
                Err(problem) => picked.refused.push(problem),
            }
        }
        picked
    })
    .await
    .map_err(|e| {
        IpcError::new(
            ErrorCode::Internal,
            format!("reading the files stopped: {e}"),
        )
    })
}

impl Handler for PickAttachments {
    async fn handle(self, app: AppHandle) -> Result<Picked, IpcError> {
        let store = store(&app)?;
        let paths = picked_paths(&app).await?;
        attach_all(store, paths).await
    }
}

/// Files dropped on the window: attached here, announced to the page as
/// [`events::ATTACHED`] (the open thread's composer takes them).
pub fn dropped(app: &AppHandle, paths: Vec<PathBuf>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let picked = match store(&app) {
            Ok(store) => attach_all(store, paths).await,
            Err(e) => Err(e),
        };
        match picked {
            Ok(picked) => {
                if let Err(e) = app.emit(events::ATTACHED, &picked) {
                    tracing::warn!("cannot announce dropped files: {e}");
                }
            }
            Err(e) => tracing::warn!("dropped files were not attached: {e}"),
        }
    });
}
