//! The observations of chosen runs kept in memory as they are recorded, and the messages
//! they write (their question, answer and tool results, as the conversation manager
//! places them), for whoever needs a run whole when it ends (the trace push): handing
//! them over costs no reading back from storage. A run is kept only from [`RunTap::watch`] (called before it
//! records anything) to [`RunTap::take`]; a run not watched, or dropped to stay within
//! the bounds, is simply not here, and its reader reads storage as before.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use art_types::ConversationMessage;

use super::StoredObservation;
use crate::storage::Record;

/// Runs watched at most: a run whose taker never comes (the push turned off meanwhile,
/// its end never reached) is dropped, oldest first, once this many are watched.
const MAX_RUNS: usize = 64;
/// Body bytes kept for one run at most: a longer run is dropped (read from storage).
const MAX_BYTES: usize = 16 << 20;

/// One watched run's observations, in the order they were recorded.
#[derive(Default)]
struct Kept {
    records: Vec<Record>,
    /// Its messages as last written (a streaming answer's checkpoints replace it).
    messages: Vec<ConversationMessage>,
    bytes: usize,
    /// When it was watched, in watch order (for dropping the oldest).
    since: u64,
}

/// What a watched run recorded: its observations in time order and its messages.
#[derive(Default)]
pub struct KeptRun {
    /// Its observations, oldest first.
    pub observations: Vec<StoredObservation>,
    /// Its messages, as last written, in the order first written.
    pub messages: Vec<ConversationMessage>,
}

/// Keeps the observations of watched runs (see the module docs).
#[derive(Default)]
pub struct RunTap {
    /// Whether any run is watched: recording checks this alone when none is.
    any: AtomicBool,
    runs: Mutex<Watched>,
}

#[derive(Default)]
struct Watched {
    runs: HashMap<String, Kept>,
    next: u64,
}

