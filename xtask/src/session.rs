//! A desktop session for tests and headless runs: Xvfb, a private D-Bus session bus,
//! an unlocked gnome-keyring (Secret Service) and tauri-driver.
//!
//! Every process is started in its own process group and the whole group is stopped
//! when the [`Session`] is dropped, so helpers they spawn (WebKit processes, the app
//! under test, D-Bus-activated services) go too.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::cmd;

mod keyring;

/// Password of the throw-away test keyring (it lives in a temp folder).
const KEYRING_PASSWORD: &str = "art-workbench-test-session";
/// How long a helper may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// What to start.
#[derive(Debug, Clone)]
pub struct Wants {
    /// Start Xvfb even when a display exists (tests never pop windows on a desktop).
    pub always_xvfb: bool,
    /// Start a private D-Bus session + keyring even when one exists (test isolation).
    pub always_dbus: bool,
    /// tauri-driver binary to start, for WebDriver tests.
    pub tauri_driver: Option<PathBuf>,
    /// Apps started through tauri-driver log at debug level (tests that look for
    /// secrets in the data directory then read everything the app could log).
    pub debug_logs: bool,
}

impl Wants {
    /// `cargo xtask run`: only what the machine lacks.
    pub fn for_interactive() -> Self {
        Self {
            always_xvfb: false,
            always_dbus: false,
            tauri_driver: None,
            debug_logs: false,
        }
    }

    /// `cargo xtask test`: an isolated session with a WebDriver.
    pub fn for_tests(tauri_driver: PathBuf) -> Self {
        Self {
            always_xvfb: true,
            always_dbus: true,
            tauri_driver: Some(tauri_driver),
            debug_logs: true,
        }
    }

    /// `cargo xtask bench desktop`: as for tests, with the app's usual logging.
    pub fn for_benchmarks(tauri_driver: PathBuf) -> Self {
        Self {
            debug_logs: false,
            ..Self::for_tests(tauri_driver)
        }
    }
}

/// Process groups of every live sidecar, so a signal handler can stop them all.
static LIVE_GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn live_groups() -> std::sync::MutexGuard<'static, Vec<u32>> {
    LIVE_GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Stop every sidecar still running (called when xtask is interrupted or terminated).
pub fn kill_all_sidecars() {
    for pgid in live_groups().drain(..) {
        signal_group(pgid, "TERM");
        std::thread::sleep(Duration::from_millis(200));
        signal_group(pgid, "KILL");
    }
}

/// A process group we started and must stop.
struct Sidecar {
    name: &'static str,
    child: Child,
}

impl Sidecar {
    fn spawn(name: &'static str, command: &mut Command) -> Result<Self, String> {
        // The session's helpers are Linux programs (Xvfb, D-Bus, WebKitWebDriver); the
        // group is what stops what they start.
        #[cfg(unix)]
        command.process_group(0);
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {name} (`{}`): {e}", cmd::display(command)))?;
        live_groups().push(child.id());
        Ok(Self { name, child })
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

fn signal_group(pgid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let pgid = self.child.id();
        live_groups().retain(|g| *g != pgid);
        signal_group(pgid, "TERM");
        let deadline = Instant::now() + Duration::from_secs(3);
        while !self.exited() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        // Whatever is left in the group (children that ignored TERM) goes now.
        signal_group(pgid, "KILL");
        let _ = self.child.wait();
        println!("    stopped {}", self.name);
    }
}

/// A helper the session runs: a process, or the keyring and its watcher. Dropping it
/// stops it.
#[expect(dead_code, reason = "only held, to be dropped: that stops it")]
enum Helper {
    Process(Sidecar),
    Keyring(keyring::Keyring),
}

/// The running helpers and the environment that points at them.
pub struct Session {
    env: Vec<(String, String)>,
    // Dropped in reverse order of start: driver, keyring, bus, display.
    helpers: Vec<Helper>,
    runtime_dir: Option<PathBuf>,
    webdriver_url: Option<String>,
}

impl Session {
    /// Start what `wants` asks for.
    pub fn start(wants: Wants) -> Result<Self, String> {
        let mut session = Self {
            env: vec![("NO_AT_BRIDGE".into(), "1".into())],
            helpers: Vec::new(),
            runtime_dir: None,
            webdriver_url: None,
        };
        let has_display =
            std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
        if wants.always_xvfb || !has_display {
            session.start_xvfb()?;
        }
        if wants.always_dbus || std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
            session.start_dbus_and_keyring()?;
        }
        if let Some(driver) = &wants.tauri_driver {
            // The app's default Ollama address is one the tests own (their sentinel
            // holds it), not 11434, where a real Ollama may run on the machine.
            session.set("OLLAMA_HOST", format!("127.0.0.1:{}", free_port()?));
            // Likewise the hub the app downloads its embedder from: a port the sentinel
            // holds (tests give the app its weights, or start a stand-in of the hub).
            session.set("HF_ENDPOINT", format!("http://127.0.0.1:{}", free_port()?));
            // A key in the app's environment that no MCP server it starts may see
            // (art_testkit::e2e::SENTINEL_KEY_VAR).
            session.set(
                "ART_E2E_SENTINEL_API_KEY",
                format!("sk-e2e-sentinel-{}", std::process::id()),
            );
            session.start_tauri_driver(driver, wants.debug_logs)?;
        }
        Ok(session)
    }

