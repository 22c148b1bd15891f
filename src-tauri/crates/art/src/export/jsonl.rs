//! The native trace format: JSON Lines, versioned, lossless (`docs/trace-format.md`).
//!
//! The first line is a header (format name, version, app version, scope); then per
//! thread its entry, its saved configuration and state, its messages, and its
//! observations; the last line is an `end` line with the counts, so a file cut short is
//! told from a whole one. [`import`] reads the same format into another database: it
//! checks the whole file first and writes nothing if any line is wrong.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::sync::Arc;

use art_types::{AgentState, ConversationMessage, Observation, ThreadConfig, ThreadSummary};
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ExportError, Redactor, Scope, Sink, Summary, ThreadData, emit};
use crate::attachments::{Attachments, BlobId};
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
    /// A part of a stored file an attachment uses (its original, the copy sent, a
    /// document's text), written before the first message that uses it.
    Blob {
        /// The SHA-256 of the whole file (lowercase hex).
        id: String,
        /// Where this part starts in the file.
        offset: u64,
        /// The whole file's size.
        size: u64,
        /// This part's bytes, base64.
        data: String,
    },
    /// Last line.
    End {
        /// Threads written.
        threads: u64,
        /// Messages written.
        messages: u64,
        /// Observations written.
        observations: u64,
        /// Stored files written whole (absent: none).
        #[serde(default, skip_serializing_if = "is_zero")]
        blobs: u64,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    Blob {
        id: &'a str,
        offset: u64,
        size: u64,
        data: &'a str,
    },
    End {
        threads: u64,
        messages: u64,
        observations: u64,
        #[serde(skip_serializing_if = "is_zero")]
        blobs: u64,
    },
}

/// Bytes of a stored file per `blob` line (8 MiB of base64).
const BLOB_PART: usize = 6 << 20;

/// How an observation line begins (then the observation's JSON, then `}`): what
/// serialising [`Line::Observation`] gives.
const OBSERVATION_LINE: &str = "{\"type\":\"observation\",\"observation\":";

/// Writes the native format.
pub(crate) struct Writer<'a> {
    out: &'a mut (dyn Write + Send),
    redactor: &'a Redactor,
    line: String,
    /// Where attachments' bytes are read from.
    store: Option<Arc<Attachments>>,
    /// Stored files written so far (each once per file).
    blobs: HashSet<BlobId>,
}

impl<'a> Writer<'a> {
    /// A writer that has written the header for `scope`.
    pub(crate) fn new(
        out: &'a mut (dyn Write + Send),
        redactor: &'a Redactor,
        scope: &Scope,
        store: Option<Arc<Attachments>>,
    ) -> Result<Self, ExportError> {
        let mut writer = Self {
            out,
            redactor,
            line: String::new(),
            store,
            blobs: HashSet::new(),
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

    /// The stored files `message`'s attachments use that are not written yet, in parts.
    /// Not redacted: the bytes must come back exactly (the hash checks them), and base64
    /// can look like a key. A file gone from the store is left out (its attachment then
    /// reads as missing after import, as it did here).
    fn blobs_of(&mut self, message: &ConversationMessage) -> Result<(), ExportError> {
        let Some(store) = self.store.clone() else {
            return Ok(());
        };
        for attachment in &message.attachments {
            for id in Attachments::blob_ids(attachment) {
                if self.blobs.contains(&id) {
                    continue;
                }
                let bytes = match store.store().get(&id) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        tracing::warn!("attachment {id} is left out of the export: {e}");
                        continue;
                    }
                };
                let mut offset = 0;
                for part in bytes.chunks(BLOB_PART) {
                    let data = base64::engine::general_purpose::STANDARD.encode(part);
                    let line = LineRef::Blob {
                        id: id.as_str(),
                        offset,
                        size: bytes.len() as u64,
                        data: &data,
                    };
                    if let Ok(json) = serde_json::to_string(&line) {
                        self.out.write_all(json.as_bytes())?;
                        self.out.write_all(b"\n")?;
                    }
                    offset += part.len() as u64;
                }
                self.blobs.insert(id);
            }
        }
        Ok(())
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
            self.blobs_of(message)?;
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
            blobs: self.blobs.len() as u64,
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
    let mut blobs = Blobs::default();
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
            Line::Blob {
                id,
                offset,
                size,
                data,
            } => {
                if art.attachments.is_none() {
                    return Err(bad("this database keeps no attachments".into()));
                }
                blobs.check(&id, offset, size, &data).map_err(bad)?;
            }
            Line::End {
                threads,
                messages,
                observations,
                blobs: said_blobs,
            } => {
                if let Some(id) = blobs.open.keys().next() {
                    return Err(bad(format!("attachment {id} is cut short")));
                }
                if said_blobs != blobs.whole {
                    return Err(bad(format!(
                        "the end line counts {said_blobs} stored files but the file holds {}",
                        blobs.whole
                    )));
                }
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

/// Stored files being checked: for each one begun, the next offset, its size and the
/// hash so far; how many were whole and matched their id.
#[derive(Default)]
struct Blobs {
    open: HashMap<String, (u64, u64, Sha256)>,
    whole: u64,
}

impl Blobs {
    /// Check one `blob` line: a valid id, parts in order, base64, and once whole, bytes
    /// whose SHA-256 is the id.
    fn check(&mut self, id: &str, offset: u64, size: u64, data: &str) -> Result<(), String> {
        if BlobId::parse(id).is_none() {
            return Err(format!("{id:?} is not a SHA-256 in hex"));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("the data is not base64: {e}"))?;
        let (next, whole, hasher) = self
            .open
            .entry(id.to_owned())
            .or_insert_with(|| (0, size, Sha256::new()));
        if offset != *next || size != *whole {
            return Err(format!(
                "attachment {id}: part at {offset} of {size} bytes, expected {next} of {whole}"
            ));
        }
        hasher.update(&bytes);
        *next += bytes.len() as u64;
        if *next > *whole {
            return Err(format!("attachment {id} is longer than its size, {size}"));
        }
        if *next == *whole {
            if let Some((_, _, hasher)) = self.open.remove(id) {
                let digest: String = hasher
                    .finalize()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                if digest != id {
                    return Err(format!("attachment {id}'s bytes do not match its hash"));
                }
            }
            self.whole += 1;
        }
        Ok(())
    }
}

/// Observations restored per write.
const RESTORE_BATCH: usize = 1_024;

/// Import a native trace file into `art`'s database. The file is checked whole first;
/// a wrong line is reported with its number and nothing is written.
pub async fn import(art: &ArtInstance, path: &Path) -> Result<Summary, ImportError> {
    let summary = check(art, path).await?;
    let mut parts: HashMap<String, Vec<u8>> = HashMap::new();
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
            Line::Blob { id, size, data, .. } => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&data)
                    .map_err(|e| ImportError::Write(e.to_string()))?;
                let whole = parts.entry(id.clone()).or_default();
                whole.extend_from_slice(&bytes);
                if whole.len() as u64 == size
                    && let (Some(bytes), Some(store)) = (parts.remove(&id), &art.attachments)
                {
                    store
                        .store()
                        .put(&bytes)
                        .map_err(|e| ImportError::Write(e.to_string()))?;
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
