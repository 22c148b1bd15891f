//! A thread's stored history as the view loads it: the newest page of its active
//! branch, earlier pages as the reader goes back, and for each page what the agent did
//! in its runs (folded from the observations of those runs only, so opening a long
//! thread reads one page); with the newest page, where the thread branches.

use std::collections::{HashMap, HashSet};

use art_types::commands as cmd;
use art_types::{BranchPoint, ConversationMessage, IpcError, MessageRole, MessageStatus};

use crate::ipc;
use crate::run_view::RunView;

/// Messages per page of history.
pub const PAGE: usize = 200;

/// Stored messages, oldest first, and per run what the agent did.
#[derive(Clone, Default)]
pub struct Page {
    /// The messages.
    pub messages: Vec<ConversationMessage>,
    /// Plan, tools, thinking and errors of the messages' runs, by trace id.
    pub runs: HashMap<String, RunView>,
    /// Where the thread branches (fetched with the newest page only).
    pub branches: Vec<BranchPoint>,
}

/// Pages before the newest, oldest first, and whether older ones may exist.
#[derive(Clone, Default)]
pub struct Earlier {
    /// Their messages and runs.
    pub page: Page,
    /// Nothing older is left.
    pub exhausted: bool,
    /// A page is being fetched.
    pub loading: bool,
}

impl Earlier {
    /// Put an older page in front; it is the last when it brought nothing new.
    pub fn prepend(&mut self, older: Page) {
        let known: HashSet<&str> = self
            .page
            .messages
            .iter()
            .map(|m| m.message_id.as_str())
            .collect();
        let fresh = older
            .messages
            .iter()
            .any(|m| !known.contains(m.message_id.as_str()));
        self.exhausted = older.messages.len() < PAGE || !fresh;
        let mut messages = older.messages;
        messages.append(&mut self.page.messages);
        self.page.messages = messages;
        self.page.runs.extend(older.runs);
    }
}

/// The newest page of a thread.
pub async fn newest(thread_id: &str) -> Result<Page, IpcError> {
    fetch(thread_id, None).await
}

/// The page of messages before `before` (unix ms). Asks for those up to and including
/// that millisecond, so messages sharing it are not skipped; [`merged`] drops repeats.
pub async fn before(thread_id: &str, before: i64) -> Result<Page, IpcError> {
    fetch(thread_id, Some(before.saturating_add(1))).await
}

async fn fetch(thread_id: &str, before: Option<i64>) -> Result<Page, IpcError> {
    let args = cmd::ListMessages {
        thread_id: thread_id.to_owned(),
        limit: Some(PAGE),
        before,
    };
    let messages = ipc::call(&args).await?;
    let branches = match before {
        None => {
            let args = cmd::ListBranches {
                thread_id: thread_id.to_owned(),
            };
            ipc::call(&args).await?
        }
        Some(_) => Vec::new(),
    };
    let mut trace_ids: Vec<String> = messages.iter().filter_map(trace_of).collect();
    trace_ids.sort_unstable();
    trace_ids.dedup();
    let mut runs: HashMap<String, RunView> = HashMap::new();
    if !trace_ids.is_empty() {
        let args = cmd::ListObservations {
            thread_id: thread_id.to_owned(),
            trace_ids: Some(trace_ids),
            types: None,
        };
        let observations = ipc::call(&args).await?;
        for o in &observations {
            runs.entry(o.trace_id.clone())
                .or_insert_with(|| RunView::new(&o.thread_id, &o.trace_id))
                .apply_observation(o);
        }
        for run in runs.values_mut() {
            run.finish(None);
        }
    }
    Ok(Page {
        messages,
        runs,
        branches,
    })
}

/// Earlier pages followed by the newest one, each message once (the newest copy).
pub fn merged(
    earlier: &[ConversationMessage],
    latest: &[ConversationMessage],
) -> Vec<ConversationMessage> {
    let newest: HashSet<&str> = latest.iter().map(|m| m.message_id.as_str()).collect();
    let mut seen = HashSet::new();
    earlier
        .iter()
        .filter(|m| !newest.contains(m.message_id.as_str()))
        .filter(|m| seen.insert(m.message_id.clone()))
        .chain(latest)
        .cloned()
        .collect()
}

/// The run a message belongs to.
pub fn trace_of(m: &ConversationMessage) -> Option<String> {
    m.trace_id().map(str::to_owned)
}

/// Runs whose question is among `messages`.
pub fn asked(messages: &[ConversationMessage]) -> HashSet<String> {
    messages
        .iter()
        .filter(|m| m.role == MessageRole::User)
        .filter_map(trace_of)
        .collect()
}

/// Runs that produced an answer (a checkpoint of one still streaming does not count).
pub fn answered(messages: &[ConversationMessage]) -> HashSet<String> {
    messages
        .iter()
        .filter(|m| m.role == MessageRole::Ai && m.status != MessageStatus::Streaming)
        .filter_map(trace_of)
        .collect()
}

