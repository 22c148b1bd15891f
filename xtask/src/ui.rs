//! Builds the Leptos UI into `ui/dist`: cargo (wasm32, release) → wasm-bindgen → static
//! files. Tauri embeds `ui/dist` into the app binary.
//!
//! The JS bindings come from `wasm-bindgen-cli-support`, the library the `wasm-bindgen`
//! CLI wraps, linked into xtask: no CLI to install (it took ~3.7 min to compile on a fresh
//! clone, TLS and a test server included), and its version cannot drift from the UI's
//! `wasm-bindgen`: both depend on `wasm-bindgen-shared` at exactly their own version, and
//! that crate declares `links`, so Cargo allows only one version of it in the lock file.
//!
//! No wasm-opt pass: Debian's binaryen (108) corrupts wasm-bindgen's externref table
//! initialisation (the UI fails at start with `__wbindgen_init_externref_table`), and
//! the size it saves (~160 KB of a ~540 KB module) does not justify a newer toolchain.

use std::path::Path;

use wasm_bindgen_cli_support::Bindgen;

use crate::cmd;

/// Static files copied next to the generated JS/wasm: (source, name in dist).
const STATIC_FILES: &[(&str, &str)] = &[
    ("ui/index.html", "index.html"),
    ("ui/boot.js", "boot.js"),
    ("ui/style/app.css", "app.css"),
    ("icons/128x128.png", "icon.png"),
];

/// Build `ui/dist`.
pub fn build() -> Result<(), String> {
    let root = cmd::root();
    cmd::step(
        "Building the UI (wasm32)",
        &mut cmd::cargo(&[
            "build",
            "-p",
            "art-ui",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            "ui",
        ]),
    )?;
    // Generate into a staging folder, then copy only what changed into ui/dist: Tauri
    // embeds ui/dist at compile time, so untouched files mean no app rebuild.
    let staging = cmd::tools_dir().join("ui-staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .map_err(|e| format!("cannot clear {}: {e}", staging.display()))?;
    }
    std::fs::create_dir_all(&staging)
        .map_err(|e| format!("cannot create {}: {e}", staging.display()))?;
    let wasm = cmd::target_dir().join("wasm32-unknown-unknown/ui/art-ui.wasm");
    cmd::say(&format!(
        "Generating JS bindings (wasm-bindgen): {}",
        wasm.display()
    ));
    let fail = |e| {
        format!(
            "wasm-bindgen could not make the JS bindings of {}: {e:#}",
            wasm.display()
        )
    };
    Bindgen::new()
        .input_path(&wasm)
        .web(true)
        .map_err(fail)?
        .typescript(false)
        // Function names only serve a panic's stack trace (its message and source location
        // stay); they were 1.3 MB of a 5.9 MB module that the web process holds.
        .remove_name_section(true)
        .remove_producers_section(true)
        // As the CLI does by default: `init()` finds `art_ui_bg.wasm` next to the script.
        .omit_default_module_path(false)
        .out_name("art_ui")
        .generate(&staging)
        .map_err(fail)?;
    for (from, to) in STATIC_FILES {
        std::fs::copy(root.join(from), staging.join(to))
            .map_err(|e| format!("cannot copy {from} into the UI bundle: {e}"))?;
    }
    sync(&staging, &root.join("ui/dist"))
}

/// Make `dist` hold exactly the files of `staging`, writing only those that differ.
fn sync(staging: &Path, dist: &Path) -> Result<(), String> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        format!("cannot {what} {}: {e}", path.display())
    };
    std::fs::create_dir_all(dist).map_err(|e| io("create", dist, e))?;
    let mut wanted = Vec::new();
    for entry in std::fs::read_dir(staging).map_err(|e| io("read", staging, e))? {
        let path = entry.map_err(|e| io("read", staging, e))?.path();
        let name = path.file_name().map(ToOwned::to_owned).unwrap_or_default();
        let target = dist.join(&name);
        let new = std::fs::read(&path).map_err(|e| io("read", &path, e))?;
        if std::fs::read(&target).ok().as_deref() != Some(new.as_slice()) {
            std::fs::write(&target, &new).map_err(|e| io("write", &target, e))?;
        }
        wanted.push(name);
    }
    for entry in std::fs::read_dir(dist).map_err(|e| io("read", dist, e))? {
        let path = entry.map_err(|e| io("read", dist, e))?.path();
        if !wanted
            .iter()
            .any(|n| Some(n.as_os_str()) == path.file_name())
        {
            std::fs::remove_file(&path).map_err(|e| io("remove", &path, e))?;
        }
    }
    Ok(())
}
