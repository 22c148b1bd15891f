//! Running commands: each step prints what it does; failures say which command failed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Root of the workspace (parent of `xtask/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// The cargo target directory (honours `CARGO_TARGET_DIR`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// Where xtask keeps the tools it installs (pinned CLIs, npm packages).
pub fn tools_dir() -> PathBuf {
    target_dir().join("xtask")
}

/// Cargo arguments shared by `run`, `build` and `test`, so they all reuse the same
/// artifacts (`art-ui` is wasm-only and built by `ui::build`).
pub const WORKSPACE: &[&str] = &["--workspace", "--exclude", "art-ui", "--all-features"];

/// Print a progress line.
pub fn say(message: &str) {
    println!("\x1b[1;36m==>\x1b[0m {message}");
}

/// Whether this runs under CI (`CI` set to anything but empty, `0` or `false`).
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// A `cargo` command run from the workspace root, with the cargo that runs xtask.
///
/// Under CI, a clean clone builds everything once, on a disk that may have only 8 GB
/// free (a run failed with "No space left on device" there): incremental caches would
/// only cost time and disk (1.5 GB of a 9.5 GB cold run), and the line tables kept for
/// local backtraces cost some 40 MB in each of the dozen test binaries (a binary without
/// debug info is also stripped of the standard library's), so both are off unless asked
/// for. A failing test still names its file and line: the panic message carries them.
pub fn cargo(args: &[&str]) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(args).current_dir(root());
    ci_build_settings(&mut command);
    command
}

/// The build settings a CI run gives every command that compiles the workspace (cargo
/// itself, the Tauri CLI making the package): the same everywhere, so that each reuses
/// what the build step compiled. See [`cargo`].
pub fn ci_build_settings(command: &mut Command) {
    if on_ci() {
        for (var, value) in [
            ("CARGO_INCREMENTAL", "0"),
            ("CARGO_PROFILE_DEV_DEBUG", "false"),
        ] {
            if std::env::var_os(var).is_none() {
                command.env(var, value);
            }
        }
    }
}

/// Free space, in bytes, on the file system holding `path` (from POSIX `df -Pk`), or
/// `None` where `df` cannot tell.
pub fn free_space(path: &Path) -> Option<u64> {
    let text = output(Command::new("df").arg("-Pk").arg(path))?;
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Render a command for messages.
pub fn display(command: &Command) -> String {
    let mut text = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// Announce, run, and fail with the command line if it does not succeed.
pub fn step(title: &str, command: &mut Command) -> Result<(), String> {
    say(&format!("{title}: {}", display(command)));
    let status = command
        .status()
        .map_err(|e| format!("cannot run `{}`: {e}", display(command)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", display(command)))
    }
}

/// Run quietly and return trimmed stdout if it succeeded.
pub fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether a program is on `PATH`.
pub fn on_path(program: &str) -> bool {
    find_on_path(program).is_some()
}

/// Full path of a program on `PATH`.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The first of `args` as a number named `name` (e.g. `TRIALS`), or `default`.
pub fn number_arg<T: std::str::FromStr>(
    args: &[String],
    name: &str,
    default: T,
) -> Result<T, String> {
    match args.first() {
        None => Ok(default),
        Some(n) => n
            .parse()
            .map_err(|_| format!("{name} must be a number, not {n:?}")),
    }
}
