//! `cargo xtask test`: every check, in order, with one summary line at the end.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::bundle::Profile;
use crate::cmd::WORKSPACE;
use crate::failures::Failures;
use crate::session::{Session, Wants};
use crate::setup::{self, Needs};
use crate::{bundle, cmd, peers, ui};

/// Tells the tests where the MCP servers were installed (the testkit's default is the
/// same folder of the workspace's target directory).
const MCP_SERVERS_VAR: &str = "ART_MCP_SERVERS";
/// Where Arize Phoenix is installed, for the tests (`art_testkit::phoenix`).
const PHOENIX_VAR: &str = "ART_PHOENIX";
/// Where the tests find the embedder's weights (as `art-testkit`'s `embedder` reads it).
const WEIGHTS_VAR: &str = "ART_EMBEDDER_WEIGHTS";

/// Where the installed package puts the app.
const INSTALLED_APP: &str = "/usr/bin/art-workbench";

/// What a cold run leaves in `target/` (7.5 GB measured on a clean clone under `CI`,
/// the Windows check's own target folder included, before Arize Phoenix's 0.85 GB
/// virtual environment), with a margin. A run with 5.7 GB free failed for want of disk.
const COLD_RUN_DISK: u64 = 10 << 30;

const WINDOWS_CHECK: &str = "Windows build (cargo check, beside)";

/// Workspace crates the Windows check leaves out: they never build for Windows — the UI
/// is WebAssembly (its native build exists for its unit tests), the benchmarks pin
/// Linux cores. Their dependency trees (Leptos, `web-sys`, the peers' SDKs) were a
/// large part of the check's work, for nothing a Windows user runs.
const NOT_ON_WINDOWS: [&str; 2] = ["art-ui", "art-bench"];

/// `cargo check` for Windows of what runs there — the app, `art`, their libraries, and
/// the test kit and xtask (type-checked on every run). In a target folder of its own:
/// cargo locks the host's build folder (`target/debug`) for a cross check too, which
/// would stop the tests.
fn windows_check() -> Command {
    let mut windows = cmd::cargo(&["check", "--workspace"]);
    for crate_name in NOT_ON_WINDOWS {
        windows.args(["--exclude", crate_name]);
    }
    windows
        .arg("--target")
        .arg(setup::WINDOWS_TARGET)
        .env("CARGO_TARGET_DIR", cmd::target_dir().join("windows-check"));
    windows
}

/// What the tests need besides the build — the MCP servers (npm, PyPI), the
/// embedder's weights and Arize Phoenix —, installed on a thread of its own while the
/// UI compiles: mostly downloads and unpacking, which leave the cores to the compiler.
struct Installs {
    mcp_servers: PathBuf,
    weights: PathBuf,
    phoenix: PathBuf,
}

/// [`Installs`] under way.
struct Installing(std::thread::JoinHandle<Result<Installs, String>>);

impl Installing {
    /// What was installed, once it is.
    fn wait(self) -> Result<Installs, String> {
        self.0
            .join()
            .map_err(|_| "the installing thread panicked".to_owned())?
    }
}

impl Installs {
    fn start() -> Installing {
        Installing(std::thread::spawn(|| {
            let mcp_servers = peers::install_mcp_servers()?;
            let weights = peers::install_embedder_weights(&mcp_servers.join("venv/bin/python"))?;
            let phoenix = peers::install_phoenix()?;
            Ok(Self {
                mcp_servers,
                weights,
                phoenix,
            })
        }))
    }
}

/// A step run beside the others: its output goes to a log under `target/artifacts`,
/// shown when it fails; started with `nice` where there is one, so that it takes the
/// cores the steps in front leave idle (downloads, links on one core, tests waiting on a
/// window). It stays in the suite's process group, so Ctrl-C stops it with the rest.
struct Background {
    name: &'static str,
    started: Instant,
    log: PathBuf,
    child: Result<std::process::Child, String>,
}

impl Background {
    /// Start `command` at niceness `nice`, its output going to `target/artifacts/<log>`.
    fn start(name: &'static str, log: &str, nice: u8, command: &Command) -> Self {
        let log = cmd::target_dir().join("artifacts").join(log);
        cmd::say(&format!(
            "{name} (beside the next steps, log in {}): {}",
            log.display(),
            cmd::display(command)
        ));
        let child = Self::spawn(command, &log, nice);
        Self {
            name,
            started: Instant::now(),
            log,
            child,
        }
    }