/// Where a search hit shows: the message itself, or for a tool call (a TOOL message,
/// not shown on its own) the answer of its run, else the question that started it.
pub fn focus_target(messages: &[ConversationMessage], id: &str) -> Option<String> {
    let hit = messages.iter().find(|m| m.message_id == id)?;
    if hit.role != MessageRole::Tool {
        return Some(hit.message_id.clone());
    }
    let trace = trace_of(hit)?;
    let of_run = |role| {
        messages
            .iter()
            .find(|m| m.role == role && trace_of(m).as_deref() == Some(trace.as_str()))
            .map(|m| m.message_id.clone())
    };
    of_run(MessageRole::Ai).or_else(|| of_run(MessageRole::User))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: &str, role: MessageRole, trace: &str, content: &str) -> ConversationMessage {
        ConversationMessage {
            message_id: id.into(),
            thread_id: "t".into(),
            role,
            content: content.into(),
            timestamp: 1,
            status: MessageStatus::Complete,
            metadata: json!({ "traceId": trace }),
            parent_id: None,
            attachments: Vec::new(),
        }
    }

    #[test]
    fn asked_lists_the_runs_whose_question_is_there() {
        let q = ConversationMessage {
            message_id: "q".into(),
            thread_id: "t".into(),
            role: MessageRole::User,
            content: "?".into(),
            timestamp: 1,
            status: MessageStatus::Complete,
            metadata: serde_json::json!({ "traceId": "r1" }),
            parent_id: None,
            attachments: Vec::new(),
        };
        let a = ConversationMessage {
            role: MessageRole::Ai,
            metadata: serde_json::json!({ "traceId": "r2" }),
            ..q.clone()
        };
        assert_eq!(asked(&[q, a]), HashSet::from(["r1".to_owned()]));
    }

    #[test]
    fn pages_merge_in_order_without_repeats_and_newest_copy_wins() {
        let earlier = [
            msg("a", MessageRole::User, "r1", "old"),
            msg("b", MessageRole::Ai, "r1", "old answer"),
            msg("b", MessageRole::Ai, "r1", "old answer"),
            msg("c", MessageRole::User, "r2", "stale copy"),
        ];
        let latest = [
            msg("c", MessageRole::User, "r2", "fresh copy"),
            msg("d", MessageRole::Ai, "r2", "new answer"),
        ];
        let all = merged(&earlier, &latest);
        let ids: Vec<&str> = all.iter().map(|m| m.message_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
        assert_eq!(all[2].content, "fresh copy");
    }

    #[test]
    fn an_older_page_goes_in_front_with_its_runs_and_a_short_or_repeated_one_is_the_last() {
        let page = |ids: &[&str]| Page {
            branches: Vec::new(),
            messages: ids
                .iter()
                .map(|id| msg(id, MessageRole::User, &format!("run-{id}"), ""))
                .collect(),
            runs: ids
                .iter()
                .map(|id| (format!("run-{id}"), RunView::new("t", &format!("run-{id}"))))
                .collect(),
        };
        let full: Vec<String> = (0..PAGE).map(|i| format!("x{i}")).collect();
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let mut earlier = Earlier::default();
        earlier.prepend(page(&full));
        assert!(!earlier.exhausted);
        earlier.prepend(page(&["a", "b"]));
        assert!(earlier.exhausted);
        assert_eq!(earlier.page.messages[0].message_id, "a");
        assert_eq!(earlier.page.messages.len(), PAGE + 2);
        assert!(
            earlier.page.runs.contains_key("run-a") && earlier.page.runs.contains_key("run-x0")
        );
        // A full page of messages already shown: nothing older is left.
        let mut again = Earlier::default();
        again.prepend(page(&full));
        again.prepend(page(&full));
        assert!(again.exhausted);
    }

    #[test]
    fn a_tool_call_hit_shows_its_runs_answer_or_question() {
        let messages = [
            msg("q1", MessageRole::User, "r1", "what is 6*7"),
            msg("t1", MessageRole::Tool, "r1", "42"),
            msg("a1", MessageRole::Ai, "r1", "42"),
            msg("q2", MessageRole::User, "r2", "and sqrt(-1)?"),
            msg("t2", MessageRole::Tool, "r2", "Error: not a number"),
        ];
        let target = |id| focus_target(&messages, id);
        assert_eq!(target("q1").as_deref(), Some("q1"));
        assert_eq!(target("a1").as_deref(), Some("a1"));
        assert_eq!(target("t1").as_deref(), Some("a1"));
        // The second run never answered: its question is shown.
        assert_eq!(target("t2").as_deref(), Some("q2"));
        assert_eq!(target("gone"), None);
    }
}
