//! Generates the Tauri context (config, embedded UI assets, permissions).
//!
//! The app's own commands are declared here so that each one needs an explicit
//! permission in `capabilities/` (least privilege: nothing is allowed by default).
fn main() {
    let commands: &[&str] = &["app_info", "ui_ready"];
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(commands));
    tauri_build::try_build(attributes).expect("tauri build script failed");
}
