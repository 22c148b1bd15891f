//! Installs what is missing, idempotently: Debian/Ubuntu packages, the wasm32 target,
//! pinned CLIs (tauri-driver, the Tauri CLI). wasm-bindgen is a library of xtask (`ui.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd;

/// Packages the app needs to build, run and be tested on Debian/Ubuntu.
const APT_PACKAGES: &[&str] = &[
    "build-essential",
    "pkg-config",
    "libssl-dev",
    "libwebkit2gtk-4.1-dev",
    "libjavascriptcoregtk-4.1-dev",
    "libgtk-3-dev",
    "libsoup-3.0-dev",
    "librsvg2-dev",
    "libayatana-appindicator3-dev",
    "libxdo-dev",
    "libsecret-1-dev",
    "file",
    // Running headless, testing, screenshots.
    "xvfb",
    "xauth",
    "webkit2gtk-driver",
    "dbus",
    "dbus-x11",
    "gnome-keyring",
    "imagemagick",
];

/// Pinned tauri-driver (WebDriver proxy for the end-to-end tests).
const TAURI_DRIVER_VERSION: &str = "2.1.0";
/// Pinned Tauri CLI from npm (builds the `.deb`).
const TAURI_CLI_VERSION: &str = "2.12.5";

/// What a command needs installed.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// tauri-driver and WebKitWebDriver for end-to-end tests.
    pub driver: bool,
    /// The Tauri CLI (npm) for bundling.
    pub tauri_cli: bool,
    /// Node, npm and Python with `venv`: the benchmark's peers, the MCP test servers.
    pub peers: bool,
    /// The Windows target and a MinGW C compiler (SQLite's build script needs one), for
    /// the check that the workspace compiles for Windows.
    pub windows: bool,
}

impl Needs {
    /// `cargo xtask run`.
    pub const RUN: Self = Self {
        driver: false,
        tauri_cli: false,
        peers: false,
        windows: false,
    };
    /// `cargo xtask test`.
    pub const TEST: Self = Self {
        driver: true,
        tauri_cli: true,
        peers: true,
        windows: true,
    };
    /// `cargo xtask bench` without the desktop app: the peers' runtimes.
    pub const PEERS: Self = Self {
        driver: false,
        tauri_cli: false,
        peers: true,
        windows: false,
    };
    /// `cargo xtask bench`: tauri-driver for the desktop app, and the peers' runtimes.
    pub const BENCH: Self = Self {
        driver: true,
        tauri_cli: false,
        peers: true,
        windows: false,
    };
    /// `cargo xtask bundle`.
    pub const BUNDLE: Self = Self {
        driver: false,
        tauri_cli: true,
        peers: false,
        windows: false,
    };
}

/// Paths of the tools found or installed.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `tauri-driver`, when asked for.
    pub tauri_driver: Option<PathBuf>,
    /// The Tauri CLI entry point, when asked for.
    pub tauri_cli: Option<PathBuf>,
}

/// Make sure everything `needs` asks for is there; install what is missing.
pub fn ensure(needs: Needs) -> Result<Tools, String> {
    cmd::say("Checking prerequisites");
    system_packages(needs)?;
    rust_target(WASM_TARGET)?;
    if needs.windows {
        rust_target(WINDOWS_TARGET)?;
    }
    let tauri_driver = if needs.driver {
        Some(cargo_tool(
            "tauri-driver",
            TAURI_DRIVER_VERSION,
            "tauri-driver",
        )?)
    } else {
        None
    };
    let tauri_cli = if needs.tauri_cli {
        Some(tauri_cli()?)
    } else {
        None
    };
    Ok(Tools {
        tauri_driver,
        tauri_cli,
    })
}

/// Whether `python3 -m venv` can make an environment with pip (Debian moves `ensurepip`,
/// which it needs, into `python3-venv`).
fn python_venv_works() -> bool {
    Command::new("python3")
        .args(["-m", "ensurepip", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    cmd::output(Command::new("id").arg("-u")).as_deref() == Some("0")
}

/// Debian/Ubuntu packages via apt (sudo when not root); elsewhere, say what is needed.
fn system_packages(needs: Needs) -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        cmd::say(
            "Not Linux: make sure the Tauri prerequisites are installed \
             (macOS: Xcode Command Line Tools; Windows: MSVC build tools and WebView2)",
        );
        return Ok(());
    }
    let mut wanted: Vec<&str> = APT_PACKAGES.to_vec();
    if (needs.tauri_cli || needs.peers) && !cmd::on_path("npm") {
        wanted.extend(["nodejs", "npm"]);
    }
    if needs.peers && !python_venv_works() {
        wanted.extend(["python3", "python3-venv"]);
    }
    if needs.windows {
        wanted.push(MINGW_PACKAGE);
    }
    if !cmd::on_path("dpkg-query") || !cmd::on_path("apt-get") {
        return Err(format!(
            "this is not a Debian/Ubuntu system, so packages cannot be installed automatically.\n\
             Install the equivalents of: {}\n\
             (see https://v2.tauri.app/start/prerequisites/ for other distributions)",
            wanted.join(" ")
        ));
    }
    let missing = missing_packages(&wanted);
    if missing.is_empty() {
        println!("    system packages: all {} present", wanted.len());
        return Ok(());
    }
    let list = missing.join(" ");
    let sudo: &[&str] = if is_root() {
        &[]
    } else if Command::new("sudo")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        &["sudo", "-n"]
    } else {
        return Err(format!(
            "missing system packages and no password-less sudo. Run:\n\
             \x20   sudo apt-get update && sudo apt-get install -y {list}\n\
             then run this command again."
        ));
    };
    let apt = |args: &[&str]| {
        let mut all: Vec<&str> = sudo.to_vec();
        all.push("apt-get");
        all.extend_from_slice(args);
        let mut command = Command::new(all[0]);
        command
            .args(&all[1..])
            .env("DEBIAN_FRONTEND", "noninteractive");
        command
    };
    cmd::step("Refreshing package lists", &mut apt(&["update", "-q"]))?;
    let mut install = apt(&["install", "-y", "-q"]);
    install.args(&missing);
    cmd::step(
        &format!("Installing {} system packages", missing.len()),
        &mut install,
    )?;
    let still = missing_packages(&wanted);
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "packages still missing after install: {}",
            still.join(" ")
        ))
    }
}

