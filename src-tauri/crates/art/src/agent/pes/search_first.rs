//! "Always search first" (a thread setting): before planning, one search of the
//! thread's collections for the question — a `search_knowledge` call recorded like any
//! other (TOOL_CALL and TOOL_EXECUTION: its card, its span, every export), run whether or
//! not the thread offers the tool to the model — whose passages every phase of the run
//! is then given, numbered to cite. A search that fails or finds nothing is said to the
//! model, and the run goes on.

use std::sync::Arc;

use art_types::knowledge::SEARCH_TOOL;
use art_types::{AgentState, MessageRole, ParsedToolCall, Phase, ToolStatus};
use serde_json::json;
use tokio::sync::Mutex;

use super::calls::output_text;
use super::replay::Answer;
use super::run::Run;
use super::tool_calls::execution_context;
use super::{PesAgent, Setup};
use crate::clock;

/// Passages the first search asks for.
const K: u64 = 5;
/// The most of the question searched for, in characters (the rest adds little).
const QUERY_CHARS: usize = 500;

impl PesAgent {
    /// Search the thread's collections for the question, when the thread asks so, and
    /// add what was found to the run's system text.
    pub(super) async fn search_first(&self, run: &mut Run, setup: &mut Setup, state: &AgentState) {
        if !setup.config.search_first || !self.tools.registry().contains(SEARCH_TOOL) {
            return;
        }
        let question = setup
            .history
            .iter()
            .rev()
            .find(|m| m.role == MessageRole::User)
            .map(|m| m.content.chars().take(QUERY_CHARS).collect::<String>())
            .unwrap_or_default();
        if question.trim().is_empty() {
            return;
        }
        let call = ParsedToolCall {
            call_id: format!("search-first-{}", clock::new_id()),
            tool_name: SEARCH_TOOL.to_owned(),
            arguments: json!({ "query": question, "k": K }),
            signature: None,
        };
        let span = clock::new_id();
        self.announce(
            run,
            Phase::Planning,
            None,
            &span,
            std::slice::from_ref(&call),
        )
        .await;
        let state = Arc::new(Mutex::new(state.clone()));
        let exec = execution_context(run, setup, state, None);
        // A replay in recorded mode answers it from the record, as any call.
        let result = match setup.recorded.as_ref().map(|r| r.answer(&call)) {
            Some(Answer::Result(result)) => {
                self.tools
                    .answered(&call, &result, &exec, Some(&span))
                    .await;
                result
            }
            Some(Answer::NotRecorded(error)) => {
                self.tools.refuse(&call, error, &exec, Some(&span)).await
            }
            Some(Answer::Ask) | None => {
                let enabled = [SEARCH_TOOL.to_owned()];
                let ran = self
                    .tools
                    .execute_tools(std::slice::from_ref(&call), &enabled, &exec, Some(&span))
                    .await;
                let Some(result) = ran.into_iter().next() else {
                    return;
                };
                result
            }
        };
        run.tool_calls += 1;
        run.tool_failed |= result.status == ToolStatus::Error;
        let found = match result.status {
            ToolStatus::Success => format!(
                "Before planning, the thread's knowledge collections were searched for the \
                 question (search_knowledge). What was found, to use and cite as [n] where \
                 it answers the question:\n{}",
                output_text(&result.output)
            ),
            ToolStatus::Error => format!(
                "Before planning, searching the thread's knowledge collections for the \
                 question failed: {}. Do not cite sources you were not given.",
                result.error.as_deref().unwrap_or("the search failed")
            ),
        };
        run.found_first = Some(found);
        run.results.push(result);
        told_found(run, setup);
    }
}

/// Tell the run's phases what the first search found (also after a wait).
pub(super) fn told_found(run: &Run, setup: &mut Setup) {
    if let Some(found) = &run.found_first {
        setup.system = format!("{}\n\n{found}", setup.system);
    }
}
