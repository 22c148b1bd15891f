//! What the thread view lists: one row per stored question or answer (with the run
//! card where the reader expects it), the key that decides when a row is rendered again,
//! and which runs are the thread's newest. Pure, unit-tested natively.

use art_types::{BranchPoint, ConversationMessage, MessageRole, MessageStatus};

use super::history::{answered, trace_of};
use crate::run_view::{RunView, ToolState};

/// The newest `n` runs of `messages`, oldest first; a replay's original (on another
/// branch) just before the replay, so the two can be compared.
pub(super) fn recent(messages: &[ConversationMessage], n: usize) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    for m in messages.iter().rev() {
        let original = m.replay_of().map(str::to_owned);
        for t in [trace_of(m), original].into_iter().flatten() {
            if runs.contains(&t) {
                continue;
            }
            if runs.len() == n {
                runs.reverse();
                return runs;
            }
            runs.push(t);
        }
    }
    runs.reverse();
    runs
}

/// The replays among `messages` and the runs they replay (replay, original).
pub(super) fn replays(messages: &[ConversationMessage]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|m| Some((trace_of(m)?, m.replay_of()?.to_owned())))
        .collect()
}

/// Where a message stands among its alternatives (`‹ 2 / 3 ›`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Branch {
    /// Its place, from 0.
    pub(crate) index: usize,
    /// How many alternatives there are.
    pub(crate) count: usize,
    /// The alternative before it.
    pub(crate) previous: Option<String>,
    /// The alternative after it.
    pub(crate) next: Option<String>,
}

/// `id`'s place among its alternatives, if it has any.
pub(super) fn branch_of(branches: &[BranchPoint], id: &str) -> Option<Branch> {
    branches.iter().find_map(|point| {
        let (index, count) = point.position(id)?;
        Some(Branch {
            index,
            count,
            previous: index.checked_sub(1).map(|i| point.alternatives[i].clone()),
            next: point.alternatives.get(index + 1).cloned(),
        })
    })
}

/// One stored message as the list shows it.
#[derive(Clone, PartialEq)]
pub(super) struct Row {
    pub(super) message: ConversationMessage,
    /// What the agent did in its run (answers, and questions whose run never answered).
    pub(super) run: Option<RunView>,
    /// Its run never answered: the run's card follows the question.
    pub(super) unanswered: bool,
    /// The thread's last answer (offers Regenerate).
    pub(super) last_answer: bool,
    /// Its alternatives, when it has some.
    pub(super) branch: Option<Branch>,
}

impl Row {
    /// Changes whenever what the row shows changes, so the list re-renders only those.
    pub(super) fn key(&self) -> String {
        let m = &self.message;
        let run = self.run.as_ref().map(|r| {
            (
                r.plan.is_some(),
                r.tools.len(),
                r.error.is_some(),
                r.history_left_out,
                r.waiting.is_some() || r.waits_for_review(),
            )
        });
        let branch = self.branch.as_ref().map(|b| (b.index, b.count));
        format!(
            "{}|{:?}|{}|{}|{}|{run:?}|{branch:?}",
            m.message_id,
            m.status,
            m.content.len(),
            self.unanswered,
            self.last_answer
        )
    }
}

/// The rows of `all[range]`: answers still streaming live are shown by their live card;
/// a message with alternatives says where it stands among them (`branches`).
pub(super) fn rows(
    all: &[ConversationMessage],
    range: std::ops::Range<usize>,
    runs: impl Fn(&str) -> Option<RunView>,
    live: &[String],
    branches: &[BranchPoint],
) -> Vec<Row> {
    let done = answered(all);
    let last_answer = all
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::Ai)
        .map(|m| m.message_id.as_str());
    all[range]
        .iter()
        .filter(|m| matches!(m.role, MessageRole::User | MessageRole::Ai))
        .filter_map(|m| {
            let trace = trace_of(m);
            let is_live = trace.as_ref().is_some_and(|t| live.contains(t));
            if m.role == MessageRole::Ai && m.status == MessageStatus::Streaming && is_live {
                return None;
            }
            let unanswered = m.role == MessageRole::User
                && trace
                    .as_ref()
                    .is_some_and(|t| !done.contains(t) && !is_live);
            let shows_run = m.role == MessageRole::Ai || unanswered;
            let run = trace
                .filter(|_| shows_run)
                .and_then(|t| runs(&t))
                .filter(|r| {
                    r.plan.is_some()
                        || !r.tools.is_empty()
                        || r.error.is_some()
                        || r.history_left_out > 0
                        || r.direct()
                        || r.waiting.is_some()
                        || r.waits_for_review()
                });
            Some(Row {
                message: m.clone(),
                run,
                unanswered,
                last_answer: last_answer == Some(m.message_id.as_str()),
                branch: branch_of(branches, &m.message_id),
            })
        })
        .collect()
}

