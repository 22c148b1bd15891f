//! Runs that just ended, waiting in memory for the sender: while the collector takes
//! what is sent, a run's spans never touch the queue's file (a SQLite commit per run was
//! the largest part of what the push cost a run). What makes this as safe as writing
//! them there:
//!
//! - each run is first named in a small log beside the queue (one appended line: its
//!   trace, its thread and whether content is sent) — as it starts, and again when it
//!   ends —, which is emptied once nothing waits in memory and no run is under way; a
//!   start after a crash finds the runs named there (one killed mid-stream among them)
//!   and queues them again from the database, which holds every run as far as it got
//!   ([`super::TracePush::recover`]);
//! - what the collector does not take, and what waits when the app quits, is moved to
//!   the queue's file ([`super::Outbox::spill`]), where the queue's limit applies;
//! - memory is bounded: past [`MAX_BYTES`] a run goes to the file at once.
//!
//! A span sent and then named again after a crash may reach the collector twice, which
//! OTLP tolerates (spans are keyed by their ids); none is lost.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::OutboxError;

/// Bytes of spans kept in memory at most (two batches).
pub const MAX_BYTES: usize = 2 * super::BATCH_BYTES;
/// Lines the log may hold before it is written again with only what waits (it is
/// emptied whenever nothing waits, so this is reached only by a long unbroken stream).
const MAX_LINES: usize = 4_096;

/// One run's spans, waiting in memory.
#[derive(Debug)]
pub struct FreshRun {
    /// The run.
    pub trace_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Whether its spans carry content (so that one queued again after a crash does).
    pub content: bool,
    /// Spans in it.
    pub spans: u64,
    /// Its encoded `resource_spans` entry.
    pub bytes: Vec<u8>,
}

/// A run named in the log by a process that did not see it sent (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The run.
    pub trace_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Whether its spans carried content.
    pub content: bool,
}

/// The runs in memory and their log.
pub(super) struct Fresh {
    log: PathBuf,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Waiting, oldest first.
    waiting: VecDeque<Arc<FreshRun>>,
    /// Taken by the sender, on their way: named in the log until sent or spilled.
    in_flight: Vec<Arc<FreshRun>>,
    bytes: usize,
    /// Named by an earlier process and not queued again yet: kept in the log.
    left: Vec<Logged>,
    /// Runs under way, named in the log as they started: a crash mid-run leaves them
    /// there for the next start.
    started: Vec<Logged>,
    /// The log, once opened for appending.
    file: Option<File>,
    lines: usize,
    /// The log ends in a line a crash cut short: the next line starts on a new one.
    torn: bool,
}

fn line(trace: &str, thread: &str, content: bool) -> String {
    format!("{trace}\t{thread}\t{}\n", u8::from(content))
}

/// Whether an id can be written in the log as it is.
fn plain(id: &str) -> bool {
    !id.is_empty() && !id.contains(['\t', '\n', '\r'])
}

