//! Builds the Leptos UI into `ui/dist`: cargo (wasm32, release) → wasm-bindgen →
//! optional wasm-opt → static files. Tauri embeds `ui/dist` into the app binary.

use std::path::Path;
use std::process::Command;

use crate::cmd;
use crate::setup::Tools;

/// Whether to shrink the wasm with wasm-opt (slower build, smaller app).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimise {
    /// Skip wasm-opt (development and tests).
    No,
    /// Run wasm-opt -Oz (release builds and bundles).
    Yes,
}

impl Optimise {
    /// wasm-opt for release builds only.
    pub fn from_release(release: bool) -> Self {
        if release { Self::Yes } else { Self::No }
    }
}

/// Static files copied next to the generated JS/wasm: (source, name in dist).
const STATIC_FILES: &[(&str, &str)] = &[
    ("ui/index.html", "index.html"),
    ("ui/boot.js", "boot.js"),
    ("ui/style/app.css", "app.css"),
    ("icons/128x128.png", "icon.png"),
];

/// Build `ui/dist`.
pub fn build(tools: &Tools, optimise: Optimise) -> Result<(), String> {
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
        std::fs::remove_dir_all(&dist).map_err(|e| format!("cannot clear {}: {e}", dist.display()))?;
    }
    std::fs::create_dir_all(&dist).map_err(|e| format!("cannot create {}: {e}", dist.display()))?;
    let wasm = cmd::target_dir().join("wasm32-unknown-unknown/release/art-ui.wasm");
    cmd::step(
        "Generating JS bindings",
        Command::new(&tools.wasm_bindgen)
            .args(["--target", "web", "--no-typescript", "--out-name", "art_ui", "--out-dir"])
            .arg(&dist)
            .arg(&wasm),
    )?;
    if optimise == Optimise::Yes {
        optimise_wasm(tools, &dist.join("art_ui_bg.wasm"))?;
    }
    for (from, to) in STATIC_FILES {
        std::fs::copy(root.join(from), dist.join(to))
            .map_err(|e| format!("cannot copy {from} into ui/dist: {e}"))?;
    }
    Ok(())
}

fn optimise_wasm(tools: &Tools, wasm: &Path) -> Result<(), String> {
    let Some(wasm_opt) = &tools.wasm_opt else {
        cmd::say("wasm-opt not found (package binaryen): skipping size optimisation");
        return Ok(());
    };
    // Debian's binaryen is old: name the features rustc's wasm uses explicitly.
    cmd::step(
        "Optimising the wasm",
        Command::new(wasm_opt)
            .args([
                "-Oz",
                "--enable-bulk-memory",
                "--enable-nontrapping-float-to-int",
                "--enable-sign-ext",
                "--enable-mutable-globals",
                "--enable-reference-types",
                "--enable-multivalue",
            ])
            .arg(wasm)
            .arg("-o")
            .arg(wasm),
    )
}
