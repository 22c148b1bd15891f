//! Thread list and history: list, create, rename, delete, search, page through the
//! active branch, list and switch branches, fork; and highlighting the code of answers.

use art::context::MessageOptions;
use art_types::commands::{
    CreateThread, DeleteThread, ForkThread, HighlightCode, ListBranches, ListMessages, ListThreads,
    RenameThread, Search, SwitchBranch,
};
use art_types::{
    BranchPoint, ConversationMessage, ErrorCode, IpcError, SearchResult, ThreadSummary,
};
use tauri::AppHandle;

use super::runs::{agent_error, busy};
use super::{Handler, workbench};
use crate::error::{context_error, require};
use crate::events::threads_changed;
use crate::highlight;

/// Most messages one page may hold.
const MAX_PAGE: usize = 500;
/// Longest search text accepted.
const MAX_QUERY: usize = 500;

impl Handler for ListThreads {
    async fn handle(self, app: AppHandle) -> Result<Vec<ThreadSummary>, IpcError> {
        let wb = workbench(&app)?;
        wb.art
            .conversation
            .list_threads()
            .await
            .map_err(context_error)
    }
}

impl Handler for CreateThread {
    async fn handle(self, app: AppHandle) -> Result<ThreadSummary, IpcError> {
        let wb = workbench(&app)?;
        let thread = wb
            .art
            .new_thread(self.title.as_deref())
            .await
            .map_err(context_error)?;
        threads_changed(&app);
        Ok(thread)
    }
}

impl Handler for RenameThread {
    async fn handle(self, app: AppHandle) -> Result<ThreadSummary, IpcError> {
        let wb = workbench(&app)?;
        let thread = wb
            .art
            .conversation
            .rename_thread(&self.thread_id, &self.title)
            .await
            .map_err(context_error)?;
        threads_changed(&app);
        Ok(thread)
    }
}

impl Handler for DeleteThread {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        let wb = workbench(&app)?;
        wb.art
            .delete_thread(&self.thread_id)
            .await
            .map_err(context_error)?;
        threads_changed(&app);
        Ok(())
    }
}

impl Handler for ListMessages {
    async fn handle(self, app: AppHandle) -> Result<Vec<ConversationMessage>, IpcError> {
        let wb = workbench(&app)?;
        let limit = self.limit.unwrap_or(100);
        require(
            (1..=MAX_PAGE).contains(&limit),
            "limit",
            format!("a page holds 1 to {MAX_PAGE} messages"),
        )?;
        // An unknown thread is an error (`path` says so), not an empty page.
        let options = MessageOptions {
            limit: Some(limit),
            before: self.before,
        };
        wb.art
            .conversation
            .path(&self.thread_id, options)
            .await
            .map_err(context_error)
    }
}

impl Handler for ListBranches {
    async fn handle(self, app: AppHandle) -> Result<Vec<BranchPoint>, IpcError> {
        let wb = workbench(&app)?;
        wb.art
            .conversation
            .branches(&self.thread_id)
            .await
            .map_err(context_error)
    }
}

/// Refused while the thread answers or waits for a decision: its run adds to the branch
/// it started on.
impl Handler for SwitchBranch {
    async fn handle(self, app: AppHandle) -> Result<ThreadSummary, IpcError> {
        let wb = workbench(&app)?;
        if wb.is_running(&self.thread_id) {
            return Err(busy());
        }
        let thread = wb
            .art
            .switch_branch(&self.thread_id, &self.message_id)
            .await
            .map_err(agent_error)?;
        threads_changed(&app);
        Ok(thread)
    }
}

impl Handler for ForkThread {
    async fn handle(self, app: AppHandle) -> Result<ThreadSummary, IpcError> {
        let wb = workbench(&app)?;
        let thread = wb
            .art
            .fork_thread(&self.thread_id, &self.message_id)
            .await
            .map_err(context_error)?;
        threads_changed(&app);
        Ok(thread)
    }
}

/// Highlighting runs on a blocking thread: the first call loads the grammars, and a long
/// block takes milliseconds of CPU.
impl Handler for HighlightCode {
    async fn handle(self, _app: AppHandle) -> Result<Vec<Option<String>>, IpcError> {
        tokio::task::spawn_blocking(move || highlight::highlight_all(&self.blocks))
            .await
            .map_err(|e| IpcError::new(ErrorCode::Internal, format!("highlighting failed: {e}")))
    }
}

impl Handler for Search {
    async fn handle(self, app: AppHandle) -> Result<Vec<SearchResult>, IpcError> {
        let wb = workbench(&app)?;
        require(
            self.query.chars().count() <= MAX_QUERY,
            "query",
            format!("a search has at most {MAX_QUERY} characters"),
        )?;
        let hits = wb
            .art
            .conversation
            .search(&self.query, 50)
            .await
            .map_err(context_error)?;
        Ok(hits
            .into_iter()
            .map(|h| SearchResult {
                thread_id: h.thread_id,
                record_id: h.record_id,
                in_tool_call: h.in_tool_call,
                snippet: h.snippet,
            })
            .collect())
    }
}
