//! Branches of a thread: the active one (from the first message to the thread's head) is
//! what the thread shows and the model reads; edit & resend and regenerate start a new
//! one beside the message they replace, keeping the old; switching moves the head; a
//! fork copies one branch into a new thread.

use std::collections::HashMap;

use art_types::{BranchPoint, ConversationMessage, ForkOrigin, MessageRole, ThreadSummary};

use crate::clock;
use crate::storage::{Collection, Order, Query};

use super::conversation::message_record;
use super::tree::Tree;
use super::{ContextError, ConversationManager, MessageOptions};

impl ConversationManager {
    /// The tree of a thread's messages (read without their bodies).
    pub async fn tree(&self, thread_id: &str) -> Result<Tree, ContextError> {
        let links = self.storage.links(Collection::Messages, thread_id).await?;
        Ok(Tree::new(links))
    }

    /// The head the thread shows ([`Tree::shown_head`]).
    fn shown_head<'t>(thread: &'t ThreadSummary, tree: &'t Tree) -> Option<&'t str> {
        tree.shown_head(thread.head.as_deref())
    }

    /// The active branch's messages, oldest first: the newest `limit` of them (all when
    /// `None`), only those older than `before` when paging back.
    pub async fn path(
        &self,
        thread_id: &str,
        options: MessageOptions,
    ) -> Result<Vec<ConversationMessage>, ContextError> {
        self.path_to(thread_id, None, options).await
    }

    /// [`Self::path`] of the branch ending at message `end` (the active one when
    /// `None`): what a run on a branch beside the shown one reads.
    pub async fn path_to(
        &self,
        thread_id: &str,
        end: Option<&str>,
        options: MessageOptions,
    ) -> Result<Vec<ConversationMessage>, ContextError> {
        let thread = self.thread(thread_id).await?;
        let tree = self.tree(thread_id).await?;
        let end = match end {
            Some(id) if tree.contains(id) => Some(id),
            Some(id) => return Err(ContextError::MessageNotFound(id.to_owned())),
            None => Self::shown_head(&thread, &tree),
        };
        let path = tree.path(end);
        let older = path
            .iter()
            .filter(|l| options.before.is_none_or(|b| l.timestamp < b));
        let wanted: Vec<String> = match options.limit {
            Some(limit) => {
                let mut newest: Vec<String> =
                    older.rev().take(limit).map(|l| l.id.clone()).collect();
                newest.reverse();
                newest
            }
            None => older.map(|l| l.id.clone()).collect(),
        };
        self.bodies(&wanted).await
    }

    /// The message the thread shows last (the end of its active branch), if any.
    pub async fn shown_head_of(&self, thread_id: &str) -> Result<Option<String>, ContextError> {
        let thread = self.thread(thread_id).await?;
        let tree = self.tree(thread_id).await?;
        Ok(Self::shown_head(&thread, &tree).map(str::to_owned))
    }

    /// The messages `ids`, in that order.
    async fn bodies(&self, ids: &[String]) -> Result<Vec<ConversationMessage>, ContextError> {
        let mut found: HashMap<String, ConversationMessage> = HashMap::with_capacity(ids.len());
        // A few hundred ids per statement, far below SQLite's parameter limit.
        for chunk in ids.chunks(500) {
            let query = Query {
                ids: chunk.to_vec(),
                order: Order::Ascending,
                ..Query::default()
            };
            for record in self.storage.query(Collection::Messages, &query).await? {
                let message: ConversationMessage = record.decode(Collection::Messages)?;
                found.insert(message.message_id.clone(), message);
            }
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// Every place in the thread with two or more alternatives.
    pub async fn branches(&self, thread_id: &str) -> Result<Vec<BranchPoint>, ContextError> {
        self.thread(thread_id).await?;
        Ok(self.tree(thread_id).await?.branch_points())
    }

    /// The last question of the active branch.
    pub async fn last_question(
        &self,
        thread_id: &str,
    ) -> Result<Option<ConversationMessage>, ContextError> {
        let thread = self.thread(thread_id).await?;
        let tree = self.tree(thread_id).await?;
        match tree.last_on_path(Self::shown_head(&thread, &tree), MessageRole::User) {
            Some(id) => self.message(thread_id, id).await,
            None => Ok(None),
        }
    }

    /// Make the active branch go through `message_id`: unchanged when it already does,
    /// else the branch below it that was added to last. Returns the thread.
    pub async fn switch_to(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<ThreadSummary, ContextError> {
        let _writing = self.writing.lock().await;
        let mut thread = self.thread(thread_id).await?;
        let tree = self.tree(thread_id).await?;
        if !tree.contains(message_id) {
            return Err(ContextError::MessageNotFound(message_id.to_owned()));
        }
        let on_path = tree
            .path(Self::shown_head(&thread, &tree))
            .iter()
            .any(|l| l.id == message_id);
        if !on_path {
            thread.head = tree.newest_below(message_id).map(str::to_owned);
            self.save_thread(&thread).await?;
        }
        Ok(thread)
    }

    /// Start a branch beside `message_id`: the thread's next message follows what it
    /// follows (edit & resend, regenerate). It and what came after it stay, as an
    /// alternative. Returns the message.
    pub async fn branch_beside(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<ConversationMessage, ContextError> {
        let _writing = self.writing.lock().await;
        let mut thread = self.thread(thread_id).await?;
        let message = self
            .message(thread_id, message_id)
            .await?
            .ok_or_else(|| ContextError::MessageNotFound(message_id.to_owned()))?;
        thread.head = message.parent_id.clone();
        self.save_thread(&thread).await?;
        Ok(message)
    }

    /// A new thread whose history is the branch ending at `message_id` (copies, with new
    /// ids, the same text, times and facts), titled like the thread, recording where it
    /// came from. Settings are the caller's to copy (`ArtInstance::fork_thread`).
    pub async fn fork(
        &self,
        thread_id: &str,
        message_id: &str,
    ) -> Result<ThreadSummary, ContextError> {
        let source = self.thread(thread_id).await?;
        let tree = self.tree(thread_id).await?;
        if !tree.contains(message_id) {
            return Err(ContextError::MessageNotFound(message_id.to_owned()));
        }
        let ids: Vec<String> = tree
            .path(Some(message_id))
            .iter()
            .map(|l| l.id.clone())
            .collect();
        let originals = self.bodies(&ids).await?;
        let now = clock::now_ms();
        let mut thread = ThreadSummary {
            thread_id: clock::new_id(),
            title: source.title.clone(),
            created_at: now,
            updated_at: now,
            message_count: originals.len() as u64,
            head: None,
            forked_from: Some(ForkOrigin {
                thread_id: thread_id.to_owned(),
                message_id: message_id.to_owned(),
            }),
        };
        let mut copies: Vec<ConversationMessage> = Vec::with_capacity(originals.len());
        for original in originals {
            let copy = ConversationMessage {
                message_id: clock::new_id(),
                thread_id: thread.thread_id.clone(),
                parent_id: copies.last().map(|m| m.message_id.clone()),
                ..original
            };
            copies.push(copy);
        }
        thread.head = copies.last().map(|m| m.message_id.clone());
        let records = copies
            .iter()
            .map(message_record)
            .collect::<Result<_, _>>()?;
        self.storage.set(Collection::Messages, records).await?;
        self.save_thread(&thread).await?;
        Ok(thread)
    }
}
