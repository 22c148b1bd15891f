//! The session's Secret Service: gnome-keyring-daemon, unlocked, its messages kept in
//! `target/artifacts/gnome-keyring.log`, and started again if it dies mid-run.
//!
//! gnome-keyring-daemon 42.1 was seen to abort in the middle of a full test run (a GLib
//! fatal error: `trap int3 … in libglib-2.0` in the kernel's log) while the CLI tests
//! signed in and stored keys from many processes at once; every test after it then found
//! no keychain. Its keyrings live on disk in the session's data folder, so a new daemon
//! has what the old one stored, and only what was in flight when it died is lost.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{KEYRING_PASSWORD, Sidecar, secrets_on_bus, wait_until};
use crate::cmd;

/// How often the watcher looks whether the daemon still runs.
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// The running daemon and the thread that watches it; dropping it stops both.
pub(super) struct Keyring {
    stop: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
}

/// What it takes to start the daemon (again).
struct Start {
    env: Vec<(String, String)>,
    data: PathBuf,
    log: PathBuf,
}

impl Keyring {
    /// Start the daemon on the session bus that `env` names, its keyrings in `data`, and
    /// wait until it owns `org.freedesktop.secrets`.
    pub(super) fn start(env: Vec<(String, String)>, data: &Path) -> Result<Self, String> {
        let log = cmd::target_dir().join("artifacts/gnome-keyring.log");
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let start = Start {
            env,
            data: data.to_path_buf(),
            log,
        };
        let first = start.spawn()?;
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = std::thread::spawn({
            let stop = Arc::clone(&stop);
            move || start.watch(first, &stop)
        });
        Ok(Self {
            stop,
            watcher: Some(watcher),
        })
    }
}

impl Start {
    fn spawn(&self) -> Result<Sidecar, String> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut command = Command::new("gnome-keyring-daemon");
        command
            .args(["--foreground", "--unlock", "--components=secrets"])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("XDG_DATA_HOME", &self.data)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log);
        let mut keyring = Sidecar::spawn("gnome-keyring-daemon", &mut command)?;
        if let Some(mut stdin) = keyring.child.stdin.take() {
            stdin
                .write_all(format!("{KEYRING_PASSWORD}\n").as_bytes())
                .map_err(|e| format!("cannot unlock the keyring: {e}"))?;
        }
        wait_until("gnome-keyring", &mut keyring, || secrets_on_bus(&self.env))?;
        Ok(keyring)
    }

    /// Until `stop`: whenever the daemon has exited, say so and start another.
    fn watch(&self, mut keyring: Sidecar, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            if let Ok(Some(status)) = keyring.child.try_wait() {
                cmd::say(&format!(
                    "gnome-keyring-daemon exited during the run ({status}; its messages: {}): starting it again",
                    self.log.display()
                ));
                match self.spawn() {
                    Ok(next) => keyring = next,
                    Err(e) => {
                        eprintln!("cannot start gnome-keyring again: {e}");
                        return;
                    }
                }
            }
            std::thread::sleep(WATCH_EVERY);
        }
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}
