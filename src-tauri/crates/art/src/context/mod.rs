//! The Context System: threads and their messages ([`ConversationManager`], a [`Tree`]
//! of branches per thread), thread
//! configuration and agent state ([`StateManager`]), and the prompt library
//! ([`PromptLibrary`]).

mod branches;
mod conversation;
mod library;
mod state;
mod tree;
pub mod validate;

pub use art_types::StateSavingStrategy;
pub use conversation::{
    ConversationManager, MAX_TITLE_CHARS, MessageHit, MessageOptions, UNTITLED, title_from_question,
};
pub use library::{MAX_PROMPT_NAME, PromptLibrary};
pub use state::StateManager;
pub use tree::Tree;

use crate::storage::StorageError;

/// Why a context operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// No thread with that id.
    #[error("thread {0} does not exist")]
    ThreadNotFound(String),
    /// No message with that id in the thread.
    #[error("message {0} is not in this thread")]
    MessageNotFound(String),
    /// The request was not acceptable; the message says why.
    #[error("{0}")]
    InvalidInput(String),
    /// One field of the request was not acceptable (forms show the message there).
    #[error("{message}")]
    InvalidField {
        /// The field's JSON name.
        field: &'static str,
        /// What is wrong, for people.
        message: String,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

#[cfg(test)]
mod tests;
