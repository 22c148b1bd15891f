//! What the shell keeps for the life of the app, and its start-up preparation.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use art::paths::DataDir;
use art::secrets::{KeychainStore, SecretStore};
use art_types::{IpcError, KeychainStatus};
use tauri::{AppHandle, Manager};
use tokio::sync::OnceCell;

use crate::error::data_dir_error;
use crate::workbench::Workbench;

/// Shared state behind every command.
pub struct AppState {
    /// When the process started (for the ready event's uptime).
    pub started: Instant,
    /// The data directory, or why it cannot be used (the UI shows that error).
    pub data_dir: Result<DataDir, IpcError>,
    /// The OS keychain.
    pub secrets: Arc<dyn SecretStore>,
    /// Where exports go without asking (`--export-dir`).
    pub export_dir: Option<PathBuf>,
    /// The folder whose files the file picker "chooses" without asking (`--pick-dir`).
    pub pick_dir: Option<PathBuf>,
    /// The framework over the data directory's database, or why it could not open.
    workbench: Result<Arc<Workbench>, IpcError>,
    /// Result of the keychain probe, computed once off the UI thread.
    keychain: OnceCell<KeychainStatus>,
}

impl AppState {
    /// State for a freshly started app.
    pub fn new(started: Instant, data_dir: Result<DataDir, IpcError>) -> Self {
        let workbench = match &data_dir {
            Ok(dir) => Workbench::open(dir).map(Arc::new),
            Err(e) => Err(e.clone()),
        };
        if let Err(e) = &workbench {
            tracing::error!("the workbench could not open: {e}");
        }
        Self {
            started,
            data_dir,
            secrets: Arc::new(KeychainStore::default()),
            export_dir: export_dir(),
            pick_dir: path_argument("pick-dir", std::env::args().skip(1)),
            workbench,
            keychain: OnceCell::new(),
        }
    }

    /// The framework, or the error that kept it from opening (shown by every command).
    pub fn workbench(&self) -> Result<Arc<Workbench>, IpcError> {
        self.workbench.clone()
    }

    /// Keychain reachability; the first caller runs the probe on a blocking thread
    /// (it talks D-Bus), later callers get the cached answer.
    pub async fn keychain_status(&self) -> KeychainStatus {
        self.keychain
            .get_or_init(|| {
                let secrets = Arc::clone(&self.secrets);
                async move {
                    tokio::task::spawn_blocking(move || secrets.probe())
                        .await
                        .unwrap_or_else(|e| KeychainStatus::Unavailable {
                            reason: format!("the keychain probe stopped unexpectedly: {e}"),
                            hint: "Restart the app; if it persists, report a bug.".into(),
                        })
                }
            })
            .await
            .clone()
    }
}

/// The `--<name> <path>` (or `--<name>=<path>`) command-line argument, if given.
fn path_argument(name: &str, mut args: impl Iterator<Item = String>) -> Option<PathBuf> {
    let flag = format!("--{name}");
    let prefix = format!("--{name}=");
    while let Some(arg) = args.next() {
        if arg == flag {
            return args.next().map(PathBuf::from);
        }
        if let Some(value) = arg.strip_prefix(&prefix) {
            return Some(PathBuf::from(value));
        }
    }
    None
}

/// `--export-dir DIR`: exports are written there without the save dialog (scripted use
/// and end-to-end tests).
pub fn export_dir() -> Option<PathBuf> {
    path_argument("export-dir", std::env::args().skip(1))
}

/// Resolve and create the data directory (`--data-dir`, else `ART_WORKBENCH_DATA_DIR`,
/// else the OS app-data directory), turning failures into the IPC error the UI will
/// show: the app still opens, so the user can read what is wrong.
pub fn prepare_data_dir() -> Result<DataDir, IpcError> {
    let dir = match path_argument("data-dir", std::env::args().skip(1)) {
        Some(path) => DataDir::resolve_from(Some(path)),
        None => DataDir::resolve(),
    }
    .map_err(data_dir_error)?;
    dir.ensure().map_err(data_dir_error)?;
    Ok(dir)
}

/// Start work that should not delay the window: the event bridge and the keychain probe.
pub fn start_background_probes(app: &AppHandle) {
    if let Ok(workbench) = app.state::<AppState>().workbench() {
        workbench.start_bridge(app);
        // The enabled MCP servers start with the app, all at once, without holding it up.
        let mcp = Arc::clone(&workbench.art.mcp);
        tauri::async_runtime::spawn(async move {
            // First, what a killed app left running ends.
            mcp.end_leftovers().await;
            if let Err(e) = mcp.start_enabled().await {
                tracing::warn!("could not start the MCP servers: {e}");
            }
        });
        // Runs queued for the trace collector (some perhaps by the last session) are
        // sent from now on, with the saved settings and the keychain's headers.
        let push_wb = Arc::clone(&workbench);
        tauri::async_runtime::spawn(async move {
            let secrets = Arc::clone(&push_wb.secrets) as Arc<dyn art::secrets::SecretStore>;
            if let Err(e) = art::push::load(&push_wb.art, secrets, &push_wb.push).await {
                tracing::warn!("sending traces could not start: {e}");
            }
            // Runs a crash left unsent, queued again from the database (the redactor,
            // which reads the keychain, is built only then).
            if push_wb.push.left_unsent() > 0 {
                let redactor = push_wb.push_redactor().await;
                if let Err(e) = push_wb.push.recover(&push_wb.art, &redactor).await {
                    tracing::warn!("runs a crash left unsent could not be queued again: {e}");
                }
            }
            let push = Arc::clone(&push_wb.push);
            push.run(push_wb.push_stop.clone()).await;
        });
        // Answers a killed app left streaming are marked interrupted (the bridge is up,
        // so an open thread view hears of it).
        tauri::async_runtime::spawn(async move {
            match workbench.art.conversation.recover_interrupted().await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(answers = n, "answers cut off by a crash marked interrupted")
                }
                Err(e) => tracing::warn!("could not check for answers cut off by a crash: {e}"),
            }
        });
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let status = app.state::<AppState>().keychain_status().await;
        match &status {
            KeychainStatus::Available { backend } => {
                tracing::info!(backend, "OS keychain reachable")
            }
            KeychainStatus::Unavailable { reason, .. } => {
                tracing::warn!(reason, "OS keychain unavailable")
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn path_arguments_in_both_spellings() {
        let data_dir = |list: &[&str]| path_argument("data-dir", args(list));
        assert_eq!(data_dir(&[]), None);
        assert_eq!(
            data_dir(&["--data-dir", "/tmp/a"]),
            Some(PathBuf::from("/tmp/a"))
        );
        assert_eq!(
            data_dir(&["-x", "--data-dir=/tmp/b"]),
            Some(PathBuf::from("/tmp/b"))
        );
        assert_eq!(data_dir(&["--data-dir"]), None);
        assert_eq!(
            path_argument(
                "export-dir",
                args(&["--data-dir", "/a", "--export-dir", "/b"])
            ),
            Some(PathBuf::from("/b"))
        );
    }
}
