//! `cargo xtask bench [desktop | framework | adapters | export]…`: the benchmarks, each printing
//! its figures (BENCHMARKS.md keeps them with this command). With no names, all run.
//!
//! - `desktop`: the release app (built as the `.deb` is) through WebDriver — opening a
//!   5,000-message thread, streaming a 3,000-line answer (`tests/benches/desktop.rs`);
//! - `framework`: storage and agent budgets (`art/benches/framework.rs`, criterion);
//! - `adapters`: every provider adapter over HTTP (`art/benches/adapters.rs`, criterion);
//! - `export`: 1,000,000 observations to native JSONL and to OTLP (`art/benches/export.rs`).

use crate::session::{Session, Wants};
use crate::setup::{self, Needs};
use crate::{bundle, cmd};

/// The benchmarks, in the order they run.
const ALL: &[&str] = &["desktop", "framework", "adapters", "export"];

/// Run the named benchmarks (all when none is named).
pub fn run(names: &[String]) -> Result<(), String> {
    if let Some(bad) = names.iter().find(|n| !ALL.contains(&n.as_str())) {
        return Err(format!(
            "unknown benchmark {bad:?}: choose from {}",
            ALL.join(", ")
        ));
    }
    let wanted = |name: &str| names.is_empty() || names.iter().any(|n| n == name);
    if wanted("desktop") {
        desktop()?;
    }
    for bench in ["framework", "adapters", "export"] {
        if wanted(bench) {
            cmd::step(
                &format!("Benchmark: {bench}"),
                &mut cmd::cargo(&["bench", "-p", "art", "--bench", bench]),
            )?;
        }
    }
    Ok(())
}

/// The release app under Xvfb with its own D-Bus session, driven by tauri-driver.
fn desktop() -> Result<(), String> {
    let tools = setup::ensure(Needs::TEST)?;
    bundle::build_with(&tools, true)?;
    let driver = tools
        .tauri_driver
        .clone()
        .ok_or("tauri-driver was not set up")?;
    let session = Session::start(Wants::for_benchmarks(driver))?;
    let app = cmd::target_dir().join("release/art-workbench");
    let mut bench = cmd::cargo(&["bench", "-p", "art-testkit", "--features", "e2e"]);
    bench.args(["--bench", "desktop"]);
    session.apply(&mut bench);
    if let Some(url) = session.webdriver_url() {
        bench.env("ART_E2E_WEBDRIVER", url);
    }
    bench.env("ART_E2E_APP", &app).env(
        "ART_E2E_ARTIFACTS",
        cmd::target_dir().join("artifacts/bench"),
    );
    cmd::step("Benchmark: desktop (release app)", &mut bench)
}
