//! `#[tauri::command]` functions, one module per area. Each validates its payload,
//! makes one call into `art`, and returns a DTO or an `IpcError`; each is declared in
//! `build.rs` and allowed in `capabilities/main.json`.

pub mod app;
pub mod args;
pub mod prompts;
pub mod runs;
pub mod settings;
pub mod threads;
pub mod traces;
