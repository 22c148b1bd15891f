//! ConversationManager: the thread list (create, rename, delete with cascade, search)
//! and each thread's messages (add, page through). Messages are broadcast on the
//! conversation socket after they are persisted. Messages form a tree (each follows its
//! parent); branches, switching and forks are in `branches.rs`.

use std::collections::HashSet;
use std::sync::Arc;

use art_types::message::{TOOL_ARGUMENTS, TOOL_NAME};
use art_types::{ConversationMessage, MessageRole, MessageStatus, ThreadSummary};

use crate::clock;
use crate::sockets::Sockets;
use crate::storage::{self, Collection, Order, Query, Record, StorageAdapter, StorageError};

use super::{ContextError, Tree};

/// Longest accepted thread title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Title of a thread nobody has named yet.
pub const UNTITLED: &str = "New thread";
/// Longest title made from a question, in characters (the sidebar shows about this).
const QUESTION_TITLE_CHARS: usize = 60;

/// A title for an untitled thread made from its first question: the first line with
/// any text, its spaces collapsed, cut at a word before 60 characters (with `…`);
/// `None` when the question has no text (files alone).
pub fn title_from_question(question: &str) -> Option<String> {
    let line = question.lines().find(|l| !l.trim().is_empty())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let whole = words.join(" ");
    if whole.chars().count() <= QUESTION_TITLE_CHARS {
        return Some(whole);
    }
    let mut title = String::new();
    for word in &words {
        let next = title.chars().count() + usize::from(!title.is_empty()) + word.chars().count();
        if next >= QUESTION_TITLE_CHARS {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        // One long word: cut inside it.
        title = whole.chars().take(QUESTION_TITLE_CHARS - 1).collect();
    }
    title.push('…');
    Some(title)
}

/// Which messages to fetch.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessageOptions {
    /// The newest `limit` messages (all when `None`), returned oldest first.
    pub limit: Option<usize>,
    /// Only messages strictly older than this (unix ms), for paging backwards.
    pub before: Option<i64>,
}

/// A search result that can jump to the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHit {
    /// Thread of the match.
    pub thread_id: String,
    /// Message id (for a match in a tool call, its TOOL message).
    pub record_id: String,
    /// Whether the match is in a tool call (name, arguments or result) rather than in
    /// what the user or the model wrote.
    pub in_tool_call: bool,
    /// Excerpt with the match marked by `[` and `]`.
    pub snippet: String,
}

/// Threads and their messages.
pub struct ConversationManager {
    pub(super) storage: Arc<dyn StorageAdapter>,
    sockets: Arc<Sockets>,
    /// Held while a thread's entry is read, changed and written back (its head and
    /// counts): runs writing to one thread at once (a comparison's columns) lose none.
    pub(super) writing: tokio::sync::Mutex<()>,
    /// Keeps the messages of watched runs as they are written.
    tap: Option<Arc<crate::observation::RunTap>>,
}

fn clean_title(title: &str) -> Result<String, ContextError> {
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if title.is_empty() {
        return Err(ContextError::InvalidInput(
            "a thread title cannot be empty".into(),
        ));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(ContextError::InvalidInput(format!(
            "a thread title can have at most {MAX_TITLE_CHARS} characters"
        )));
    }
    Ok(title)
}

fn thread_record(t: &ThreadSummary) -> Result<Record, StorageError> {
    Ok(Record {
        id: t.thread_id.clone(),
        // A thread belongs to itself, so deleting the thread deletes its entry too.
        thread_id: Some(t.thread_id.clone()),
        trace_id: None,
        kind: None,
        timestamp: t.updated_at,
        search_text: None,
        body: storage::encode(t)?,
        parent: None,
    })
}

pub(super) fn message_record(m: &ConversationMessage) -> Result<Record, StorageError> {
    Ok(Record {
        id: m.message_id.clone(),
        thread_id: Some(m.thread_id.clone()),
        trace_id: m.trace_id().map(str::to_owned),
        kind: Some(m.role.as_str().to_owned()),
        timestamp: m.timestamp,
        // An answer still streaming is checkpointed many times a second; indexing its
        // whole text at each checkpoint would cost more than the stream. It becomes
        // searchable when it ends (complete, failed, cancelled or recovered as interrupted).
        search_text: (m.status != MessageStatus::Streaming).then(|| search_text(m)),
        body: storage::encode(m)?,
        parent: m.parent_id.clone(),
    })
}

