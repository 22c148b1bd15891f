//! Which slice of a long thread is in the page. Only a window of at most [`MAX`]
//! messages is ever in the DOM, whatever the thread's length: scrolling to the top
//! slides the window back ([`STEP`] messages at a time, dropping as many at the bottom
//! once it is full), scrolling to the bottom slides it forward again, and a search hit
//! moves it around the message. Pure logic, unit-tested natively; the view applies it.

use std::ops::Range;

use art_types::ConversationMessage;

/// Messages in the page when a thread opens (the newest ones).
pub const INITIAL: usize = 60;
/// Most messages ever in the page.
pub const MAX: usize = 100;
/// Messages added at one edge per slide.
pub const STEP: usize = 40;

/// The window: `len` messages from `first` on, or the newest `len` when `first` is
/// `None` (then new messages come into view as they arrive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    first: Option<String>,
    len: usize,
}

impl Default for Window {
    fn default() -> Self {
        Self::newest()
    }
}

impl Window {
    /// The newest [`INITIAL`] messages.
    pub fn newest() -> Self {
        Self {
            first: None,
            len: INITIAL,
        }
    }

    /// Whether the window ends at the newest message.
    pub fn at_end(&self) -> bool {
        self.first.is_none()
    }

    /// The indices of `all` in the window. A first message that is gone (replaced by
    /// an edit) falls back to the newest messages.
    pub fn range(&self, all: &[ConversationMessage]) -> Range<usize> {
        let start = match &self.first {
            Some(id) => all.iter().position(|m| &m.message_id == id),
            None => None,
        };
        match start {
            Some(start) => start..all.len().min(start + self.len),
            None => all.len().saturating_sub(self.len)..all.len(),
        }
    }

    /// The window over `range` of `all`, following new messages when it reaches the end.
    fn spanning(all: &[ConversationMessage], range: Range<usize>) -> Self {
        let first = (range.end < all.len()).then(|| all[range.start].message_id.clone());
        Self {
            first,
            len: range.len(),
        }
    }

    /// Slid back by [`STEP`]; `None` when it already starts at the first message of
    /// `all` (older ones must be loaded first).
    pub fn up(&self, all: &[ConversationMessage]) -> Option<Self> {
        let now = self.range(all);
        if now.start == 0 {
            return None;
        }
        let start = now.start.saturating_sub(STEP);
        let end = now.end.min(start + MAX);
        Some(Self::spanning(all, start..end))
    }

    /// Slid forward by [`STEP`]; `None` when it already ends at the newest message.
    pub fn down(&self, all: &[ConversationMessage]) -> Option<Self> {
        let now = self.range(all);
        if now.end >= all.len() {
            return None;
        }
        let end = all.len().min(now.end + STEP);
        let start = now.start.max(end.saturating_sub(MAX));
        Some(Self::spanning(all, start..end))
    }

    /// A window holding message `index` of `all` (a search hit), with context on both
    /// sides.
    pub fn around(all: &[ConversationMessage], index: usize) -> Self {
        let start = index.saturating_sub(MAX / 2);
        let end = all.len().min(start + MAX);
        Self::spanning(all, end.saturating_sub(MAX).min(start)..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::{MessageRole, MessageStatus};

    fn thread(n: usize) -> Vec<ConversationMessage> {
        (0..n)
            .map(|i| ConversationMessage {
                message_id: format!("m{i}"),
                thread_id: "t".into(),
                role: MessageRole::User,
                content: String::new(),
                timestamp: i as i64,
                status: MessageStatus::Complete,
                metadata: serde_json::Value::Null,
                parent_id: None,
                attachments: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn a_thread_opens_on_its_newest_messages_and_follows_new_ones() {
        let mut all = thread(5_000);
        let w = Window::newest();
        assert_eq!(w.range(&all), 4_940..5_000);
        all.extend(thread(5_001).pop());
        assert_eq!(w.range(&all), 4_941..5_001);
        assert_eq!(Window::newest().range(&thread(10)), 0..10);
    }

    #[test]
    fn scrolling_back_to_the_start_and_forward_again_never_holds_more_than_max() {
        let all = thread(1_000);
        let mut w = Window::newest();
        let mut ups = 0;
        while let Some(next) = w.up(&all) {
            w = next;
            ups += 1;
            assert!(w.range(&all).len() <= MAX);
        }
        assert_eq!(w.range(&all), 0..MAX);
        assert_eq!(ups, (1_000 - INITIAL).div_ceil(STEP));
        assert!(!w.at_end());
        // New messages arriving while the reader is far back do not move the window.
        let mut grown = all.clone();
        grown.extend(thread(1_001).pop());
        assert_eq!(w.range(&grown), 0..MAX);
        while let Some(next) = w.down(&all) {
            w = next;
            assert_eq!(w.range(&all).len(), MAX);
        }
        assert!(w.at_end());
        assert_eq!(w.range(&all), 900..1_000);
    }

    #[test]
    fn a_window_whose_first_message_is_gone_shows_the_newest() {
        let all = thread(300);
        let w = Window::around(&all, 10);
        let edited = &all[20..];
        assert_eq!(w.range(edited), 180..280);
    }

    #[test]
    fn a_search_hit_is_shown_with_context_on_both_sides() {
        let all = thread(5_000);
        for hit in [0, 7, 2_500, 4_990, 4_999] {
            let r = Window::around(&all, hit).range(&all);
            assert!(r.contains(&hit), "{hit} in {r:?}");
            assert_eq!(r.len(), MAX);
        }
        assert_eq!(Window::around(&all, 2_500).range(&all), 2_450..2_550);
        assert!(Window::around(&all, 4_990).at_end());
        assert_eq!(Window::around(&thread(30), 3).range(&thread(30)), 0..30);
    }
}
