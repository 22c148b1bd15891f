//! `cargo xtask`: the project's own set-up, build, run and test automation.
//!
//! - `cargo xtask run [--release] [-- APP ARGS]` installs what is missing, builds the UI and
//!   the app, and opens the window.
//! - `cargo xtask test` runs formatting, lints, every unit / integration / end-to-end test,
//!   builds and installs the `.deb` and checks the installed app, then prints
//!   `N passed, M failed`.
//! - `cargo xtask bundle [--debug]` builds the `.deb`.
//! - `cargo xtask bench [NAME…]` runs the benchmarks (stream, framework, export, desktop,
//!   adapters) and rewrites BENCHMARKS.md from their figures.
//! - `cargo xtask stress [TRIALS]` runs the long reliability tests (200 SIGKILL trials).
//! - `cargo xtask fuzz [SECONDS] [FILTER]` runs every fuzz target, or those whose name
//!   contains FILTER (default 60 s each).
//!
//! Everything it installs is idempotent: a second run finds it and moves on. Anything it
//! starts (Xvfb, a D-Bus session, gnome-keyring, tauri-driver) it stops again, also when
//! interrupted (Ctrl-C) or terminated.

mod bench;
mod bundle;
mod cmd;
#[cfg(test)]
mod docs;
mod failures;
mod fuzz;
mod peers;
mod session;
mod setup;
mod stress;
mod test;
mod ui;

use std::process::ExitCode;

fn usage() -> &'static str {
    "usage: cargo xtask <command>\n\
     \n\
     commands:\n\
     \x20 run [--release] [-- ARGS]   install what is missing, build, open the app\n\
     \x20 test                        fmt, clippy, all tests (unit, integration, e2e, .deb)\n\
     \x20 bundle [--debug]            build the .deb package\n\
     \x20 bench [NAME...]             benchmarks (stream, framework, export, desktop, adapters,\n\
     \x20                            mcp;\n\
     \x20                            default: all), then BENCHMARKS.md rewritten\n\
     \x20 e2e [--installed] [FILTER]  the end-to-end tests alone (debug app, or the installed\n\
     \x20                             .deb's), those matching FILTER\n\
     \x20 stress [TRIALS]             long reliability tests: SIGKILL trials (default: 200)\n\
     \x20 fuzz [SECONDS] [FILTER]     every fuzz target (or those named *FILTER*) for SECONDS (default: 60)\n"
}

fn main() -> ExitCode {
    // On Ctrl-C / SIGTERM / SIGHUP, stop every helper we started before going.
    let _ = ctrlc::set_handler(|| {
        eprintln!("\nxtask: interrupted, stopping the helpers it started…");
        session::kill_all_sidecars();
        std::process::exit(130);
    });
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("test") => test::run(),
        Some("e2e") => {
            let installed = args[1..].iter().any(|a| a == "--installed");
            let filter = args[1..].iter().find(|a| *a != "--installed");
            test::e2e(filter.map(String::as_str), installed)
        }
        Some("bench") => bench::run(&args[1..]),
        Some("stress") => stress::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bundle") => {
            let debug = args[1..].iter().any(|a| a == "--debug");
            bundle::build(if debug {
                bundle::Profile::Debug
            } else {
                bundle::Profile::Release
            })
            .map(drop)
        }
        Some("-h" | "--help" | "help") => {
            print!("{}", usage());
            Ok(())
        }
        _ => Err(format!("unknown or missing command\n\n{}", usage())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask run`.
fn run(args: &[String]) -> Result<(), String> {
    let (ours, app_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let release = ours.iter().any(|a| a == "--release");
    if let Some(bad) = ours.iter().find(|a| *a != "--release") {
        return Err(format!("unknown option {bad:?} for `run`\n\n{}", usage()));
    }
    setup::ensure(setup::Needs::RUN)?;
    ui::build()?;
    // The same flags as `cargo xtask test`, so switching between the two rebuilds nothing.
    let mut build = cmd::cargo(&["build"]);
    build.args(cmd::WORKSPACE);
    if release {
        build.arg("--release");
    }
    cmd::step("Building the app", &mut build)?;
    let profile = if release {
        bundle::Profile::Release
    } else {
        bundle::Profile::Debug
    };
    let binary = cmd::target_dir().join(profile.dir()).join("art-workbench");
    let session = session::Session::start(session::Wants::for_interactive())?;
    cmd::say(&format!("Starting {}", binary.display()));
    let mut app = std::process::Command::new(&binary);
    app.args(app_args);
    session.apply(&mut app);
    let status = app
        .status()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    drop(session);
    if status.success() {
        Ok(())
    } else {
        Err(format!("the app exited with {status}"))
    }
}
