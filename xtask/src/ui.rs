//! Builds the Leptos UI into `ui/dist`: cargo (wasm32, release) → wasm-bindgen → static
//! files. Tauri embeds `ui/dist` into the app binary.
//!
//! No wasm-opt pass: Debian's binaryen (108) corrupts wasm-bindgen's externref table
//! initialisation (the UI fails at start with `__wbindgen_init_externref_table`), and
//! the size it saves (~160 KB of a ~540 KB module) does not justify a newer toolchain.

use std::process::Command;

use crate::cmd;
use crate::setup::Tools;

/// Static files copied next to the generated JS/wasm: (source, name in dist).
const STATIC_FILES: &[(&str, &str)] = &[
    ("ui/index.html", "index.html"),
    ("ui/boot.js", "boot.js"),
    ("ui/style/app.css", "app.css"),
    ("icons/128x128.png", "icon.png"),
];

/// Build `ui/dist`.
pub fn build(tools: &Tools) -> Result<(), String> {
    let root = cmd::root();
    cmd::step(
        "Building the UI (wasm32)",
        &mut cmd::cargo(&[
            "build",
            "-p",
            "art-ui",
            "--target",
            "wasm32-unknown-unknown",
            "--release",
        ]),
    )?;
    let dist = root.join("ui/dist");
    // Stale files must not be embedded: start from an empty folder.
    if dist.exists() {
        std::fs::remove_dir_all(&dist)
            .map_err(|e| format!("cannot clear {}: {e}", dist.display()))?;
    }
    std::fs::create_dir_all(&dist).map_err(|e| format!("cannot create {}: {e}", dist.display()))?;
    let wasm = cmd::target_dir().join("wasm32-unknown-unknown/release/art-ui.wasm");
    cmd::step(
        "Generating JS bindings",
        Command::new(&tools.wasm_bindgen)
            .args([
                "--target",
                "web",
                "--no-typescript",
                "--out-name",
                "art_ui",
                "--out-dir",
            ])
            .arg(&dist)
            .arg(&wasm),
    )?;
    for (from, to) in STATIC_FILES {
        std::fs::copy(root.join(from), dist.join(to))
            .map_err(|e| format!("cannot copy {from} into ui/dist: {e}"))?;
    }
    Ok(())
}