/// Changes when a live run's card must be rebuilt: plan, tool calls and their results,
/// thinking, error, end (not the answer, which streams in place).
pub(super) fn live_key(r: &RunView) -> String {
    let done = r
        .tools
        .iter()
        .filter(|t| t.state != ToolState::Running)
        .count();
    // The plan, or its draft while it streams in.
    let steps: String = r
        .plan
        .as_ref()
        .or(r.draft.as_ref())
        .map_or_else(String::new, |p| {
            p.steps
                .iter()
                .map(|s| format!("{}:{};", s.id, s.status.label()))
                .collect()
        });
    // A server's question: its form appears, then what became of it.
    let questions: String = r
        .tools
        .iter()
        .filter_map(|t| t.question.as_ref())
        .map(|q| format!("{}:{};", q.asked.question_id, q.outcome.is_some()))
        .collect();
    // A long call's progress, as its server last said.
    let progress: String = r
        .tools
        .iter()
        .filter_map(|t| t.progress.as_ref())
        .map(|p| format!("{}:{};", p.call_id, p.progress))
        .collect();
    format!(
        "{}|{}|{}|{}|{steps}|{}|{done}|{}|{}|{}|{questions}|{progress}",
        r.trace_id,
        r.waiting.is_some() || r.waits_for_review(),
        r.plan.is_some(),
        r.draft.as_ref().is_some_and(|d| d.title.is_some()),
        r.tools.len(),
        r.thinking.len(),
        r.error.is_some(),
        r.finished
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: &str, role: MessageRole, trace: &str, status: MessageStatus) -> ConversationMessage {
        ConversationMessage {
            message_id: id.into(),
            thread_id: "t".into(),
            role,
            content: id.into(),
            timestamp: 1,
            status,
            metadata: json!({ "traceId": trace }),
            parent_id: None,
            attachments: Vec::new(),
        }
    }

    fn with_plan(trace: &str) -> Option<RunView> {
        let mut run = RunView::new("t", trace);
        run.plan = Some(Default::default());
        Some(run)
    }

    #[test]
    fn the_newest_runs_come_with_the_runs_their_replays_replay() {
        use MessageRole::{Ai, User};
        use MessageStatus::Complete;
        let mut replay = msg("q3", User, "r3", Complete);
        replay.metadata["replayOf"] = json!("r0");
        let all = [
            msg("q1", User, "r1", Complete),
            msg("a1", Ai, "r1", Complete),
            msg("q2", User, "r2", Complete),
            replay,
            msg("a3", Ai, "r3", Complete),
        ];
        assert_eq!(recent(&all, 10), ["r1", "r2", "r0", "r3"]);
        // The original counts among the newest n.
        assert_eq!(recent(&all, 2), ["r0", "r3"]);
        assert_eq!(replays(&all), [("r3".to_owned(), "r0".to_owned())]);
    }

    #[test]
    fn rows_put_cards_where_a_reader_expects_them() {
        use MessageRole::{Ai, Tool, User};
        use MessageStatus::{Complete, Streaming};
        let all = [
            msg("q1", User, "r1", Complete),
            msg("t1", Tool, "r1", Complete),
            msg("a1", Ai, "r1", Complete),
            // failed before answering
            msg("q2", User, "r2", Complete),
            // still streaming, shown by its live card
            msg("q3", User, "r3", Complete),
            msg("a3", Ai, "r3", Streaming),
        ];
        let rows = rows(&all, 0..all.len(), with_plan, &["r3".into()], &[]);
        let shown: Vec<(&str, bool, bool, bool)> = rows
            .iter()
            .map(|r| {
                let m = r.message.message_id.as_str();
                (m, r.run.is_some(), r.unanswered, r.last_answer)
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("q1", false, false, false),
                ("a1", true, false, false),
                ("q2", true, true, false),
                ("q3", false, false, false),
            ]
        );
        // the streaming checkpoint is the last answer: once it is no longer live it shows
        let rows = super::rows(&all, 0..all.len(), with_plan, &[], &[]);
        let last = rows.last().unwrap();
        assert_eq!(last.message.message_id, "a3");
        assert!(last.last_answer && last.run.is_some());
        // a window of the middle only
        let rows = super::rows(&all, 1..3, with_plan, &[], &[]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].message.message_id, "a1");
    }

    #[test]
    fn a_row_is_re_rendered_only_when_what_it_shows_changes() {
        let row = |status, run| Row {
            message: msg("a1", MessageRole::Ai, "r1", status),
            run,
            unanswered: false,
            last_answer: true,
            branch: None,
        };
        let done = row(MessageStatus::Complete, with_plan("r1"));
        assert_eq!(
            done.key(),
            row(MessageStatus::Complete, with_plan("r1")).key()
        );
        assert_ne!(
            done.key(),
            row(MessageStatus::Interrupted, with_plan("r1")).key()
        );
        assert_ne!(done.key(), row(MessageStatus::Complete, None).key());
    }

    #[test]
    fn a_message_with_alternatives_knows_its_place_and_neighbours() {
        let branches = [BranchPoint {
            parent_id: Some("a1".into()),
            alternatives: vec!["q2".into(), "q2b".into(), "q2c".into()],
        }];
        let middle = branch_of(&branches, "q2b").unwrap();
        assert_eq!((middle.index, middle.count), (1, 3));
        assert_eq!(middle.previous.as_deref(), Some("q2"));
        assert_eq!(middle.next.as_deref(), Some("q2c"));
        let first = branch_of(&branches, "q2").unwrap();
        assert_eq!((first.previous, first.next.as_deref()), (None, Some("q2b")));
        assert_eq!(branch_of(&branches, "q1"), None);
        // A row shows it, and a switch re-renders the row.
        let all = [msg("q2b", MessageRole::User, "r2", MessageStatus::Complete)];
        let shown = rows(&all, 0..1, |_| None, &[], &branches);
        assert_eq!(shown[0].branch, Some(middle));
        let alone = rows(&all, 0..1, |_| None, &[], &[]);
        assert_ne!(shown[0].key(), alone[0].key());
    }
}