    fn spawn(command: &Command, log: &PathBuf, nice: u8) -> Result<std::process::Child, String> {
        let mut niced = if cmd::on_path("nice") {
            let mut niced = Command::new("nice");
            niced.arg(format!("-n{nice}")).arg(command.get_program());
            niced
        } else {
            Command::new(command.get_program())
        };
        niced.args(command.get_args());
        if let Some(dir) = command.get_current_dir() {
            niced.current_dir(dir);
        }
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => niced.env(key, value),
                None => niced.env_remove(key),
            };
        }
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        niced
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot run `{}`: {e}", cmd::display(command)))
    }

    /// Wait for it: whether it succeeded (its log shown when not), and how long it took
    /// from its start.
    fn wait(self) -> (bool, Duration) {
        let ok = match self.child {
            Ok(mut child) => match child.wait() {
                Ok(status) if status.success() => true,
                Ok(status) => {
                    let text = std::fs::read_to_string(&self.log).unwrap_or_default();
                    eprintln!("{text}\n{} failed ({status})", self.name);
                    false
                }
                Err(e) => {
                    eprintln!("{}: {e}", self.name);
                    false
                }
            },
            Err(e) => {
                eprintln!("{}: {e}", self.name);
                false
            }
        };
        (ok, self.started.elapsed())
    }

    /// Wait for it and count it in the report.
    fn finish(self, report: &mut Report) -> bool {
        let name = self.name;
        let (ok, took) = self.wait();
        report.count_step(name, ok, took)
    }
}

/// Bytes as the summary shows them: `9.4 GB`.
fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / (1u64 << 30) as f64)
}

#[derive(Default)]
struct Report {
    /// Each step's name, verdict and how long it took.
    rows: Vec<(String, String, Duration)>,
    passed: u64,
    failed: u64,
    /// The failing tests, named at the end of the summary.
    failures: Failures,
}

impl Report {
    /// A check that passes or fails as a whole (counts as one).
    fn check(&mut self, name: &str, command: &mut Command) -> bool {
        self.check_with(name, || cmd::step(name, command))
    }

    /// A step that passes or fails as a whole (counts as one), its error printed.
    fn check_with(&mut self, name: &str, step: impl FnOnce() -> Result<(), String>) -> bool {
        let started = Instant::now();
        let ok = step().map_err(|e| eprintln!("{e}")).is_ok();
        self.count_step(name, ok, started.elapsed())
    }

    fn count_step(&mut self, name: &str, ok: bool, took: Duration) -> bool {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        let verdict = if ok { "ok" } else { "FAILED" };
        self.rows.push((name.to_owned(), verdict.to_owned(), took));
        ok
    }

    /// A `cargo test` run: counts every test case it reports.
    fn tests(&mut self, name: &str, command: &mut Command) -> bool {
        cmd::say(&format!("{name}: {}", cmd::display(command)));
        let started = Instant::now();
        let (passed, failed, ok) = run_counting(command, &mut self.failures);
        self.passed += passed;
        self.failed += failed;
        // A run that failed without a failing test (did not compile, crashed) counts once.
        if !ok && failed == 0 {
            self.failed += 1;
        }
        let verdict = if ok { "ok" } else { "FAILED" };
        self.rows.push((
            name.to_owned(),
            format!("{verdict} ({passed} passed, {failed} failed)"),
            started.elapsed(),
        ));
        ok
    }

    /// A preparation step that succeeded (shown with its time, not counted as a test).
    fn done(&mut self, name: &str, started: Instant) {
        self.rows
            .push((name.to_owned(), "ok".into(), started.elapsed()));
    }

    fn skip(&mut self, name: &str) {
        self.rows
            .push((name.to_owned(), "not run".into(), Duration::ZERO));
    }
}

/// Run a test command, echoing its output, and add up its `test result:` lines.
fn run_counting(command: &mut Command, failures: &mut Failures) -> (u64, u64, bool) {
    let Ok(mut child) = command.stdout(Stdio::piped()).spawn() else {
        eprintln!("cannot start `{}`", cmd::display(command));
        return (0, 0, false);
    };
    let (mut passed, mut failed) = (0, 0);
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            failures.read(&line);
            if let Some(rest) = line.trim().strip_prefix("test result: ") {
                passed += count(rest, " passed");
                failed += count(rest, " failed");
            }
        }
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    (passed, failed, ok)
}

