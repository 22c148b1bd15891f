//! `cargo xtask fuzz [SECONDS] [FILTER]`: every fuzz target in `fuzz/` (or those whose
//! name contains FILTER) for SECONDS each (default 60) with cargo-fuzz on the nightly toolchain (both installed when missing), then a
//! table of executions and crashes per target. Crashes are kept in
//! `fuzz/artifacts/<target>/` to replay with `cargo +nightly fuzz run <target> <file>`.

use std::path::Path;
use std::process::Command;

use crate::{cmd, setup};

/// cargo-fuzz, pinned.
const CARGO_FUZZ_VERSION: &str = "0.13.1";
/// Seconds per target when none are given.
const SECONDS: u64 = 60;

/// Run every fuzz target (or those whose name contains the second argument).
pub fn run(args: &[String]) -> Result<(), String> {
    let seconds = cmd::number_arg(args, "SECONDS", SECONDS)?;
    setup::nightly()?;
    let cargo_fuzz = setup::cargo_tool("cargo-fuzz", CARGO_FUZZ_VERSION, "cargo-fuzz")?;
    let fuzz_dir = cmd::root().join("fuzz");
    // `cargo +nightly fuzz …` through rustup's cargo, with cargo-fuzz on the PATH.
    let bin_dir = cargo_fuzz
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .map_err(|e| e.to_string())?;
    let fuzz = |args: &[&str]| {
        let mut command = Command::new("cargo");
        command
            .arg("+nightly")
            .arg("fuzz")
            .args(args)
            .env("PATH", &path)
            .env_remove("CARGO")
            .current_dir(&fuzz_dir);
        command
    };
    let list = cmd::output(&mut fuzz(&["list"])).ok_or("`cargo fuzz list` failed")?;
    let filter = args.get(1).map(String::as_str).unwrap_or("");
    let targets: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.contains(filter))
        .collect();
    if targets.is_empty() {
        return Err(format!("no fuzz target's name contains {filter:?}"));
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for target in &targets {
        cmd::say(&format!("Fuzzing {target} for {seconds} s"));
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| e.to_string())?;
        seed(target, &corpus)?;
        let output = fuzz(&["run", target])
            .arg(&corpus)
            .args([
                "--",
                &format!("-max_total_time={seconds}"),
                "-print_final_stats=1",
            ])
            .args(limits(target))
            .current_dir(&fuzz_dir)
            .output()
            .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
        let log = String::from_utf8_lossy(&output.stderr);
        let runs = log
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .map_or_else(|| "?".to_owned(), |n| n.trim().to_owned());
        let crashed = !output.status.success();
        if crashed {
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            failed.push(*target);
        }
        rows.push(format!(
            "| {target} | {runs} | {} |",
            if crashed { "**crash**" } else { "0" }
        ));
    }
    println!("\n| Target | Executions ({seconds} s) | Crashes |\n|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "crashes in {}: see fuzz/artifacts/",
            failed.join(", ")
        ))
    }
}

/// The largest PDF seed, and input, of the PDF target: a whole 140 KB book takes about a
/// second a run under AddressSanitizer, and 60 s of it made 63 runs, barely mutated.
const PDF_MAX_LEN: u64 = 16 << 10;

/// libFuzzer options of `target` beyond the time limit.
fn limits(target: &str) -> Vec<String> {
    match target {
        "attach_pdf" => vec![format!("-max_len={PDF_MAX_LEN}")],
        _ => Vec::new(),
    }
}

/// Start the PDF target from the small real PDFs of the tests (ghostscript's, scanned,
/// encrypted; at most [`PDF_MAX_LEN`]): mutations of real files reach deeper than random
/// bytes.
fn seed(target: &str, corpus: &Path) -> Result<(), String> {
    if target != "attach_pdf" {
        return Ok(());
    }
    let fixtures = cmd::root().join("tests/fixtures/documents");
    let entries = std::fs::read_dir(&fixtures).map_err(|e| e.to_string())?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let small = entry.metadata().is_ok_and(|m| m.len() <= PDF_MAX_LEN);
        if small && path.extension().is_some_and(|e| e == "pdf") {
            let to = corpus.join(entry.file_name());
            if !to.exists() {
                std::fs::copy(&path, &to).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}
