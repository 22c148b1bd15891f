//! `.deb` packaging through the Tauri CLI, and installing the package on this machine.

use std::path::PathBuf;
use std::process::Command;

use crate::setup::{self, Tools};
use crate::{cmd, ui};

/// The cargo profile a `.deb` is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Unoptimised, with debug assertions (`cargo xtask bundle --debug`): what
    /// `cargo xtask test` installs and tests, made from the build its tests ran.
    Debug,
    /// The shipped package (`cargo xtask bundle`).
    Release,
}

impl Profile {
    /// The folder under `target/` the build lands in (a custom profile's is its name).
    pub fn dir(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }
}

/// `cargo xtask bundle`: check tools, then build the package.
pub fn build(profile: Profile) -> Result<PathBuf, String> {
    let tools = setup::ensure(setup::Needs::BUNDLE)?;
    ui::build()?;
    cmd::step("Bundling the .deb", &mut command(&tools, profile)?)?;
    newest(profile)
}

/// The Tauri CLI's build of the `.deb`, for a UI already built (`ui/dist`).
pub fn command(tools: &Tools, profile: Profile) -> Result<Command, String> {
    let mut tauri = tauri_deb(tools, "build", profile)?;
    cmd::ci_build_settings(&mut tauri);
    Ok(tauri)
}

/// The Tauri CLI packaging the app already built with `profile` (`tauri bundle`: no
/// compilation). What the test run installs: the very binary its tests ran. (`tauri
/// build` would compile the app again, alone and with the CLI's own features — for
/// cargo another feature set for most of the tree, so a second copy of it: 25 minutes
/// and several GB of a cold run.)
pub fn package_built(tools: &Tools, profile: Profile) -> Result<Command, String> {
    tauri_deb(tools, "bundle", profile)
}

/// `tauri <verb> --bundles deb --ci [--debug]`, run in `src-tauri`.
fn tauri_deb(tools: &Tools, verb: &str, profile: Profile) -> Result<Command, String> {
    let cli = tools
        .tauri_cli
        .as_ref()
        .ok_or("the Tauri CLI was not set up")?;
    let mut tauri = Command::new(cli);
    tauri
        .args([verb, "--bundles", "deb", "--ci"])
        .current_dir(cmd::root().join("src-tauri"));
    if profile == Profile::Debug {
        tauri.arg("--debug");
    }
    Ok(tauri)
}

/// The newest `.deb` the last build with `profile` made.
pub fn newest(profile: Profile) -> Result<PathBuf, String> {
    let dir = cmd::target_dir().join(profile.dir()).join("bundle/deb");
    let newest = std::fs::read_dir(&dir)
        .map_err(|e| format!("no bundle folder {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .max_by_key(|path| path.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| format!("no .deb produced in {}", dir.display()))?;
    cmd::say(&format!("Package: {}", newest.display()));
    Ok(newest)
}

/// Install a `.deb` with dpkg (as root, or with password-less sudo).
pub fn install(deb: &PathBuf) -> Result<(), String> {
    let is_root = cmd::output(Command::new("id").arg("-u")).as_deref() == Some("0");
    let mut dpkg = if is_root {
        Command::new("dpkg")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", "dpkg"]);
        sudo
    };
    dpkg.arg("-i").arg(deb);
    cmd::step("Installing the .deb", &mut dpkg)
}
