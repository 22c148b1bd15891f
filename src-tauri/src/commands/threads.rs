//! Thread list and history: list, create, rename, delete, search, page through messages.

use art::context::MessageOptions;
use art_types::{ConversationMessage, IpcError, SearchResult, ThreadSummary};
use tauri::{AppHandle, State};

use crate::error::{context_error, require};
use crate::events::threads_changed;
use crate::state::AppState;

/// Most messages one page may hold.
const MAX_PAGE: usize = 500;
/// Longest search text accepted.
const MAX_QUERY: usize = 500;

/// Threads, most recently active first.
#[tauri::command]
pub async fn list_threads(state: State<'_, AppState>) -> Result<Vec<ThreadSummary>, IpcError> {
    let wb = state.workbench()?;
    wb.art
        .conversation
        .list_threads()
        .await
        .map_err(context_error)
}

/// Start a thread (title optional: "New thread" until renamed).
#[tauri::command]
pub async fn create_thread(
    app: AppHandle,
    state: State<'_, AppState>,
    title: Option<String>,
) -> Result<ThreadSummary, IpcError> {
    let wb = state.workbench()?;
    let thread = wb
        .art
        .conversation
        .create_thread(title.as_deref())
        .await
        .map_err(context_error)?;
    threads_changed(&app);
    Ok(thread)
}

/// Rename a thread.
#[tauri::command]
pub async fn rename_thread(
    app: AppHandle,
    state: State<'_, AppState>,
    thread_id: String,
    title: String,
) -> Result<ThreadSummary, IpcError> {
    let wb = state.workbench()?;
    let thread = wb
        .art
        .conversation
        .rename_thread(&thread_id, &title)
        .await
        .map_err(context_error)?;
    threads_changed(&app);
    Ok(thread)
}

/// Delete a thread with its messages, observations, settings and state.
#[tauri::command]
pub async fn delete_thread(
    app: AppHandle,
    state: State<'_, AppState>,
    thread_id: String,
) -> Result<(), IpcError> {
    let wb = state.workbench()?;
    wb.art
        .conversation
        .delete_thread(&thread_id)
        .await
        .map_err(context_error)?;
    threads_changed(&app);
    Ok(())
}

/// A page of a thread's messages, oldest first: the newest `limit`, or those before
/// `before` (unix ms) when paging back.
#[tauri::command]
pub async fn list_messages(
    state: State<'_, AppState>,
    thread_id: String,
    limit: Option<usize>,
    before: Option<i64>,
) -> Result<Vec<ConversationMessage>, IpcError> {
    let wb = state.workbench()?;
    let limit = limit.unwrap_or(100);
    require(
        (1..=MAX_PAGE).contains(&limit),
        "limit",
        format!("a page holds 1 to {MAX_PAGE} messages"),
    )?;
    // Unknown threads are an error, not an empty page.
    wb.art
        .conversation
        .thread(&thread_id)
        .await
        .map_err(context_error)?;
    let options = MessageOptions {
        limit: Some(limit),
        before,
    };
    wb.art
        .conversation
        .messages(&thread_id, options)
        .await
        .map_err(context_error)
}

/// Full-text search over messages and tool calls, best matches first.
#[tauri::command]
pub async fn search(
    state: State<'_, AppState>,
    query: String,
) -> Result<Vec<SearchResult>, IpcError> {
    let wb = state.workbench()?;
    require(
        query.chars().count() <= MAX_QUERY,
        "query",
        format!("a search has at most {MAX_QUERY} characters"),
    )?;
    let hits = wb
        .art
        .conversation
        .search(&query, 50)
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
