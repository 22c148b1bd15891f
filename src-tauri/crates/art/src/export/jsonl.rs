//! The native trace format: JSON Lines, versioned, lossless (`docs/trace-format.md`).
//!
//! The first line is a header (format name, version, app version, scope); then per
//! thread its entry, its saved configuration and state, its messages, and its
//! observations; the last line is an `end` line with the counts, so a file cut short is
//! told from a whole one. [`import`] reads the same format into another database: it
//! checks the whole file first and writes nothing if any line is wrong.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use art_types::{AgentState, ConversationMessage, Observation, ThreadConfig, ThreadSummary};
use serde::{Deserialize, Serialize};

use super::{ExportError, Redactor, Scope, Sink, Summary, ThreadData, emit};
use crate::context::ContextError;
use crate::instance::ArtInstance;
use crate::observation::StoredObservation;
use crate::storage::StorageError;

/// The `format` of the header.
pub const FORMAT: &str = "art-trace";
/// The version this build writes and the newest it reads.
pub const VERSION: u32 = 1;
/// Longest line accepted on import.
pub const MAX_LINE: usize = 64 << 20;

/// The scope named in the header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ScopeLine {
    /// One run.
    Trace {
        /// Its id.
        id: String,
    },
    /// One thread.
    Thread {
        /// Its id.
        id: String,
    },
    /// Every thread.
    All,
}

/// One line of the format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Line {
    /// First line.
    Header {
        /// Always [`FORMAT`].
        format: String,
        /// The format version.
        version: u32,
        /// The app that wrote it, e.g. `ART Workbench 0.1.0`.
        app: String,
        /// What was exported.
        scope: ScopeLine,
    },
    /// A thread list entry.
    Thread {
        /// The entry.
        thread: ThreadSummary,
    },
    /// A thread's saved configuration.
    Config {
        /// Its thread.
        thread_id: String,
        /// The configuration.
        config: ThreadConfig,
    },
    /// A thread's saved agent state.
    State {
        /// Its thread.
        thread_id: String,
        /// The state.
        state: AgentState,
    },
    /// A message.
    Message {
        /// The message.
        message: ConversationMessage,
    },
    /// An observation.
    Observation {
        /// The observation.
        observation: Observation,
    },
    /// Last line.
    End {
        /// Threads written.
        threads: u64,
        /// Messages written.
        messages: u64,
        /// Observations written.
        observations: u64,
    },
}

/// [`Line`] borrowing what it writes.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum LineRef<'a> {
    Header {
        format: &'a str,
        version: u32,
        app: String,
        scope: ScopeLine,
    },
    Thread {
        thread: &'a ThreadSummary,
    },
    Config {
        thread_id: &'a str,
        config: &'a ThreadConfig,
    },
    State {
        thread_id: &'a str,
        state: &'a AgentState,
    },
    Message {
        message: &'a ConversationMessage,
    },
    End {
        threads: u64,
        messages: u64,
        observations: u64,
    },
}

/// How an observation line begins (then the observation's JSON, then `}`): what
/// serialising [`Line::Observation`] gives.
const OBSERVATION_LINE: &str = "{\"type\":\"observation\",\"observation\":";

/// Writes the native format.
pub(crate) struct Writer<'a> {
    out: &'a mut (dyn Write + Send),
    redactor: &'a Redactor,
    line: String,
}

impl<'a> Writer<'a> {
    /// A writer that has written the header for `scope`.
    pub(crate) fn new(
        out: &'a mut (dyn Write + Send),
        redactor: &'a Redactor,
        scope: &Scope,
    ) -> Result<Self, ExportError> {
        let mut writer = Self {
            out,
            redactor,
            line: String::new(),
        };
        let scope = match scope {
            Scope::Trace(id) => ScopeLine::Trace { id: id.clone() },
            Scope::Thread(id) => ScopeLine::Thread { id: id.clone() },
            Scope::All => ScopeLine::All,
        };
        writer.write(&LineRef::Header {
            format: FORMAT,
            version: VERSION,
            app: format!("{} {}", crate::APP_NAME, crate::VERSION),
            scope,
        })?;
        Ok(writer)
    }