/// In `ok. 5 passed; 0 failed; …`, the number before `label`.
fn count(summary: &str, label: &str) -> u64 {
    summary
        .split(';')
        .find_map(|part| part.trim().strip_suffix(label.trim()).map(str::trim))
        .and_then(|n| n.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Clippy run inside the build rather than beside it. `cargo clippy` compiles the
/// workspace's crates with clippy's driver in check mode, which needs every dependency
/// compiled to metadata first: a second pass over the whole tree (3.8 of 47 minutes of a
/// cold run). Here the build itself goes through the driver, as `cargo clippy` sets it
/// up, so one compilation of the tree yields the lints (same lints, same targets: every
/// workspace crate's lib, bins and tests, all features, `-D warnings`) and the artifacts.
/// Every command of the run that compiles the workspace carries the same setting, so the
/// test runs reuse what the build made instead of compiling the workspace again.
struct Lints {
    driver: PathBuf,
}

impl Lints {
    /// Clippy's driver beside the toolchain's `rustc`, where `cargo clippy` expects it;
    /// the `clippy` component is added with rustup when it is missing.
    fn find() -> Result<Self, String> {
        let sysroot = cmd::output(Command::new("rustc").args(["--print", "sysroot"]))
            .ok_or("`rustc --print sysroot` failed")?;
        let driver = PathBuf::from(sysroot)
            .join("bin")
            .join(format!("clippy-driver{}", std::env::consts::EXE_SUFFIX));
        if !driver.is_file() {
            cmd::step(
                "Installing clippy",
                Command::new("rustup").args(["component", "add", "clippy"]),
            )?;
        }
        if driver.is_file() {
            Ok(Self { driver })
        } else {
            Err(format!("clippy's driver is not at {}", driver.display()))
        }
    }

    /// `command` compiles the workspace's own crates through clippy, warnings denied (the
    /// variables `cargo clippy -- -D warnings` sets; its driver reads the arguments each
    /// followed by its separator).
    fn on<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command.env("RUSTC_WORKSPACE_WRAPPER", &self.driver).env(
            "CLIPPY_ARGS",
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
        )
    }
}

/// The whole suite.
pub fn run() -> Result<(), String> {
    let started = Instant::now();
    let disk = cmd::root();
    let free_before = cmd::free_space(&disk);
    if let Some(free) = free_before.filter(|free| *free < COLD_RUN_DISK) {
        eprintln!(
            "warning: {} free on the disk of {}; a cold run needs about {}, and a build \
             that runs out stops with \"No space left on device\"",
            gigabytes(free),
            disk.display(),
            gigabytes(COLD_RUN_DISK)
        );
    }
    let tools = setup::ensure(Needs::TEST)?;
    let mut report = Report::default();
    report.done("Tools (install what is missing)", started);
    let ui_started = Instant::now();
    let installs = Installs::start();
    ui::build()?;
    report.done("UI (wasm32 release build, JS bindings)", ui_started);

    // The Windows check takes the cores the steps below leave idle (it needs the UI:
    // the app embeds it when it compiles).
    let windows = Background::start(WINDOWS_CHECK, "windows-check.log", 19, &windows_check());

    let servers_waited = Instant::now();
    let Installs {
        mcp_servers,
        weights,
        phoenix,
    } = installs.wait()?;
    report.done(
        "Test servers, weights, Phoenix (beside the UI)",
        servers_waited,
    );

    report.check("Formatting", &mut cmd::cargo(&["fmt", "--all", "--check"]));
    let lints = Lints::find()?;
    let mut build = cmd::cargo(&["build"]);
    build.args(WORKSPACE).arg("--all-targets");
    if report.check("Build and lints (clippy)", lints.on(&mut build)) {
        let driver = tools
            .tauri_driver
            .clone()
            .ok_or("tauri-driver was not set up")?;
        let session = Session::start(Wants::for_tests(driver))?;
        let artifacts = cmd::target_dir().join("artifacts");
        let debug_app = cmd::target_dir().join("debug/art-workbench");

        // The UI's pure logic (run folding, Markdown) runs natively; the rest of the UI is
        // covered by the end-to-end tests.
        let mut ui_build = cmd::cargo(&["build", "-p", "art-ui", "--all-targets"]);
        if report.check("UI lints (clippy, native)", lints.on(&mut ui_build)) {
            let mut ui_tests = cmd::cargo(&["test", "-p", "art-ui"]);
            report.tests("UI unit tests", lints.on(&mut ui_tests));
        }
        let mut tests = e2e_command(&session, &debug_app, &artifacts.join("e2e-debug"), &[]);
        lints.on(&mut tests);
        tests.env(MCP_SERVERS_VAR, &mcp_servers);
        tests.env(WEIGHTS_VAR, &weights);
        tests.env(PHOENIX_VAR, &phoenix);
        report.tests("Unit, integration and end-to-end tests", &mut tests);

        // The package is made of the binary the tests above ran (the debug profile):
        // packaged, not compiled again — an optimised build, or even `tauri build`'s
        // debug one, would compile the dependency tree a second time.
        let mut package = bundle::package_built(&tools, Profile::Debug)?;
        let installed = report.check(".deb of the tested build", &mut package)
            && report.check_with("Install the .deb", || {
                bundle::newest(Profile::Debug).and_then(|deb| bundle::install(&deb))
            });
        if installed {
            let mut installed = e2e_command(
                &session,
                &PathBuf::from(INSTALLED_APP),
                &artifacts.join("e2e-installed"),
                &["--test", "e2e"],
            );
            installed.env(MCP_SERVERS_VAR, &mcp_servers);
            installed.env(WEIGHTS_VAR, &weights);
            installed.env(PHOENIX_VAR, &phoenix);
            lints.on(&mut installed);
            report.tests("End-to-end on the installed .deb", &mut installed);
        }
        drop(session);
    } else {
        report.skip("Tests (build failed)");
    }
    windows.finish(&mut report);

    println!();
    cmd::say(&format!("Summary ({})", minutes(started.elapsed())));
    for (name, verdict, took) in &report.rows {
        println!("    {name:<44} {verdict:<28} {}", minutes(*took));
    }
    if let (Some(before), Some(after)) = (free_before, cmd::free_space(&disk)) {
        println!(
            "Disk: {} free before, {} after",
            gigabytes(before),
            gigabytes(after)
        );
    }
    if !report.failures.is_empty() {
        report.failures.print();
    }
    println!("{} passed, {} failed", report.passed, report.failed);
    if report.failed == 0 {
        Ok(())
    } else {
        Err(format!("{} failed", report.failed))
    }
}

/// `cargo xtask e2e [--installed] [FILTER]`: while working on the app, the end-to-end
/// tests alone (those whose name contains FILTER) against a fresh debug build — or, with
/// `--installed`, against the app the last `.deb` installed (to chase what only the
/// release build does) —, in the same session the full suite uses. Not a substitute for
/// `cargo xtask test`.
pub fn e2e(filter: Option<&str>, installed: bool) -> Result<(), String> {
    let tools = setup::ensure(Needs::TEST)?;
    let installs = Installs::start();
    ui::build()?;
    let Installs {
        mcp_servers,
        weights,
        phoenix,
    } = installs.wait()?;
    let app = if installed {
        PathBuf::from(INSTALLED_APP)
    } else {
        let mut build = cmd::cargo(&["build", "-p", "art-workbench"]);
        cmd::step("Build (the app)", &mut build)?;
        cmd::target_dir().join("debug/art-workbench")
    };
    let driver = tools.tauri_driver.ok_or("tauri-driver was not set up")?;
    let session = Session::start(Wants::for_tests(driver))?;
    let artifacts = cmd::target_dir().join(if installed {
        "artifacts/e2e-installed"
    } else {
        "artifacts/e2e-debug"
    });
    let mut tests = e2e_command(&session, &app, &artifacts, &["--test", "e2e"]);
    tests.env(MCP_SERVERS_VAR, &mcp_servers);
    tests.env(WEIGHTS_VAR, &weights);
    tests.env(PHOENIX_VAR, &phoenix);
    if let Some(filter) = filter {
        tests.arg(filter);
    }
    let ok = cmd::step("End-to-end tests", &mut tests);
    drop(session);
    ok
}

/// A step's duration as the summary shows it: `4.2 min`, or `12 s` under a minute.
fn minutes(took: Duration) -> String {
    let secs = took.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.0} s")
    } else {
        format!("{:.1} min", secs / 60.0)
    }
}

