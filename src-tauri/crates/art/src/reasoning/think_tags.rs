//! Streaming `<think>…</think>` splitter: separates thinking from answer text as chunks
//! arrive, even when a tag is split across chunks. An unclosed `<think>` is closed at the
//! end of the stream and its text kept (ART lost everything after it).

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// A piece of output, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Answer text.
    Text(String),
    /// Thinking text (inside `<think>` tags).
    Thinking(String),
}

/// Incremental splitter; feed chunks with [`ThinkTagMatcher::push`], end with
/// [`ThinkTagMatcher::finish`].
#[derive(Debug, Default)]
pub struct ThinkTagMatcher {
    pending: String,
    inside: bool,
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_tag_len(text: &str, tag: &str) -> usize {
    (1..tag.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

impl ThinkTagMatcher {
    /// A matcher outside any tag.
    pub fn new() -> Self {
        Self::default()
    }

    fn emit(&self, text: &str, out: &mut Vec<Segment>) {
        if text.is_empty() {
            return;
        }
        let segment = if self.inside {
            Segment::Thinking(text.to_owned())
        } else {
            Segment::Text(text.to_owned())
        };
        // Merge with the previous segment of the same kind.
        match (out.last_mut(), segment) {
            (Some(Segment::Text(prev)), Segment::Text(t)) => prev.push_str(&t),
            (Some(Segment::Thinking(prev)), Segment::Thinking(t)) => prev.push_str(&t),
            (_, segment) => out.push(segment),
        }
    }

    /// Add a chunk; returns what can be classified already.
    pub fn push(&mut self, chunk: &str) -> Vec<Segment> {
        self.pending.push_str(chunk);
        let mut out = Vec::new();
        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            if let Some(at) = self.pending.find(tag) {
                let before = self.pending[..at].to_owned();
                self.emit(&before, &mut out);
                self.pending.drain(..at + tag.len());
                self.inside = !self.inside;
                continue;
            }
            // Hold back what may be the start of a tag; tags are ASCII, so the cut
            // falls on a character boundary.
            let keep = partial_tag_len(&self.pending, tag);
            let cut = self.pending.len() - keep;
            let ready = self.pending[..cut].to_owned();
            self.emit(&ready, &mut out);
            self.pending.drain(..cut);
            return out;
        }
    }

    /// End of stream: flush everything, closing an open `<think>`.
    pub fn finish(&mut self) -> Vec<Segment> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        self.emit(&rest, &mut out);
        self.inside = false;
        out
    }
}

/// Split a whole text at once.
pub fn split(text: &str) -> Vec<Segment> {
    let mut matcher = ThinkTagMatcher::new();
    let mut out = matcher.push(text);
    out.extend(matcher.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[&str]) -> (String, String) {
        let mut m = ThinkTagMatcher::new();
        let mut segments: Vec<Segment> = chunks.iter().flat_map(|c| m.push(c)).collect();
        segments.extend(m.finish());
        let mut text = String::new();
        let mut thinking = String::new();
        for s in segments {
            match s {
                Segment::Text(t) => text.push_str(&t),
                Segment::Thinking(t) => thinking.push_str(&t),
            }
        }
        (text, thinking)
    }

    #[test]
    fn tags_split_at_every_position_give_the_same_result() {
        let whole = "Hi <think>hmm, ünïcode 🤔</think>there<think> again</think>!";
        let expected = collect(&[whole]);
        assert_eq!(
            expected,
            ("Hi there!".into(), "hmm, ünïcode 🤔 again".into())
        );
        let bounds: Vec<usize> = (0..=whole.len())
            .filter(|&i| whole.is_char_boundary(i))
            .collect();
        for &i in &bounds {
            for &j in bounds.iter().filter(|&&j| j >= i) {
                assert_eq!(
                    collect(&[&whole[..i], &whole[i..j], &whole[j..]]),
                    expected,
                    "cut at {i}/{j}"
                );
            }
        }
    }

    #[test]
    fn unclosed_tag_is_closed_at_end_and_text_kept() {
        assert_eq!(
            collect(&["answer <think>still thinking", " and more"]),
            ("answer ".into(), "still thinking and more".into())
        );
    }

    #[test]
    fn a_lone_angle_bracket_is_not_held_forever() {
        assert_eq!(
            collect(&["a < b", " and <thi", "s is text"]),
            ("a < b and <this is text".into(), String::new())
        );
    }

    #[test]
    fn several_blocks_and_plain_text() {
        assert_eq!(split("plain"), vec![Segment::Text("plain".into())]);
        assert_eq!(
            split("<think>a</think>b<think>c</think>"),
            vec![
                Segment::Thinking("a".into()),
                Segment::Text("b".into()),
                Segment::Thinking("c".into())
            ]
        );
    }
}