    fn write(&mut self, line: &LineRef<'_>) -> Result<(), ExportError> {
        self.line.clear();
        // Serialising our own types into a String cannot fail (string keys only).
        if let Ok(json) = serde_json::to_string(line) {
            self.line.push_str(&json);
        }
        self.line.push('\n');
        emit(self.out, self.redactor, &self.line)
    }
}

impl Sink for Writer<'_> {
    fn thread(&mut self, data: &ThreadData) -> Result<(), ExportError> {
        let thread_id = data.thread.thread_id.as_str();
        self.write(&LineRef::Thread {
            thread: &data.thread,
        })?;
        if let Some(config) = &data.config {
            self.write(&LineRef::Config { thread_id, config })?;
        }
        if let Some(state) = &data.state {
            self.write(&LineRef::State { thread_id, state })?;
        }
        for message in &data.messages {
            self.write(&LineRef::Message { message })?;
        }
        Ok(())
    }

    fn observations(&mut self, batch: Vec<StoredObservation>) -> Result<(), ExportError> {
        // The batch as one text (the stored JSON spliced into each line, no decoding),
        // redacted and written in one go.
        self.line.clear();
        for observation in &batch {
            self.line.push_str(OBSERVATION_LINE);
            observation.write_json(&mut self.line)?;
            self.line.push_str("}\n");
        }
        emit(self.out, self.redactor, &self.line)
    }

    fn end_thread(&mut self) -> Result<(), ExportError> {
        Ok(())
    }

    fn finish(&mut self, summary: &Summary) -> Result<(), ExportError> {
        self.write(&LineRef::End {
            threads: summary.threads,
            messages: summary.messages,
            observations: summary.observations,
        })?;
        self.out.flush()?;
        Ok(())
    }
}

/// Why an import failed. Nothing was written, except for [`ImportError::Write`].
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(#[from] std::io::Error),
    /// A line is wrong (1-based).
    #[error("line {line}: {message}")]
    Line {
        /// Line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Writing into the database failed part-way.
    #[error("the import stopped part-way: {0}")]
    Write(String),
}

impl From<StorageError> for ImportError {
    fn from(e: StorageError) -> Self {
        Self::Write(e.to_string())
    }
}

impl From<ContextError> for ImportError {
    fn from(e: ContextError) -> Self {
        Self::Write(e.to_string())
    }
}

/// Lines of a file, each at most [`MAX_LINE`] bytes, numbered from 1.
fn lines(
    path: &Path,
) -> Result<impl Iterator<Item = Result<(usize, String), ImportError>>, ImportError> {
    let mut reader = BufReader::new(std::fs::File::open(path)?);
    let mut number = 0;
    Ok(std::iter::from_fn(move || {
        let mut buf = Vec::new();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf);
        number += 1;
        let bad = |message: String| {
            Some(Err(ImportError::Line {
                line: number,
                message,
            }))
        };
        match read {
            Ok(0) => None,
            Err(e) => Some(Err(ImportError::Read(e))),
            Ok(_) if buf.len() > MAX_LINE => bad(format!("longer than {MAX_LINE} bytes")),
            Ok(_) => match String::from_utf8(buf) {
                Ok(text) => Some(Ok((number, text.trim_end_matches(['\n', '\r']).to_owned()))),
                Err(_) => bad("not UTF-8 text".into()),
            },
        }
    }))
}

fn parse(number: usize, text: &str) -> Result<Line, ImportError> {
    serde_json::from_str(text).map_err(|e| ImportError::Line {
        line: number,
        message: format!("not a line of this format: {e}"),
    })
}

