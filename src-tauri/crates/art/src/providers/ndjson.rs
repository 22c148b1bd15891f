//! NDJSON framing: complete lines out of a byte stream split anywhere (inside UTF-8
//! characters too). Blank lines are skipped; a last line without `\n` is kept.
//!
//! Lines are lent to a callback: a line that lies whole inside the bytes of one read is
//! never copied, and a line split across reads is copied once.

/// Incremental line splitter.
#[derive(Debug, Default)]
pub struct LineFramer {
    /// The start of a line whose end has not arrived yet.
    pending: Vec<u8>,
}

impl LineFramer {
    /// Add bytes; `line` gets each line they complete, in order (without `\r\n` / `\n`).
    pub fn push_with(&mut self, bytes: &[u8], mut line: impl FnMut(&str)) {
        let mut rest = bytes;
        if !self.pending.is_empty() {
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                self.pending.extend_from_slice(bytes);
                return;
            };
            self.pending.extend_from_slice(&bytes[..end]);
            lend(&self.pending, &mut line);
            self.pending.clear();
            rest = &bytes[end + 1..];
        }
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', rest) {
            lend(&rest[start..end], &mut line);
            start = end + 1;
        }
        self.pending.extend_from_slice(&rest[start..]);
    }

    /// End of stream: whatever is left, as a last line.
    pub fn finish_with(&mut self, mut line: impl FnMut(&str)) {
        let rest = std::mem::take(&mut self.pending);
        lend(&rest, &mut line);
    }
}

/// Hand `raw` (one line without its `\n`) to `line` as text, unless it is blank.
fn lend(raw: &[u8], line: &mut impl FnMut(&str)) {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    // Valid UTF-8 (every line of a well-behaved server) takes the fast check; only a
    // broken line pays for the lossy copy (`from_utf8_lossy` alone was ~9 % of the
    // Ollama pipeline's CPU, all in its slower validation).
    let text = match std::str::from_utf8(raw) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(raw),
    };
    if !text.trim().is_empty() {
        line(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_survive_splits_at_every_byte() {
        let text = "{\"a\":\"ünï 🌍\"}\r\n\n{\"b\":2}\n{\"c\":3}";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            let mut f = LineFramer::default();
            let mut lines = Vec::new();
            f.push_with(&bytes[..cut], |l| lines.push(l.to_owned()));
            f.push_with(&bytes[cut..], |l| lines.push(l.to_owned()));
            f.finish_with(|l| lines.push(l.to_owned()));
            assert_eq!(
                lines,
                ["{\"a\":\"ünï 🌍\"}", "{\"b\":2}", "{\"c\":3}"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_comes_out_with_replacement_characters() {
        let mut f = LineFramer::default();
        let mut lines = Vec::new();
        f.push_with(b"{\"a\":\"\xff\xfe\"}\n{\"b\":1}\n", |l| {
            lines.push(l.to_owned())
        });
        assert_eq!(lines, ["{\"a\":\"\u{FFFD}\u{FFFD}\"}", "{\"b\":1}"]);
    }

    proptest::proptest! {
        /// Any lines (any text without a newline), with `\n` or `\r\n` endings, split
        /// into any pieces: the same non-blank lines come out, whole and in order.
        #[test]
        fn any_lines_split_anywhere_come_out_whole(
            lines in proptest::collection::vec("[^\r\n]{0,40}", 0..12),
            crlf in proptest::bool::ANY,
            cuts in proptest::collection::vec(0usize..400, 0..8),
        ) {
            let ending = if crlf { "\r\n" } else { "\n" };
            let text: String = lines.iter().map(|l| format!("{l}{ending}")).collect();
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut framer = LineFramer::default();
            let mut out = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                framer.push_with(&bytes[from..cut], |l| out.push(l.to_owned()));
                from = cut;
            }
            framer.finish_with(|l| out.push(l.to_owned()));
            let want: Vec<&String> = lines.iter().filter(|l| !l.trim().is_empty()).collect();
            proptest::prop_assert_eq!(out.iter().collect::<Vec<_>>(), want);
        }
    }
}
