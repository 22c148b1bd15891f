//! `#[tauri::command]` functions, one module per area. Each validates its payload,
//! makes one call into `art`, and returns a DTO or an `IpcError`.

pub mod app;