fn missing_packages<'a>(wanted: &[&'a str]) -> Vec<&'a str> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${db:Status-Status}\\n"])
        .args(wanted)
        .output();
    let installed: Vec<String> = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            l.strip_suffix(" installed")
                .map(|p| p.split(':').next().unwrap_or(p).to_owned())
        })
        .collect();
    wanted
        .iter()
        .copied()
        .filter(|p| !installed.iter().any(|i| i == p))
        .collect()
}

/// The UI's target.
const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The target `cargo xtask test` checks the workspace for, so Windows keeps compiling.
pub const WINDOWS_TARGET: &str = "x86_64-pc-windows-gnu";
/// The C compiler for that target (SQLite's build script compiles C).
const MINGW_PACKAGE: &str = "gcc-mingw-w64-x86-64";

/// A rustup target, added when missing.
fn rust_target(target: &str) -> Result<(), String> {
    let installed = cmd::output(Command::new("rustup").args(["target", "list", "--installed"]))
        .ok_or("rustup not found: install Rust with rustup (https://rustup.rs), then run again")?;
    if installed.lines().any(|l| l.trim() == target) {
        println!("    rust target {target}: present");
        return Ok(());
    }
    cmd::step(
        &format!("Adding the {target} target"),
        Command::new("rustup").args(["target", "add", target]),
    )
}

/// The nightly toolchain (for `cargo fuzz`), installed with rustup when missing.
pub fn nightly() -> Result<(), String> {
    let toolchains = cmd::output(Command::new("rustup").args(["toolchain", "list"]))
        .ok_or("rustup not found: install Rust with rustup (https://rustup.rs), then run again")?;
    if toolchains.lines().any(|l| l.starts_with("nightly")) {
        println!("    nightly toolchain: present");
        return Ok(());
    }
    cmd::step(
        "Installing the nightly toolchain",
        Command::new("rustup").args(["toolchain", "install", "nightly", "--profile", "minimal"]),
    )
}

/// Whether `cargo install --list` under `root` (or the default root) has `krate` at `version`.
fn installed_in(root: Option<&Path>, krate: &str, version: &str) -> bool {
    let mut list = cmd::cargo(&["install", "--list"]);
    if let Some(root) = root {
        list.arg("--root").arg(root);
    }
    cmd::output(&mut list).is_some_and(|text| {
        text.lines()
            .any(|l| l.trim_end_matches(':') == format!("{krate} v{version}"))
    })
}

fn cargo_home_bin() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|home| home.join("bin"))
}

/// A binary from a crate at an exact version, built with its own lock file: reuse a
/// matching global install, else install it into the project's tools folder.
pub fn cargo_tool(krate: &str, version: &str, binary: &str) -> Result<PathBuf, String> {
    let root = cmd::tools_dir();
    let local = root.join("bin").join(binary);
    if local.is_file() && installed_in(Some(&root), krate, version) {
        println!("    {krate} {version}: present");
        return Ok(local);
    }
    if let Some(global) = cargo_home_bin().map(|b| b.join(binary))
        && global.is_file()
        && installed_in(None, krate, version)
    {
        println!("    {krate} {version}: present ({})", global.display());
        return Ok(global);
    }
    let mut install = cmd::cargo(&["install", krate, "--version", version, "--locked"]);
    install.arg("--root").arg(&root);
    cmd::step(&format!("Installing {krate} {version}"), &mut install)?;
    Ok(local)
}

/// The Tauri CLI from npm, pinned, in the project's tools folder.
fn tauri_cli() -> Result<PathBuf, String> {
    let dir = cmd::tools_dir().join("npm");
    let bin = dir.join("node_modules/.bin/tauri");
    let manifest = dir.join("node_modules/@tauri-apps/cli/package.json");
    let have = std::fs::read_to_string(&manifest).unwrap_or_default();
    if bin.is_file() && have.contains(&format!("\"version\": \"{TAURI_CLI_VERSION}\"")) {
        println!("    @tauri-apps/cli {TAURI_CLI_VERSION}: present");
        return Ok(bin);
    }
    if !cmd::on_path("npm") {
        return Err("npm not found: install Node.js 18+ with npm, then run again".into());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    cmd::step(
        &format!("Installing @tauri-apps/cli {TAURI_CLI_VERSION}"),
        Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
            ])
            .arg(&dir)
            .arg(format!("@tauri-apps/cli@{TAURI_CLI_VERSION}")),
    )?;
    Ok(bin)
}