/// Check the whole file: header first, every line well-formed and about a thread the
/// file declared before (and that this database does not have yet), counts matching the
/// `end` line, nothing after it.
async fn check(art: &ArtInstance, path: &Path) -> Result<Summary, ImportError> {
    let mut threads = HashSet::new();
    let mut counted = Summary::default();
    let mut ended = None;
    let mut last = 0;
    for item in lines(path)? {
        let (number, text) = item?;
        last = number;
        let bad = |message: String| ImportError::Line {
            line: number,
            message,
        };
        if ended.is_some() {
            return Err(bad("nothing may follow the end line".into()));
        }
        let line = parse(number, &text)?;
        let known = |id: &str| {
            threads
                .contains(id)
                .then_some(())
                .ok_or_else(|| bad(format!("thread {id} is not declared before this line")))
        };
        match line {
            Line::Header {
                format, version, ..
            } if number == 1 => {
                if format != FORMAT {
                    return Err(bad(format!("this is a {format:?} file, not {FORMAT:?}")));
                }
                if version > VERSION {
                    return Err(bad(format!(
                        "version {version} is newer than this app reads ({VERSION}): update the app"
                    )));
                }
            }
            _ if number == 1 => {
                return Err(bad(format!("the first line must be the {FORMAT} header")));
            }
            Line::Header { .. } => return Err(bad("a second header".into())),
            Line::Thread { thread } => {
                if art.conversation.thread(&thread.thread_id).await.is_ok() {
                    return Err(bad(format!(
                        "thread {} ({:?}) is already in this database",
                        thread.thread_id, thread.title
                    )));
                }
                if !threads.insert(thread.thread_id) {
                    return Err(bad("this thread appears twice".into()));
                }
                counted.threads += 1;
            }
            Line::Config { thread_id, .. } | Line::State { thread_id, .. } => known(&thread_id)?,
            Line::Message { message } => {
                known(&message.thread_id)?;
                counted.messages += 1;
            }
            Line::Observation { observation } => {
                known(&observation.thread_id)?;
                counted.observations += 1;
            }
            Line::End {
                threads,
                messages,
                observations,
            } => {
                let said = Summary {
                    threads,
                    messages,
                    observations,
                };
                if said != counted {
                    return Err(bad(format!(
                        "the end line counts {said:?} but the file holds {counted:?}"
                    )));
                }
                ended = Some(said);
            }
        }
    }
    ended.ok_or(ImportError::Line {
        line: last + 1,
        message: "the file ends early (no end line): it was cut short".into(),
    })
}

/// Observations restored per write.
const RESTORE_BATCH: usize = 1_024;

/// Import a native trace file into `art`'s database. The file is checked whole first;
/// a wrong line is reported with its number and nothing is written.
pub async fn import(art: &ArtInstance, path: &Path) -> Result<Summary, ImportError> {
    let summary = check(art, path).await?;
    let mut thread: Option<(ThreadSummary, Vec<ConversationMessage>)> = None;
    let mut observations = Vec::new();
    for item in lines(path)? {
        let (number, text) = item?;
        match parse(number, &text)? {
            Line::Thread { thread: next } => {
                if let Some((t, messages)) = thread.take() {
                    art.conversation.restore(&t, &messages).await?;
                }
                thread = Some((next, Vec::new()));
            }
            Line::Config { thread_id, config } => {
                art.state.set_thread_config(&thread_id, &config).await?;
            }
            Line::State { thread_id, state } => {
                art.state.set_agent_state(&thread_id, &state).await?;
            }
            Line::Message { message } => {
                if let Some((_, messages)) = &mut thread {
                    messages.push(message);
                }
            }
            Line::Observation { observation } => {
                observations.push(observation);
                if observations.len() == RESTORE_BATCH {
                    art.observations.restore(&observations).await?;
                    observations.clear();
                }
            }
            Line::Header { .. } | Line::End { .. } => {}
        }
    }
    if let Some((t, messages)) = thread.take() {
        art.conversation.restore(&t, &messages).await?;
    }
    art.observations.restore(&observations).await?;
    Ok(summary)
}
