//! Generates the Tauri context (config, embedded UI assets, permissions).
//!
//! The app's own commands are declared here so that each one needs an explicit
//! permission in `capabilities/` (least privilege: nothing is allowed by default).
fn main() {
    let commands: &[&str] = &[
        "app_info",
        "ui_ready",
        "list_threads",
        "create_thread",
        "rename_thread",
        "delete_thread",
        "list_messages",
        "search",
        "send_message",
        "regenerate",
        "edit_and_resend",
        "cancel_run",
        "list_observations",
        "get_thread_config",
        "set_thread_config",
        "list_tools",
        "list_providers",
        "list_models",
        "ollama_doctor",
        "set_api_key",
        "delete_api_key",
        "list_prompts",
        "save_prompt",
        "delete_prompt",
        "export_traces",
    ];
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(commands));
    tauri_build::try_build(attributes).expect("tauri build script failed");
}
