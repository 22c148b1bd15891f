//! Generates the Tauri context (config, embedded UI assets, permissions).
//!
//! The app's own commands (`art_types::commands::NAMES`) are declared here so that each
//! one needs an explicit permission in `capabilities/` (least privilege: nothing is
//! allowed by default); `tests/security.rs` checks the capability file against them.
fn main() {
    let attributes = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(art_types::commands::NAMES));
    tauri_build::try_build(attributes).expect("tauri build script failed");
}
