//! Answers that come back out of order: a view asks the backend again before the last
//! answer is in (a search typed twice, the lists reloaded on every indexer event), and
//! a slow answer to an older question must not replace a newer one on screen.

use leptos::prelude::{StoredValue, UpdateValue};

/// The questions asked and the newest one whose answer is shown. Unlike "only the last
/// question's answer counts", an answer newer than what is shown is always shown, so a
/// view asked again faster than the backend answers (every indexer event) still moves.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tickets {
    asked: u64,
    shown: u64,
}

impl Tickets {
    /// A new question: its ticket.
    pub fn ask(&mut self) -> u64 {
        self.asked += 1;
        self.asked
    }

    /// Whether the answer to `ticket` is to be shown (it is newer than what is shown),
    /// and if so, it is now what is shown.
    pub fn show(&mut self, ticket: u64) -> bool {
        let newer = ticket > self.shown;
        if newer {
            self.shown = ticket;
        }
        newer
    }

    /// Every question asked so far is moot (the view moved to something else): their
    /// answers are not shown.
    pub fn forget(&mut self) {
        self.shown = self.asked;
    }
}

/// Whether the answer to `ticket` is to be shown by a view keeping its `tickets` (never
/// once the view is gone).
pub fn shows(tickets: StoredValue<Tickets>, ticket: u64) -> bool {
    tickets
        .try_update_value(|t| t.show(ticket))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_answer_after_a_newer_one_is_not_shown() {
        let mut t = Tickets::default();
        let (first, second) = (t.ask(), t.ask());
        assert!(t.show(second));
        assert!(!t.show(first), "the slow first answer came last");
    }

    #[test]
    fn answers_keep_showing_while_questions_keep_coming() {
        // Asked again before each answer is in: each answer is still newer than the
        // last one shown, so the view moves on.
        let mut t = Tickets::default();
        let mut last = t.ask();
        for _ in 0..5 {
            let next = t.ask();
            assert!(t.show(last));
            last = next;
        }
        assert!(t.show(last));
    }

    #[test]
    fn forgotten_questions_are_not_answered_on_screen() {
        let mut t = Tickets::default();
        let before = t.ask();
        t.forget();
        assert!(!t.show(before), "asked before the view moved on");
        let after = t.ask();
        assert!(t.show(after));
    }
}