/// What search finds a message by: its text, and for a tool result also the tool's name
/// and arguments (so a search for `calculator` or `6*7` finds the call).
fn search_text(m: &ConversationMessage) -> String {
    if m.role != MessageRole::Tool {
        return m.content.clone();
    }
    let name = m.metadata.get(TOOL_NAME).and_then(|v| v.as_str());
    let arguments = m.metadata.get(TOOL_ARGUMENTS).map(|v| match v {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    });
    [name.map(str::to_owned), arguments, Some(m.content.clone())]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

impl ConversationManager {
    /// A manager over `storage`, broadcasting on `sockets.messages`.
    pub fn new(storage: Arc<dyn StorageAdapter>, sockets: Arc<Sockets>) -> Self {
        Self {
            storage,
            sockets,
            writing: tokio::sync::Mutex::new(()),
            tap: None,
        }
    }

    /// Offer `tap` the messages runs write (so that a watched run's are handed over with
    /// its observations when it ends).
    pub(crate) fn tapped(mut self, tap: Arc<crate::observation::RunTap>) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Write a thread's entry (title, counts, head) as it is now.
    pub(super) async fn save_thread(&self, thread: &ThreadSummary) -> Result<(), ContextError> {
        self.storage
            .set(Collection::Threads, vec![thread_record(thread)?])
            .await?;
        Ok(())
    }

    /// Start a thread.
    pub async fn create_thread(&self, title: Option<&str>) -> Result<ThreadSummary, ContextError> {
        let title = match title {
            Some(t) => clean_title(t)?,
            None => UNTITLED.to_owned(),
        };
        let now = clock::now_ms();
        let thread = ThreadSummary {
            thread_id: clock::new_id(),
            title,
            created_at: now,
            updated_at: now,
            message_count: 0,
            forked_from: None,
            head: None,
        };
        self.save_thread(&thread).await?;
        Ok(thread)
    }

    /// One thread, or [`ContextError::ThreadNotFound`].
    pub async fn thread(&self, thread_id: &str) -> Result<ThreadSummary, ContextError> {
        let record = self
            .storage
            .get(Collection::Threads, thread_id)
            .await?
            .ok_or_else(|| ContextError::ThreadNotFound(thread_id.to_owned()))?;
        Ok(record.decode(Collection::Threads)?)
    }

    /// All threads, most recently active first.
    pub async fn list_threads(&self) -> Result<Vec<ThreadSummary>, ContextError> {
        let query = Query {
            order: Order::Descending,
            ..Query::default()
        };
        self.storage
            .query(Collection::Threads, &query)
            .await?
            .iter()
            .map(|r| Ok(r.decode(Collection::Threads)?))
            .collect()
    }

    /// Rename a thread.
    pub async fn rename_thread(
        &self,
        thread_id: &str,
        title: &str,
    ) -> Result<ThreadSummary, ContextError> {
        let _writing = self.writing.lock().await;
        let mut thread = self.thread(thread_id).await?;
        thread.title = clean_title(title)?;
        self.save_thread(&thread).await?;
        Ok(thread)
    }

    /// Delete a thread with its messages, observations, configuration and state.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), ContextError> {
        self.thread(thread_id).await?;
        self.storage.delete_thread(thread_id).await?;
        Ok(())
    }

    /// Save messages (new or updated, e.g. a streaming answer's checkpoints), bump the
    /// thread's activity, then broadcast them. A new message without a parent follows
    /// the thread's head, and becomes the head: a run's messages make one branch. A new
    /// message with its parent given goes below it, and becomes the head only when the
    /// head was that parent (it extends the branch shown): runs on branches beside the
    /// one shown (a comparison's other columns) leave it alone. An updated one keeps its
    /// place.
    pub async fn add_messages(
        &self,
        thread_id: &str,
        messages: &[ConversationMessage],
    ) -> Result<(), ContextError> {
        let _writing = self.writing.lock().await;
        let mut thread = self.thread(thread_id).await?;
        if let Some(wrong) = messages.iter().find(|m| m.thread_id != thread_id) {
            return Err(ContextError::InvalidInput(format!(
                "message {} belongs to thread {}, not {thread_id}",
                wrong.message_id, wrong.thread_id
            )));
        }
        let mut placed = Vec::with_capacity(messages.len());
        let mut new_ones = 0;
        for m in messages {
            let mut m = m.clone();
            match self
                .storage
                .get(Collection::Messages, &m.message_id)
                .await?
            {
                Some(stored) => {
                    if m.parent_id.is_none() {
                        m.parent_id = stored.parent;
                    }
                }
                None => {
                    new_ones += 1;
                    if m.parent_id.is_none() {
                        m.parent_id = thread.head.clone();
                    }
                    if m.parent_id == thread.head {
                        thread.head = Some(m.message_id.clone());
                    }
                }
            }
            placed.push(m);
        }
        self.storage
            .set(
                Collection::Messages,
                placed
                    .iter()
                    .map(message_record)
                    .collect::<Result<_, _>>()?,
            )
            .await?;
        thread.message_count += new_ones;
        thread.updated_at = thread.updated_at.max(clock::now_ms());
        self.save_thread(&thread).await?;
        for m in &placed {
            self.sockets.messages.notify(m);
        }
        if let Some(tap) = &self.tap {
            tap.written(placed);
        }
        Ok(())
    }

    /// Put back a thread exactly as it was exported (same ids, times and counts), with
    /// its messages; nothing is broadcast. Fails when the thread already exists.
    pub async fn restore(
        &self,
        thread: &ThreadSummary,
        messages: &[ConversationMessage],
    ) -> Result<(), ContextError> {
        if self
            .storage
            .get(Collection::Threads, &thread.thread_id)
            .await?
            .is_some()
        {
            return Err(ContextError::InvalidInput(format!(
                "thread {} is already in this database",
                thread.thread_id
            )));
        }
        if let Some(wrong) = messages.iter().find(|m| m.thread_id != thread.thread_id) {
            return Err(ContextError::InvalidInput(format!(
                "message {} belongs to thread {}, not {}",
                wrong.message_id, wrong.thread_id, thread.thread_id
            )));
        }
        // Written before branches: one branch, each message after the one before it.
        let mut thread = thread.clone();
        let mut messages = messages.to_vec();
        if messages.iter().all(|m| m.parent_id.is_none()) && thread.head.is_none() {
            messages.sort_by_key(|m| m.timestamp);
            for i in 1..messages.len() {
                messages[i].parent_id = Some(messages[i - 1].message_id.clone());
            }
            thread.head = messages.last().map(|m| m.message_id.clone());
        }
        // A file that holds part of a thread (one run) may not hold its head.
        if let Some(head) = &thread.head
            && !messages.iter().any(|m| &m.message_id == head)
        {
            thread.head = messages
                .iter()
                .max_by_key(|m| m.timestamp)
                .map(|m| m.message_id.clone());
        }
        let records = messages
            .iter()
            .map(message_record)
            .collect::<Result<_, _>>()?;
        self.storage.set(Collection::Messages, records).await?;
        self.save_thread(&thread).await?;
        Ok(())
    }

    /// One message of a thread, if it is there.
    pub async fn message(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<Option<ConversationMessage>, ContextError> {
        let Some(record) = self.storage.get(Collection::Messages, message_id).await? else {
            return Ok(None);
        };
        let message: ConversationMessage = record.decode(Collection::Messages)?;
        Ok((message.thread_id == thread_id).then_some(message))
    }

    /// The newest message of a thread with `role` (e.g. the last question).
    pub async fn latest(
        &self,
        thread_id: &str,
        role: MessageRole,
    ) -> Result<Option<ConversationMessage>, ContextError> {
        let query = Query {
            kinds: vec![role.as_str().to_owned()],
            order: Order::Descending,
            limit: Some(1),
            ..Query::thread(thread_id)
        };
        match self
            .storage
            .query(Collection::Messages, &query)
            .await?
            .first()
        {
            Some(record) => Ok(Some(record.decode(Collection::Messages)?)),
            None => Ok(None),
        }
    }

    /// Mark answers a process left `Streaming` when it died mid-run (killed, crashed,
    /// power cut) as `Interrupted`, keeping their text; returns how many. Call it when a
    /// process opens the database, before it starts runs: only a thread's newest answer
    /// can be one (each run checkpoints the answer it streams, and a thread runs one
    /// answer at a time). A run live in another process is marked too, and puts its own
    /// status back with its next checkpoint.
    pub async fn recover_interrupted(&self) -> Result<usize, ContextError> {
        let mut marked = 0;
        for thread in self.list_threads().await? {
            let Some(mut answer) = self.latest(&thread.thread_id, MessageRole::Ai).await? else {
                continue;
            };
            if answer.status == MessageStatus::Streaming {
                answer.status = MessageStatus::Interrupted;
                let record = message_record(&answer)?;
                self.storage.set(Collection::Messages, vec![record]).await?;
                self.sockets.messages.notify(&answer);
                marked += 1;
            }
        }
        Ok(marked)
    }

    /// The newest question of the thread's active branch that failed without an answer,
    /// if any.
    pub async fn latest_failed(
        &self,
        thread_id: &str,
    ) -> Result<Option<ConversationMessage>, ContextError> {
        let shown = self.path(thread_id, MessageOptions::default()).await?;
        Ok(shown
            .into_iter()
            .rev()
            .find(|m| m.role == MessageRole::User && m.status == MessageStatus::Failed))
    }

    /// Remove the messages one run stored (its question, tool results, any answer),
    /// leaving the rest of the thread as it is: what followed them follows what they
    /// followed, and a head among them moves back the same way. Returns how many went.
    /// Its observations are kept: the trace of what the agent did stays exportable.
    pub async fn remove_run(&self, thread_id: &str, trace_id: &str) -> Result<u64, ContextError> {
        let _writing = self.writing.lock().await;
        let mut thread = self.thread(thread_id).await?;
        let all = self.messages(thread_id, MessageOptions::default()).await?;
        let of_run: HashSet<&str> = all
            .iter()
            .filter(|m| m.trace_id() == Some(trace_id))
            .map(|m| m.message_id.as_str())
            .collect();
        let tree = Tree::of(&all);
        let kept = |id: &str| !of_run.contains(id);
        let moved: Vec<ConversationMessage> = all
            .iter()
            .filter(|m| kept(&m.message_id))
            .filter(|m| m.parent_id.as_deref().is_some_and(|p| !kept(p)))
            .map(|m| ConversationMessage {
                parent_id: tree
                    .nearest_ancestor(&m.message_id, kept)
                    .map(str::to_owned),
                ..m.clone()
            })
            .collect();
        if let Some(head) = thread.head.as_deref().filter(|h| !kept(h)) {
            thread.head = tree.nearest_ancestor(head, kept).map(str::to_owned);
        }
        let records = moved.iter().map(message_record).collect::<Result<_, _>>()?;
        self.storage.set(Collection::Messages, records).await?;
        let deletes = of_run
            .iter()
            .map(|id| self.storage.delete(Collection::Messages, id));
        futures::future::try_join_all(deletes).await?;
        let removed = of_run.len() as u64;
        thread.message_count = thread.message_count.saturating_sub(removed);
        thread.updated_at = thread.updated_at.max(clock::now_ms());
        self.save_thread(&thread).await?;
        Ok(removed)
    }

    /// Every message of a thread, on every branch, oldest first (the newest `limit`
    /// when limited). What a thread shows is [`Self::path`].
    pub async fn messages(
        &self,
        thread_id: &str,
        options: MessageOptions,
    ) -> Result<Vec<ConversationMessage>, ContextError> {
        let query = Query {
            before: options.before,
            order: Order::Descending,
            limit: options.limit,
            ..Query::thread(thread_id)
        };
        let mut messages = self
            .storage
            .query(Collection::Messages, &query)
            .await?
            .iter()
            .map(|r| r.decode(Collection::Messages))
            .collect::<Result<Vec<ConversationMessage>, _>>()?;
        messages.reverse();
        Ok(messages)
    }

    /// The messages run `trace_id` of thread `thread_id` stored (its question, tool
    /// results, answer), oldest first: read by the run's index, however long the thread.
    pub async fn messages_of_run(
        &self,
        thread_id: &str,
        trace_id: &str,
    ) -> Result<Vec<ConversationMessage>, ContextError> {
        let query = Query {
            trace_ids: vec![trace_id.to_owned()],
            ..Query::thread(thread_id)
        };
        Ok(self
            .storage
            .query(Collection::Messages, &query)
            .await?
            .iter()
            .map(|r| r.decode(Collection::Messages))
            .collect::<Result<Vec<ConversationMessage>, _>>()?)
    }

    /// Every attachment the questions of all threads carry (attachments ride on the
    /// user's messages only), read in batches.
    pub async fn attachments_in_use(&self) -> Result<Vec<art_types::Attachment>, ContextError> {
        let query = Query {
            kinds: vec![MessageRole::User.as_str().to_owned()],
            ..Query::default()
        };
        let mut batches = self.storage.scan(Collection::Messages, query, 1_000);
        let mut found = Vec::new();
        while let Some(batch) = batches.recv().await {
            for record in batch? {
                let message: ConversationMessage = record.decode(Collection::Messages)?;
                found.extend(message.attachments);
            }
        }
        Ok(found)
    }

    /// Full-text search over messages and tool arguments / results, best matches first.
    pub async fn search(&self, text: &str, limit: usize) -> Result<Vec<MessageHit>, ContextError> {
        Ok(self
            .storage
            .search(text, limit)
            .await?
            .into_iter()
            .filter_map(|hit| {
                if hit.collection != Collection::Messages {
                    return None;
                }
                let in_tool_call = hit.kind.as_deref() == Some(MessageRole::Tool.as_str());
                Some(MessageHit {
                    thread_id: hit.thread_id?,
                    record_id: hit.id,
                    in_tool_call,
                    snippet: hit.snippet,
                })
            })
            .collect())
    }
}
