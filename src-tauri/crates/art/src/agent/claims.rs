//! One run per thread, whoever runs it: the app, `art` in a terminal, or both at once on
//! the same data directory. A run claims its thread for this process (a set in memory)
//! and records the claim in storage (`active_runs`: the process id and the run), so a
//! run in another process is refused while that process lives. A claim left by a
//! process that died (a crash, SIGKILL) names a process that is gone and is taken over.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::AgentError;
use crate::clock;
use crate::storage::{Collection, Record, StorageAdapter, encode};

/// A thread's claim, as stored.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    pid: u32,
    trace_id: String,
}

/// Whether process `pid` still runs (Unix and Windows). A process we may not ask
/// about (another user's) exists, so it counts as running.
pub(crate) fn alive(pid: u32) -> bool {
    // No process has an id beyond a Unix pid's range (a corrupt claim's, say).
    if cfg!(unix) && i32::try_from(pid).is_err() {
        return false;
    }
    !matches!(
        process_alive::state(process_alive::Pid::from(pid)),
        process_alive::State::Dead
    )
}

/// The threads with a run in this process, and the claims in storage.
pub struct Claims {
    storage: Arc<dyn StorageAdapter>,
    here: Arc<Mutex<HashSet<String>>>,
}

/// A thread claimed by a run; [`Claim::release`] gives it back (a claim dropped
/// without it is given back in this process, and its stored record names a process
/// that will be gone).
pub struct Claim {
    storage: Arc<dyn StorageAdapter>,
    here: Arc<Mutex<HashSet<String>>>,
    thread_id: String,
    /// The stored claim's body, as written.
    body: String,
}

impl Claims {
    /// Claims kept in `storage`.
    pub fn new(storage: Arc<dyn StorageAdapter>) -> Self {
        Self {
            storage,
            here: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// Whether `thread_id` has a run, in this process or in another that lives.
    pub async fn busy(&self, thread_id: &str) -> Result<bool, AgentError> {
        if self
            .here
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(thread_id)
        {
            return Ok(true);
        }
        Ok(self.elsewhere(thread_id).await?.is_some())
    }

    /// The claim on `thread_id` of another process that lives, if any.
    async fn elsewhere(&self, thread_id: &str) -> Result<Option<Stored>, AgentError> {
        let record = self.storage.get(Collection::ActiveRuns, thread_id).await?;
        Ok(record.as_ref().and_then(live_other))
    }

    /// Claim `thread_id` for run `trace_id`, or say who has it. The stored claim is
    /// taken by one compare-and-swap (in the writer's IMMEDIATE transaction): of several
    /// processes that start a run on one thread at the same moment, exactly one wins.
    pub async fn claim(&self, thread_id: &str, trace_id: &str) -> Result<Claim, AgentError> {
        let busy = || AgentError::Busy(thread_id.to_owned());
        if !self
            .here
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(thread_id.to_owned())
        {
            return Err(busy());
        }
        // From here on the claim is ours in this process: dropped, it is given back.
        let mut claim = Claim {
            storage: Arc::clone(&self.storage),
            here: Arc::clone(&self.here),
            thread_id: thread_id.to_owned(),
            body: String::new(),
        };
        let stored = Stored {
            pid: std::process::id(),
            trace_id: trace_id.to_owned(),
        };
        let record = Record {
            id: thread_id.to_owned(),
            thread_id: Some(thread_id.to_owned()),
            trace_id: Some(trace_id.to_owned()),
            kind: None,
            timestamp: clock::now_ms(),
            search_text: None,
            body: encode(&stored)?,
            parent: None,
        };
        // A lost swap means another process wrote the claim meanwhile: read it again
        // (it is alive, so the next look refuses; a dead one's is taken over).
        for _ in 0..TRIES {
            let current = self.storage.get(Collection::ActiveRuns, thread_id).await?;
            if let Some(other) = current.as_ref().and_then(live_other) {
                return Err(AgentError::Busy(format!(
                    "{thread_id} (run {} in process {})",
                    other.trace_id, other.pid
                )));
            }
            let expected = current.as_ref().map(|r| r.body.as_str());
            if self
                .storage
                .swap(
                    Collection::ActiveRuns,
                    thread_id,
                    expected,
                    Some(record.clone()),
                )
                .await?
            {
                claim.body = record.body;
                return Ok(claim);
            }
        }
        Err(busy())
    }
}

/// How often a claim is tried when other processes keep changing the stored one.
const TRIES: usize = 4;

/// The stored claim when it is another live process's.
fn live_other(record: &Record) -> Option<Stored> {
    let me = std::process::id();
    record
        .decode::<Stored>(Collection::ActiveRuns)
        .ok()
        .filter(|other| other.pid != me && alive(other.pid))
}

impl Claim {
    /// The run is over: the thread is free again, here and for other processes (the
    /// stored claim is removed only while it is still this run's).
    pub async fn release(self) {
        let removed = self
            .storage
            .swap(
                Collection::ActiveRuns,
                &self.thread_id,
                Some(&self.body),
                None,
            )
            .await;
        if let Err(e) = removed {
            tracing::warn!(thread = %self.thread_id, "could not release the thread's run claim: {e}");
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.here
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.thread_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStorage;

    #[tokio::test]
    async fn a_thread_has_one_run_at_a_time_and_a_dead_processes_claim_is_taken_over() {
        let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
        let claims = Claims::new(Arc::clone(&storage));
        let first = claims.claim("t", "r1").await.unwrap();
        assert!(matches!(
            claims.claim("t", "r2").await,
            Err(AgentError::Busy(_))
        ));
        assert!(claims.claim("u", "r3").await.is_ok(), "another thread");
        first.release().await;
        let again = claims.claim("t", "r4").await.unwrap();
        drop(again);

        // Another live process (our parent) holds it: refused; a dead one's: taken.
        let other = Claims::new(Arc::clone(&storage));
        let held = |pid: u32| Record {
            id: "t".into(),
            thread_id: Some("t".into()),
            trace_id: Some("x".into()),
            kind: None,
            timestamp: 0,
            search_text: None,
            body: encode(&Stored {
                pid,
                trace_id: "x".into(),
            })
            .unwrap(),
            parent: None,
        };
        let parent = std::os::unix::process::parent_id();
        storage
            .set(Collection::ActiveRuns, vec![held(parent)])
            .await
            .unwrap();
        let refused = other.claim("t", "r5").await;
        assert!(
            matches!(&refused, Err(AgentError::Busy(why)) if why.contains(&parent.to_string())),
            "{:?}",
            refused.err()
        );
        storage
            .set(Collection::ActiveRuns, vec![held(u32::MAX - 7)])
            .await
            .unwrap();
        assert!(other.claim("t", "r6").await.is_ok());
    }
}
