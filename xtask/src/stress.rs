//! `cargo xtask stress [TRIALS]`: the long variants of the reliability tests. Today the
//! crash-safety test (`art-cli/tests/cli/crash.rs`: `art run` killed with SIGKILL at a random
//! moment, then the database, the answer and the thread are checked) with 200 trials
//! instead of the suite's 20. It prints the trials' outcomes and the seed to replay them.

use crate::cmd;

/// Trials when none are given.
const TRIALS: u32 = 200;

/// Run the long reliability tests.
pub fn run(args: &[String]) -> Result<(), String> {
    let trials = cmd::number_arg(args, "TRIALS", TRIALS)?;
    let mut test = cmd::cargo(&["test", "-p", "art-cli", "--test", "cli", "crash::"]);
    test.args(["--", "--nocapture"])
        .env("ART_CRASH_TRIALS", trials.to_string());
    cmd::step(&format!("Stress: {trials} SIGKILL trials"), &mut test)
}
