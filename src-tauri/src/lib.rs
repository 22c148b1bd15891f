//! ART Workbench desktop shell: the only crate that knows Tauri.
//!
//! It builds the Tauri app (state, commands, events) over the `art` framework. Commands
//! are thin: payload in, one call into `art`, DTO or `{code, message, details}` out.
//! Nothing here talks to the network, the disk or the keychain except through `art`.

mod commands;
mod error;
mod events;
mod logging;
mod state;
mod workbench;

use state::AppState;

/// Build and run the app until its last window closes.
pub fn run() {
    let started = std::time::Instant::now();
    let data_dir = state::prepare_data_dir();
    // Held for the life of the app: dropping it flushes the log file.
    let _log_guard = logging::init(data_dir.as_ref().ok());
    tracing::info!(version = art::VERSION, "starting {}", art::APP_NAME);
    if let Err(e) = &data_dir {
        tracing::error!("data directory unusable: {e}");
    }

    let handlers: Box<dyn Fn(tauri::ipc::Invoke<tauri::Wry>) -> bool + Send + Sync> =
        Box::new(tauri::generate_handler![
            commands::app::app_info,
            commands::app::ui_ready,
            commands::threads::list_threads,
            commands::threads::create_thread,
            commands::threads::rename_thread,
            commands::threads::delete_thread,
            commands::threads::list_messages,
            commands::threads::search,
            commands::runs::send_message,
            commands::runs::regenerate,
            commands::runs::edit_and_resend,
            commands::runs::cancel_run,
            commands::runs::list_observations,
            commands::settings::get_thread_config,
            commands::settings::set_thread_config,
            commands::settings::list_tools,
            commands::settings::list_providers,
            commands::settings::list_models,
            commands::settings::ollama_doctor,
            commands::settings::set_api_key,
            commands::settings::delete_api_key,
            commands::prompts::list_prompts,
            commands::prompts::save_prompt,
            commands::prompts::delete_prompt,
            commands::traces::export_traces,
        ]);
    let app_state = AppState::new(started, data_dir);
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(app_state)
        .setup(|app| {
            state::start_background_probes(app.handle());
            Ok(())
        })
        .invoke_handler(move |invoke| {
            // Keys a command does not take are refused before it runs.
            let message = &invoke.message;
            if let tauri::ipc::InvokeBody::Json(payload) = message.payload()
                && let Some(error) = commands::args::unexpected(message.command(), payload)
            {
                invoke.resolver.reject(error);
                return true;
            }
            handlers(invoke)
        })
        .run(tauri::generate_context!());
    if let Err(e) = result {
        tracing::error!("the app stopped with an error: {e}");
        eprintln!("ART Workbench could not start: {e}");
        std::process::exit(1);
    }
}
