//! The user's time inside a tool call: while a call waits for the user (an MCP server's
//! question), its time limit stands still — a limit is for the tool, not for how long
//! someone takes to fill a form. [`run_within`] is the limit every tool call runs under.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ExecutionContext, ToolError, ToolExecutor};

/// Time a call spent waiting for the user, so far.
#[derive(Debug, Default)]
pub struct UserTime {
    /// Finished waits, and the start of the one under way (waits may overlap: the
    /// count says how many are under way).
    inner: Mutex<Waits>,
}

#[derive(Debug, Default)]
struct Waits {
    done: Duration,
    open: usize,
    since: Option<Instant>,
}

impl UserTime {
    /// Start a wait for the user; it lasts until the returned guard is dropped.
    pub fn pause(&self) -> Paused<'_> {
        let mut waits = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if waits.open == 0 {
            waits.since = Some(Instant::now());
        }
        waits.open += 1;
        Paused(self)
    }

    /// The time waited so far, the wait under way included.
    pub fn total(&self) -> Duration {
        let waits = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        waits.done + waits.since.map_or(Duration::ZERO, |s| s.elapsed())
    }
}

/// A wait for the user under way (see [`UserTime::pause`]).
#[must_use = "the wait ends when this is dropped"]
pub struct Paused<'a>(&'a UserTime);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        let mut waits = self.0.inner.lock().unwrap_or_else(|p| p.into_inner());
        waits.open = waits.open.saturating_sub(1);
        if waits.open == 0
            && let Some(since) = waits.since.take()
        {
            waits.done += since.elapsed();
        }
    }
}

/// Run `tool` on `arguments` within its time limit, not counting the time the call
/// waits for the user; past the limit the call is dropped (an MCP server is told it was
/// cancelled) and a `TOOL_TIMEOUT` error names the limit.
pub async fn run_within(
    tool: &dyn ToolExecutor,
    name: &str,
    arguments: &Value,
    context: &ExecutionContext,
) -> Result<Value, ToolError> {
    let limit = tool.timeout();
    let started = tokio::time::Instant::now();
    let call = tool.execute(arguments, context);
    tokio::pin!(call);
    loop {
        let deadline = started + limit + context.user_time.total();
        if deadline <= tokio::time::Instant::now() {
            return Err(ToolError::new(
                "TOOL_TIMEOUT",
                format!("`{name}` did not finish within {} ms", limit.as_millis()),
            ));
        }
        tokio::select! {
            outcome = &mut call => return outcome,
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_add_up_and_overlapping_ones_count_once() {
        let time = UserTime::default();
        assert_eq!(time.total(), Duration::ZERO);
        {
            let _one = time.pause();
            let _two = time.pause();
            std::thread::sleep(Duration::from_millis(30));
            assert!(
                time.total() >= Duration::from_millis(30),
                "counts while under way"
            );
        }
        let after = time.total();
        assert!(after >= Duration::from_millis(30) && after < Duration::from_millis(1000));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(time.total(), after, "no wait under way: it stands still");
    }
}
