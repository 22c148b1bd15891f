//! Stdio servers a dead process left running. Each server leads a process group of its
//! own (`tree.rs`), killed when the server is stopped or the process exits in order; a
//! process that is killed or crashes cannot. Most servers leave when their input closes;
//! some do not (one still waiting on a request it sent, whose own time limit keeps it
//! alive). So while a server runs, its group, the process that started it and its
//! leader's start time are recorded (collection `mcp_processes`); the next instance to
//! open the data directory ([`super::McpManager::end_leftovers`]) ends the groups whose
//! starter is gone and whose leader is still the same process — the same start time, so
//! an id the system gave to something else since is never touched. Recorded on Linux,
//! where a process's start time can be read (`/proc`); on Windows the server's Job Object
//! ends with the process that holds it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::storage::{Collection, Record, StorageAdapter, encode};

/// A running server's process group, as recorded.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Started {
    /// The process that started it.
    owner: u32,
    /// Its leader's start time (`/proc/<pid>/stat`'s 22nd field: clock ticks since boot).
    since: String,
}

/// The records of the servers this instance runs.
pub(super) struct Leftovers {
    storage: Arc<dyn StorageAdapter>,
}

impl Leftovers {
    pub(super) fn new(storage: Arc<dyn StorageAdapter>) -> Self {
        Self { storage }
    }

    /// A server leading process group `group` started.
    pub(super) async fn started(&self, group: i32) {
        let Some(since) = start_time(group) else {
            return;
        };
        let started = Started {
            owner: std::process::id(),
            since,
        };
        let Ok(body) = encode(&started) else { return };
        let record = Record {
            id: group.to_string(),
            thread_id: None,
            trace_id: None,
            kind: None,
            timestamp: crate::clock::now_ms(),
            search_text: None,
            body,
            parent: None,
        };
        if let Err(e) = self
            .storage
            .set(Collection::McpProcesses, vec![record])
            .await
        {
            tracing::warn!(group, "could not record a server's process group: {e}");
        }
    }

    /// The server leading `group` stopped.
    pub(super) async fn stopped(&self, group: i32) {
        self.forget(&group.to_string()).await;
    }

    /// Delete the record `id` (a group's).
    async fn forget(&self, id: &str) {
        if let Err(e) = self.storage.delete(Collection::McpProcesses, id).await {
            tracing::warn!(group = id, "could not forget a server's process group: {e}");
        }
    }

    /// End the servers that processes now gone left running; how many were ended.
    pub(super) async fn end(&self) -> usize {
        let all = crate::storage::Query::default();
        let records = match self.storage.query(Collection::McpProcesses, &all).await {
            Ok(records) => records,
            Err(e) => {
                tracing::warn!("could not read the servers' process groups: {e}");
                return 0;
            }
        };
        let mut ended = 0;
        for record in records {
            let Ok(started) = record.decode::<Started>(Collection::McpProcesses) else {
                continue;
            };
            if crate::agent::claims::alive(started.owner) {
                continue;
            }
            if let Ok(group) = record.id.parse::<i32>()
                && start_time(group).as_deref() == Some(started.since.as_str())
            {
                tracing::info!(
                    group,
                    owner = started.owner,
                    "ending an MCP server a process that died left running"
                );
                kill_group(group);
                ended += 1;
            }
            self.forget(&record.id).await;
        }
        ended
    }
}

/// When process `pid` started (clock ticks since boot), where the system says.
#[cfg(target_os = "linux")]
fn start_time(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold anything), the fields from
    // the 3rd on: the start time is the 22nd.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_owned)
}

#[cfg(not(target_os = "linux"))]
fn start_time(_pid: i32) -> Option<String> {
    None
}

#[cfg(unix)]
fn kill_group(group: i32) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[cfg(not(unix))]
fn kill_group(_group: i32) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_processs_start_time_is_read_and_stays_the_same() {
        let me = i32::try_from(std::process::id()).unwrap();
        let first = start_time(me).expect("our own start time");
        assert!(first.parse::<u64>().is_ok(), "{first}");
        assert_eq!(start_time(me), Some(first));
        assert_eq!(start_time(i32::MAX), None);
    }
}