    /// Give a command this session's environment.
    pub fn apply(&self, command: &mut Command) {
        for (key, value) in &self.env {
            command.env(key, value);
        }
    }

    /// URL of tauri-driver, when started.
    pub fn webdriver_url(&self) -> Option<&str> {
        self.webdriver_url.as_deref()
    }

    fn set(&mut self, key: &str, value: impl Into<String>) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    fn start_xvfb(&mut self) -> Result<(), String> {
        let display = (90..200)
            .find(|n| {
                !Path::new(&format!("/tmp/.X{n}-lock")).exists()
                    && !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
            })
            .ok_or("no free X display number between :90 and :199")?;
        cmd::say(&format!("Starting Xvfb on :{display}"));
        let mut xvfb = Sidecar::spawn(
            "Xvfb",
            Command::new("Xvfb")
                .arg(format!(":{display}"))
                .args([
                    "-screen",
                    "0",
                    "1280x800x24",
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{display}"));
        wait_until("Xvfb", &mut xvfb, || socket.exists())?;
        self.helpers.push(Helper::Process(xvfb));
        self.set("DISPLAY", format!(":{display}"));
        Ok(())
    }

    fn start_dbus_and_keyring(&mut self) -> Result<(), String> {
        let runtime =
            std::env::temp_dir().join(format!("art-xtask-session-{}", std::process::id()));
        std::fs::create_dir_all(runtime.join("data"))
            .map_err(|e| format!("cannot create {}: {e}", runtime.display()))?;
        set_private(&runtime);
        self.runtime_dir = Some(runtime.clone());
        self.set("XDG_RUNTIME_DIR", runtime.display().to_string());

        cmd::say("Starting a private D-Bus session bus");
        let mut bus_cmd = Command::new("dbus-daemon");
        bus_cmd
            .args(["--session", "--nofork", "--nosyslog", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        self.apply(&mut bus_cmd);
        let mut bus = Sidecar::spawn("dbus-daemon", &mut bus_cmd)?;
        let stdout = bus.child.stdout.take().ok_or("dbus-daemon has no stdout")?;
        let mut address = String::new();
        BufReader::new(stdout)
            .read_line(&mut address)
            .map_err(|e| format!("cannot read the D-Bus address: {e}"))?;
        let address = address.trim().to_owned();
        if address.is_empty() {
            return Err("dbus-daemon did not print an address".into());
        }
        self.helpers.push(Helper::Process(bus));
        self.set("DBUS_SESSION_BUS_ADDRESS", address);

        cmd::say("Starting gnome-keyring (Secret Service), unlocked");
        let keyring = keyring::Keyring::start(self.env.clone(), &runtime.join("data"))?;
        self.helpers.push(Helper::Keyring(keyring));
        Ok(())
    }

    fn start_tauri_driver(&mut self, driver: &Path, debug_logs: bool) -> Result<(), String> {
        let port = free_port()?;
        let native_port = free_port()?;
        cmd::say(&format!("Starting tauri-driver on 127.0.0.1:{port}"));
        let mut command = Command::new(driver);
        command
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native_port.to_string(),
            ])
            .stdout(Stdio::null());
        // The app under test reads `<PROVIDER>_API_KEY` when the keychain has no key: a
        // developer's own keys must not make it list models from (or ask) real APIs.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().ends_with("_API_KEY") {
                command.env_remove(&key);
            }
        }
        self.apply(&mut command);
        // Its "browser" (a sign-in's authorization page) follows the page's redirects
        // back to the app, as a browser does once the user approves: the test
        // authorization servers approve at once. No real browser opens.
        command.env(
            "BROWSER",
            cmd::target_dir().join("mcp-servers").join("browser.sh"),
        );
        if debug_logs {
            command.env("ART_WORKBENCH_LOG", "debug");
        }
        let mut sidecar = Sidecar::spawn("tauri-driver", &mut command)?;
        wait_until("tauri-driver", &mut sidecar, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        })?;
        self.helpers.push(Helper::Process(sidecar));
        self.webdriver_url = Some(format!("http://127.0.0.1:{port}"));
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        while let Some(helper) = self.helpers.pop() {
            drop(helper);
        }
        if let Some(dir) = self.runtime_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Poll `ready` until true, failing early if the process died.
fn wait_until(
    name: &str,
    sidecar: &mut Sidecar,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if ready() {
            return Ok(());
        }
        if sidecar.exited() {
            return Err(format!("{name} exited during start-up"));
        }
        if Instant::now() > deadline {
            return Err(format!("{name} did not come up within {START_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `org.freedesktop.secrets` has an owner on the session bus.
fn secrets_on_bus(env: &[(String, String)]) -> bool {
    let mut query = Command::new("dbus-send");
    query.args([
        "--session",
        "--print-reply",
        "--dest=org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus.NameHasOwner",
        "string:org.freedesktop.secrets",
    ]);
    for (key, value) in env {
        query.env(key, value);
    }
    cmd::output(&mut query).is_some_and(|reply| reply.contains("boolean true"))
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free TCP port: {e}"))
}

fn set_private(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    #[cfg(not(unix))]
    let _ = dir;
}
