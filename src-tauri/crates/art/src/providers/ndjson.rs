//! NDJSON framing: complete lines out of a byte stream split anywhere (inside UTF-8
//! characters too). Blank lines are skipped; a last line without `\n` is kept.

/// Incremental line splitter.
#[derive(Debug, Default)]
pub struct LineFramer {
    pending: Vec<u8>,
}

impl LineFramer {
    /// Add bytes; returns the lines completed by them (without `\r\n` / `\n`).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            push_line(&line[..line.len() - 1], &mut lines);
        }
        lines
    }

    /// End of stream: whatever is left, as a last line.
    pub fn finish(&mut self) -> Vec<String> {
        let rest = std::mem::take(&mut self.pending);
        let mut lines = Vec::new();
        push_line(&rest, &mut lines);
        lines
    }
}

fn push_line(raw: &[u8], lines: &mut Vec<String>) {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let line = String::from_utf8_lossy(raw);
    if !line.trim().is_empty() {
        lines.push(line.into_owned());
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
            let mut lines = f.push(&bytes[..cut]);
            lines.extend(f.push(&bytes[cut..]));
            lines.extend(f.finish());
            assert_eq!(
                lines,
                ["{\"a\":\"ünï 🌍\"}", "{\"b\":2}", "{\"c\":3}"],
                "cut at {cut}"
            );
        }
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
                out.extend(framer.push(&bytes[from..cut]));
                from = cut;
            }
            out.extend(framer.finish());
            let want: Vec<&String> = lines.iter().filter(|l| !l.trim().is_empty()).collect();
            proptest::prop_assert_eq!(out.iter().collect::<Vec<_>>(), want);
        }
    }
}