impl Fresh {
    /// The runs in memory, logged at `log`; what the log names now was left by an
    /// earlier process.
    pub(super) fn open(log: &Path) -> Result<Self, OutboxError> {
        let text = match std::fs::read_to_string(log) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(OutboxError::io(log, &e)),
        };
        Ok(Self {
            log: log.to_path_buf(),
            inner: Mutex::new(Inner {
                left: parse(&text),
                // Emptied once what it names is queued again (a torn line too).
                lines: text.split_inclusive('\n').count(),
                torn: !text.is_empty() && !text.ends_with('\n'),
                ..Inner::default()
            }),
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keep `run` in memory, named in the log first; given back when there is no room
    /// (or its ids cannot be logged), for the caller to queue in the file.
    pub(super) fn add(&self, run: FreshRun) -> Result<Result<(), FreshRun>, OutboxError> {
        let mut inner = self.inner();
        if inner.bytes + run.bytes.len() > MAX_BYTES
            || !plain(&run.trace_id)
            || !plain(&run.thread_id)
        {
            return Ok(Err(run));
        }
        self.append(
            &mut inner,
            &line(&run.trace_id, &run.thread_id, run.content),
        )?;
        inner.bytes += run.bytes.len();
        inner.waiting.push_back(Arc::new(run));
        Ok(Ok(()))
    }

    /// A run starts: named in the log, so that a crash before it ends (a kill
    /// mid-stream) leaves it for the next start to export again.
    pub(super) fn start(&self, run: Logged) -> Result<(), OutboxError> {
        if !plain(&run.trace_id) || !plain(&run.thread_id) {
            return Ok(());
        }
        let mut inner = self.inner();
        if inner.started.iter().any(|r| r.trace_id == run.trace_id) {
            return Ok(());
        }
        self.append(
            &mut inner,
            &line(&run.trace_id, &run.thread_id, run.content),
        )?;
        inner.started.push(run);
        Ok(())
    }

    /// Run `trace_id` is no longer under way (it ended and was queued, or waits with its
    /// spans so far in the file): its start's line is not needed any more.
    pub(super) fn settle(&self, trace_id: &str) -> Result<(), OutboxError> {
        let mut inner = self.inner();
        let before = inner.started.len();
        inner.started.retain(|r| r.trace_id != trace_id);
        if inner.started.len() == before {
            return Ok(());
        }
        self.relog(&mut inner, false)
    }

    /// The app quits in good order: runs under way are not crashed ones (one that
    /// waits on a decision is queued again when it ends).
    pub(super) fn forget_started(&self) -> Result<(), OutboxError> {
        let mut inner = self.inner();
        if inner.started.is_empty() {
            return Ok(());
        }
        inner.started.clear();
        self.relog(&mut inner, true)
    }

    /// Append `text` (whole lines) to the log.
    fn append(&self, inner: &mut Inner, text: &str) -> Result<(), OutboxError> {
        let mut text = text.to_owned();
        if inner.torn {
            text.insert(0, '\n');
        }
        let file = match inner.file.as_mut() {
            Some(file) => file,
            None => {
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.log)
                    .map_err(|e| OutboxError::io(&self.log, &e))?;
                inner.file.insert(file)
            }
        };
        file.write_all(text.as_bytes())
            .map_err(|e| OutboxError::io(&self.log, &e))?;
        inner.torn = false;
        inner.lines += text.matches('\n').count();
        Ok(())
    }

    /// The oldest waiting runs that fit in `max_bytes` (at least one, when any wait),
    /// now on their way; none when some already are.
    pub(super) fn take(&self, max_bytes: usize) -> Vec<Arc<FreshRun>> {
        let mut inner = self.inner();
        if !inner.in_flight.is_empty() {
            return Vec::new();
        }
        let mut size = 0;
        while let Some(next) = inner.waiting.front() {
            if !inner.in_flight.is_empty() && size + next.bytes.len() > max_bytes {
                break;
            }
            size += next.bytes.len();
            let run = inner.waiting.pop_front().unwrap_or_else(|| unreachable!());
            inner.in_flight.push(run);
        }
        inner.in_flight.clone()
    }

    /// The runs on their way are done with (sent, refused, or in the file now).
    pub(super) fn done(&self) -> Result<(), OutboxError> {
        let mut inner = self.inner();
        let gone: usize = inner.in_flight.iter().map(|r| r.bytes.len()).sum();
        inner.in_flight.clear();
        inner.bytes = inner.bytes.saturating_sub(gone);
        self.relog(&mut inner, false)
    }

    /// Every run in memory, on its way or waiting, out of it: the caller puts them in
    /// the file, then calls [`Self::done`]. (They stay named in the log meanwhile.)
    pub(super) fn drain(&self) -> Vec<Arc<FreshRun>> {
        let mut inner = self.inner();
        let waiting: Vec<_> = inner.waiting.drain(..).collect();
        inner.in_flight.extend(waiting);
        inner.in_flight.clone()
    }

    /// What an earlier process left named in the log.
    pub(super) fn left(&self) -> Vec<Logged> {
        self.inner().left.clone()
    }

    /// `runs` left by an earlier process are in the file now.
    pub(super) fn recovered(&self, runs: &[Logged]) -> Result<(), OutboxError> {
        let mut inner = self.inner();
        inner.left.retain(|l| !runs.contains(l));
        self.relog(&mut inner, true)
    }

    /// Runs and spans in memory.
    pub(super) fn counts(&self) -> (u64, u64) {
        let inner = self.inner();
        let runs = inner.waiting.iter().chain(&inner.in_flight);
        runs.fold((0, 0), |(n, spans), r| (n + 1, spans + r.spans))
    }

    /// Make the log name what is still in memory (and what is left from before): empty
    /// when nothing is, which is the usual case; written anew (to a file renamed over
    /// it) when it has grown long, or when asked (`rewrite`: runs it named are queued).
    fn relog(&self, inner: &mut Inner, rewrite: bool) -> Result<(), OutboxError> {
        let io = |e: std::io::Error| OutboxError::io(&self.log, &e);
        let nothing =
            inner.waiting.is_empty() && inner.in_flight.is_empty() && inner.started.is_empty();
        if nothing && inner.left.is_empty() {
            if inner.lines > 0 {
                match inner.file.as_mut() {
                    Some(file) => file.set_len(0).map_err(io)?,
                    None => File::create(&self.log).map(drop).map_err(io)?,
                }
                inner.lines = 0;
                inner.torn = false;
            }
            return Ok(());
        }
        if !rewrite && inner.lines <= MAX_LINES {
            return Ok(());
        }
        let mut text = String::new();
        for l in inner.left.iter().chain(&inner.started) {
            text.push_str(&line(&l.trace_id, &l.thread_id, l.content));
        }
        for r in inner.in_flight.iter().chain(&inner.waiting) {
            text.push_str(&line(&r.trace_id, &r.thread_id, r.content));
        }
        let next = self.log.with_extension("pending.new");
        std::fs::write(&next, &text).map_err(io)?;
        inner.file = None;
        std::fs::rename(&next, &self.log).map_err(io)?;
        inner.torn = false;
        inner.lines =
            inner.left.len() + inner.started.len() + inner.in_flight.len() + inner.waiting.len();
        Ok(())
    }
}

/// The runs a log names, each once, in order (a torn last line is skipped).
fn parse(text: &str) -> Vec<Logged> {
    let mut runs: Vec<Logged> = Vec::new();
    for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        let mut fields = line.trim_end_matches('\n').split('\t');
        let (Some(trace), Some(thread), Some(content), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if !plain(trace) || !plain(thread) || runs.iter().any(|r| r.trace_id == trace) {
            continue;
        }
        runs.push(Logged {
            trace_id: trace.to_owned(),
            thread_id: thread.to_owned(),
            content: content == "1",
        });
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(trace: &str, bytes: usize) -> FreshRun {
        FreshRun {
            trace_id: trace.to_owned(),
            thread_id: "t1".to_owned(),
            content: false,
            spans: 3,
            bytes: vec![7; bytes],
        }
    }

    fn logged(fresh: &Fresh) -> String {
        std::fs::read_to_string(&fresh.log).unwrap_or_default()
    }

    #[test]
    fn runs_are_named_before_they_wait_and_forgotten_once_done() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = Fresh::open(&dir.path().join("q.pending")).unwrap();
        assert!(fresh.add(run("a", 10)).unwrap().is_ok());
        assert!(fresh.add(run("b", 10)).unwrap().is_ok());
        assert_eq!(logged(&fresh), "a\tt1\t0\nb\tt1\t0\n");
        assert_eq!(fresh.counts(), (2, 6));
        // One batch on its way at a time; what fits, but at least one.
        let taken = fresh.take(15);
        assert_eq!(taken.len(), 1);
        assert!(fresh.take(100).is_empty(), "a batch is already on its way");
        assert_eq!(fresh.counts(), (2, 6), "on its way still counts");
        fresh.done().unwrap();
        assert_eq!(logged(&fresh), "a\tt1\t0\nb\tt1\t0\n", "b still waits");
        assert_eq!(fresh.take(100).len(), 1);
        fresh.done().unwrap();
        assert_eq!(logged(&fresh), "", "nothing waits: the log is empty");
        assert_eq!(fresh.counts(), (0, 0));
        // And it goes on being appended to.
        assert!(fresh.add(run("c", 10)).unwrap().is_ok());
        assert_eq!(logged(&fresh), "c\tt1\t0\n");
    }

    #[test]
    fn a_full_memory_or_an_id_the_log_cannot_hold_gives_the_run_back() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = Fresh::open(&dir.path().join("q.pending")).unwrap();
        assert!(fresh.add(run("a", MAX_BYTES - 5)).unwrap().is_ok());
        let back = fresh.add(run("b", 10)).unwrap().unwrap_err();
        assert_eq!(back.trace_id, "b");
        assert!(fresh.add(run("c\td", 1)).unwrap().is_err());
        assert_eq!(logged(&fresh), "a\tt1\t0\n");
    }

    #[test]
    fn a_log_left_by_a_crash_is_read_once_each_and_a_torn_line_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.pending");
        std::fs::write(&path, "a\tt1\t1\nb\tt2\t0\na\tt1\t1\nbroken line\nc\tt3").unwrap();
        let fresh = Fresh::open(&path).unwrap();
        let left = fresh.left();
        let traces: Vec<_> = left.iter().map(|l| l.trace_id.as_str()).collect();
        assert_eq!(traces, ["a", "b"]);
        assert!(left[0].content && !left[1].content);
        // A run of this session, then the old ones queued again: only the new one stays.
        assert!(fresh.add(run("n", 1)).unwrap().is_ok());
        let named: Vec<_> = parse(&logged(&fresh))
            .into_iter()
            .map(|l| l.trace_id)
            .collect();
        assert_eq!(
            named,
            ["a", "b", "n"],
            "the torn line does not swallow the next"
        );
        fresh.recovered(&left).unwrap();
        assert!(fresh.left().is_empty());
        assert_eq!(logged(&fresh), "n\tt1\t0\n");
        // Drained into the file, then done: the log is empty.
        assert_eq!(fresh.drain().len(), 1);
        fresh.done().unwrap();
        assert_eq!(logged(&fresh), "");
    }
}