/// `cargo test` over the workspace inside the session, aimed at one app binary.
fn e2e_command(session: &Session, app: &PathBuf, artifacts: &PathBuf, extra: &[&str]) -> Command {
    // Every test binary runs, whatever fails first: a failure does not hide the others.
    let mut command = cmd::cargo(&["test", "--no-fail-fast"]);
    command.args(WORKSPACE).args(extra);
    session.apply(&mut command);
    if let Some(url) = session.webdriver_url() {
        command.env("ART_E2E_WEBDRIVER", url);
    }
    command
        .env("ART_E2E_APP", app)
        .env("ART_E2E_ARTIFACTS", artifacts);
    command
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{count, gigabytes, minutes};

    #[test]
    fn durations_read_as_seconds_then_minutes() {
        assert_eq!(minutes(Duration::from_millis(12_400)), "12 s");
        assert_eq!(minutes(Duration::from_secs(252)), "4.2 min");
    }

    #[test]
    fn sizes_read_as_gigabytes() {
        assert_eq!(gigabytes(12 << 30), "12.0 GB");
        assert_eq!(gigabytes(10_093_173_760), "9.4 GB");
    }

    #[test]
    fn free_space_is_read_where_df_answers() {
        if crate::cmd::on_path("df") {
            let free = crate::cmd::free_space(&crate::cmd::root());
            assert!(free.is_some_and(|bytes| bytes > 0), "{free:?}");
        }
    }

    #[test]
    fn counts_are_read_from_cargo_test_summaries() {
        let line =
            "ok. 12 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s";
        assert_eq!(count(line, " passed"), 12);
        assert_eq!(count(line, " failed"), 3);
        assert_eq!(count("FAILED. 0 passed; 1 failed;", " failed"), 1);
        assert_eq!(count("garbage", " passed"), 0);
    }
}
