//! ART Workbench desktop shell: the only crate that knows Tauri.
//!
//! It builds the Tauri app (state, commands, events) over the `art` framework. Commands
//! are thin: payload in, one call into `art`, DTO or `{code, message, details}` out.
//! Nothing here talks to the network, the disk or the keychain except through `art`.

mod commands;
mod error;
mod events;
mod highlight;
mod logging;
#[cfg(target_os = "linux")]
mod painting;
mod state;
mod workbench;

use state::AppState;
use tauri::Manager;

/// Quit as if the window closed when the system asks the app to end (SIGTERM at logout
/// or shutdown, SIGHUP from a closed terminal): MCP servers stop and a run waiting on a
/// server's question stays kept on it, instead of dying with servers left running.
fn quit_when_told(app: tauri::AppHandle) {
    #[cfg(unix)]
    tauri::async_runtime::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut terminate), Ok(mut hangup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            tracing::warn!("cannot listen for SIGTERM/SIGHUP: the app ends abruptly on them");
            return;
        };
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM: quitting"),
            _ = hangup.recv() => tracing::info!("SIGHUP: quitting"),
        }
        app.exit(0);
    });
    #[cfg(not(unix))]
    let _ = app;
}

/// Build and run the app until its last window closes.
pub fn run() {
    // First: it may start the program again (WebKit reads its variables at start).
    #[cfg(target_os = "linux")]
    let painting = painting::prepare();
    let started = std::time::Instant::now();
    let data_dir = state::prepare_data_dir();
    // Held for the life of the app: dropping it flushes the log file.
    let _log_guard = logging::init(data_dir.as_ref().ok());
    tracing::info!(version = art::VERSION, "starting {}", art::APP_NAME);
    #[cfg(target_os = "linux")]
    painting.log();
    // A reader's panic on a damaged file is a refusal: into the log, not onto stderr.
    art::panics::quiet_caught();
    if let Err(e) = &data_dir {
        tracing::error!("data directory unusable: {e}");
    }

    let app_state = AppState::new(started, data_dir);
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(app_state)
        .setup(|app| {
            state::start_background_probes(app.handle());
            quit_when_told(app.handle().clone());
            Ok(())
        })
        .invoke_handler(commands::route)
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                commands::attachments::dropped(window.app_handle(), paths.clone());
            }
        })
        .build(tauri::generate_context!());
    let app = match result {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the app stopped with an error: {e}");
            eprintln!("ART Workbench could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        if let tauri::RunEvent::Exit = event {
            // MCP servers end with the app: no process outlives it. A run waiting on a
            // server's question stays kept on it, to go on when it is answered.
            if let Ok(workbench) = app.state::<AppState>().workbench() {
                // Spans not sent yet stay queued for the next start.
                workbench.push_stop.cancel();
                if let Err(e) = workbench.push.keep_unsent() {
                    tracing::warn!("unsent spans were not kept for the next start: {e}");
                }
                tauri::async_runtime::block_on(workbench.art.close());
                tracing::info!("MCP servers stopped; quitting");
            }
        }
    });
}