impl RunTap {
    fn watched(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keep what run `trace_id` records from now on (it must not have recorded anything
    /// yet, or [`Self::take`] would hand over part of it). Watching a run again keeps
    /// what it kept.
    pub fn watch(&self, trace_id: &str) {
        let mut watched = self.watched();
        if watched.runs.contains_key(trace_id) {
            return;
        }
        if watched.runs.len() >= MAX_RUNS
            && let Some(oldest) = watched
                .runs
                .iter()
                .min_by_key(|(_, kept)| kept.since)
                .map(|(trace, _)| trace.clone())
        {
            watched.runs.remove(&oldest);
        }
        let since = watched.next;
        watched.next += 1;
        watched.runs.insert(
            trace_id.to_owned(),
            Kept {
                since,
                ..Kept::default()
            },
        );
        self.any.store(true, Ordering::Release);
    }

    /// Whether any run is watched (what is recorded is offered to [`Self::recorded`]).
    pub(super) fn active(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Keep `records` that belong to watched runs (copies of what was stored, handed
    /// over once stored; the others are dropped).
    pub(super) fn recorded(&self, records: Vec<Record>) {
        if records.is_empty() || !self.active() {
            return;
        }
        let mut watched = self.watched();
        let mut over = Vec::new();
        for record in records {
            let Some(kept) = record
                .trace_id
                .as_deref()
                .and_then(|trace| watched.runs.get_mut(trace))
            else {
                continue;
            };
            kept.bytes += record.body.len();
            if kept.bytes > MAX_BYTES {
                over.extend(record.trace_id);
            } else {
                kept.records.push(record);
            }
        }
        for trace in over {
            watched.runs.remove(&trace);
        }
        self.any.store(!watched.runs.is_empty(), Ordering::Release);
    }

    /// Keep `messages` (as written, each replacing its earlier version) that belong to
    /// watched runs (the others are dropped).
    pub(crate) fn written(&self, messages: Vec<ConversationMessage>) {
        if messages.is_empty() || !self.active() {
            return;
        }
        let mut watched = self.watched();
        let mut over = Vec::new();
        for message in messages {
            let Some(trace) = message.trace_id() else {
                continue;
            };
            let Some(kept) = watched.runs.get_mut(trace) else {
                continue;
            };
            kept.bytes += message.content.len();
            if kept.bytes > MAX_BYTES {
                over.push(trace.to_owned());
                continue;
            }
            match kept
                .messages
                .iter_mut()
                .find(|m| m.message_id == message.message_id)
            {
                Some(earlier) => *earlier = message,
                None => kept.messages.push(message),
            }
        }
        for trace in over {
            watched.runs.remove(&trace);
        }
        self.any.store(!watched.runs.is_empty(), Ordering::Release);
    }

    /// What run `trace_id` recorded since it was watched (see [`KeptRun`]); with
    /// `keep` (a run that waits and goes on later) it stays watched, else it is no
    /// longer. `None` when it is not watched (never, or dropped to stay within the
    /// bounds).
    pub fn take(&self, trace_id: &str, keep: bool) -> Option<KeptRun> {
        let mut watched = self.watched();
        let (records, messages) = if keep {
            let kept = watched.runs.get(trace_id)?;
            (kept.records.clone(), kept.messages.clone())
        } else {
            let kept = watched.runs.remove(trace_id)?;
            self.any.store(!watched.runs.is_empty(), Ordering::Release);
            (kept.records, kept.messages)
        };
        drop(watched);
        let mut observations: Vec<StoredObservation> =
            records.into_iter().map(StoredObservation).collect();
        // Time order, as storage reads them (recorded in order already, but writers of
        // one run may interleave).
        observations.sort_by_key(|o| o.record().timestamp);
        Some(KeptRun {
            observations,
            messages,
        })
    }

    /// Stop watching run `trace_id`, dropping what it kept.
    pub fn forget(&self, trace_id: &str) {
        let mut watched = self.watched();
        watched.runs.remove(trace_id);
        self.any.store(!watched.runs.is_empty(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(trace: &str, ts: i64, body: &str) -> Record {
        Record {
            id: format!("{trace}-{ts}"),
            thread_id: Some("t".into()),
            trace_id: Some(trace.into()),
            kind: Some("PLAN".into()),
            timestamp: ts,
            search_text: None,
            body: body.into(),
            parent: None,
        }
    }

    fn bodies(observations: &[StoredObservation]) -> Vec<&str> {
        observations
            .iter()
            .map(|o| o.record().body.as_str())
            .collect()
    }

    #[test]
    fn a_watched_run_is_handed_over_whole_and_nothing_else_is_kept() {
        let tap = RunTap::default();
        tap.recorded(vec![record("a", 1, "before")]);
        tap.watch("a");
        tap.recorded(vec![record("a", 3, "second"), record("b", 2, "other run")]);
        tap.recorded(vec![record("a", 2, "first")]);
        // A run that waits: what it recorded so far, still watched.
        assert_eq!(
            bodies(&tap.take("a", true).unwrap().observations),
            ["first", "second"]
        );
        tap.recorded(vec![record("a", 4, "after the wait")]);
        let all = tap.take("a", false).unwrap().observations;
        assert_eq!(bodies(&all), ["first", "second", "after the wait"]);
        assert!(tap.take("a", false).is_none(), "taken once");
        assert!(tap.take("b", false).is_none(), "never watched");
        assert!(!tap.any.load(Ordering::Acquire));
    }

    #[test]
    fn runs_beyond_the_bounds_are_dropped_oldest_first_and_read_from_storage() {
        let tap = RunTap::default();
        for i in 0..=MAX_RUNS {
            tap.watch(&format!("run{i}"));
        }
        assert!(tap.take("run0", false).is_none(), "the oldest dropped");
        assert!(tap.take(&format!("run{MAX_RUNS}"), false).is_some());
        // A run larger than the bound is not kept in part.
        tap.watch("big");
        let half = "x".repeat(MAX_BYTES / 2 + 1);
        tap.recorded(vec![record("big", 1, &half)]);
        tap.recorded(vec![record("big", 2, &half)]);
        assert!(tap.take("big", false).is_none());
        tap.watch("gone");
        tap.forget("gone");
        assert!(tap.take("gone", false).is_none());
    }
}
