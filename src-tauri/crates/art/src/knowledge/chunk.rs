//! Chunking: a document's extracted text cut into passages of about [`TARGET_TOKENS`],
//! the next one starting with the last [`OVERLAP_TOKENS`] or so of the one before, never
//! across documents (one call per document), a section heading or a page (a citation
//! names the page it is on). Each passage
//! remembers where it is — its heading path (Markdown-style `#` headings, as the HTML and
//! Word readers write them), its pages (the PDF reader's `--- page N ---` markers) and
//! its lines in the extracted text — so a citation can say "report.pdf, p. 12, §3.2".

use serde::{Deserialize, Serialize};

use crate::agent::history::estimated_tokens;

/// Tokens a passage aims for (the app's estimate, three bytes a token: about 190 of the
/// built-in embedder's word pieces in English, under the 256 it reads).
pub const TARGET_TOKENS: u64 = 256;

/// Tokens of the previous passage repeated at the start of the next, so a sentence cut
/// at a boundary is whole in one of them.
pub const OVERLAP_TOKENS: u64 = 48;

/// A passage cut where a sentence ends has at least this many tokens (three quarters of
/// [`TARGET_TOKENS`]).
const SOFT_FROM: u64 = TARGET_TOKENS * 3 / 4;

/// A passage shorter than this is not closed by a heading: a heading right after a few
/// lines joins them instead of leaving a scrap.
const MIN_TOKENS: u64 = 32;

/// What kind of text is cut, which decides what its lines mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Prose with `#` headings (Markdown, and the text of HTML, Word and PDF files).
    Headed,
    /// Text where a `#` starts a comment, not a heading (source code, plain text).
    Plain,
}

/// One passage of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    /// Its place in the document, from 0.
    pub ord: u32,
    /// The passage (page markers left out).
    pub text: String,
    /// Estimated tokens of `text`.
    pub tokens: u64,
    /// The headings it is under, outermost first.
    pub headings: Vec<String>,
    /// The first and last page it is on, for paged documents.
    pub pages: Option<(u32, u32)>,
    /// The first and last line of the extracted text it spans (from 1).
    pub lines: (u32, u32),
}

impl Chunk {
    /// Where it is, as a citation says it ([`place`]).
    pub fn place(&self) -> String {
        place(self.pages, self.lines, &self.headings)
    }
}

/// Where a passage is, as a citation says it: `p. 12`, `pp. 3–4`, `lines 10–42`, then the
/// innermost heading (`§Installation`).
pub fn place(pages: Option<(u32, u32)>, lines: (u32, u32), headings: &[String]) -> String {
    let mut place = match pages {
        Some((a, b)) if a == b => format!("p. {a}"),
        Some((a, b)) => format!("pp. {a}–{b}"),
        None if lines.0 == lines.1 => format!("line {}", lines.0),
        None => format!("lines {}–{}", lines.0, lines.1),
    };
    if let Some(heading) = headings.last() {
        place.push_str(", §");
        place.push_str(heading);
    }
    place
}

/// A line on its way into a passage.
struct Line<'a> {
    number: u32,
    page: Option<u32>,
    text: &'a str,
    tokens: u64,
}

/// The passages being made.
struct Cutter<'a> {
    chunks: Vec<Chunk>,
    lines: Vec<Line<'a>>,
    tokens: u64,
    headings: Vec<(usize, String)>,
    /// The heading path when the passage's first new line came (overlap aside).
    opened_under: Option<Vec<String>>,
}

impl<'a> Cutter<'a> {
    fn push(&mut self, line: Line<'a>) {
        if self.tokens + line.tokens > TARGET_TOKENS && self.opened_under.is_some() {
            self.cut();
        }
        if self.opened_under.is_none() && !line.text.trim().is_empty() {
            self.opened_under = Some(self.headings.iter().map(|(_, h)| h.clone()).collect());
        }
        if self.lines.is_empty() && line.text.trim().is_empty() {
            return;
        }
        self.tokens += line.tokens;
        self.lines.push(line);
    }

    /// Close the passage because the next line does not fit. Where one of its lines in
    /// the last quarter of [`TARGET_TOKENS`] ends a paragraph or a sentence, it ends at
    /// the last such line and the lines after it start the next passage: nothing is cut
    /// in the middle of a sentence, so nothing needs repeating (and embedding twice).
    /// Otherwise it ends here and the next passage starts with its end.
    fn cut(&mut self) {
        let mut through = self.tokens;
        for (i, line) in self.lines.iter().enumerate().rev() {
            if through < SOFT_FROM {
                break;
            }
            if ends_sentence(line.text) {
                self.close_at(i + 1, false);
                return;
            }
            through -= line.tokens;
        }
        self.close(true);
    }

    /// Close the passage; with `overlap`, the next starts with the end of this one.
    fn close(&mut self, overlap: bool) {
        self.close_at(self.lines.len(), overlap);
    }

    /// Close the passage with its first `end` lines; the lines after them (if any) start
    /// the next one, else with `overlap` it starts with the end of this one.
    fn close_at(&mut self, end: usize, overlap: bool) {
        let Some(headings) = self.opened_under.take() else {
            self.lines.clear();
            self.tokens = 0;
            return;
        };
        let mut last = end;
        while last > 0 && self.lines[last - 1].text.trim().is_empty() {
            last -= 1;
        }
        let passage = &self.lines[..last];
        let (Some(first), Some(final_line)) = (passage.first(), passage.last()) else {
            self.lines.drain(..end);
            self.tokens = self.lines.iter().map(|l| l.tokens).sum();
            return;
        };
        let text = passage
            .iter()
            .map(|l| l.text)
            .collect::<Vec<_>>()
            .join("\n");
        let pages =
            passage
                .iter()
                .filter_map(|l| l.page)
                .fold(None, |range: Option<(u32, u32)>, p| {
                    Some(range.map_or((p, p), |(a, b)| (a.min(p), b.max(p))))
                });
        self.chunks.push(Chunk {
            ord: self.chunks.len() as u32,
            tokens: estimated_tokens(&text),
            text,
            headings: headings.clone(),
            pages,
            lines: (first.number, final_line.number),
        });
        if end < self.lines.len() {
            // The rest is new: under the same headings (a heading closes a passage).
            self.lines.drain(..end);
            let blank = self
                .lines
                .iter()
                .take_while(|l| l.text.trim().is_empty())
                .count();
            self.lines.drain(..blank);
            if !self.lines.is_empty() {
                self.opened_under = Some(headings);
            }
        } else {
            let mut kept = 0;
            if overlap {
                let mut carried = 0;
                for line in passage.iter().rev() {
                    if carried + line.tokens > OVERLAP_TOKENS {
                        break;
                    }
                    carried += line.tokens;
                    kept += 1;
                }
            }
            let from = last - kept;
            self.lines.drain(..from);
            self.lines.truncate(kept);
        }
        self.tokens = self.lines.iter().map(|l| l.tokens).sum();
    }
}

/// Whether a passage may end after `line` without cutting a sentence: it is blank (a
/// paragraph ends) or ends like a sentence.
fn ends_sentence(line: &str) -> bool {
    let line = line.trim_end();
    line.is_empty() || line.ends_with(['.', '!', '?', ':', ';'])
}

/// The page number of a page marker line (`--- page 12 ---`).
fn page_marker(line: &str) -> Option<u32> {
    line.strip_prefix("--- page ")?
        .strip_suffix(" ---")?
        .parse()
        .ok()
}

/// A Markdown-style heading: its level (1–6) and title.
fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    let title = line[level..]
        .strip_prefix(' ')?
        .trim()
        .trim_end_matches('#')
        .trim();
    ((1..=6).contains(&level) && !title.is_empty()).then(|| (level, title.to_owned()))
}

/// Pieces of a line short enough for a passage: the line itself, or cut between words
/// (a word longer than a whole passage, between characters).
fn pieces(line: &str) -> Vec<&str> {
    let limit = (TARGET_TOKENS as usize * 3) / 2;
    if line.len() <= limit {
        return vec![line];
    }
    let mut out = Vec::new();
    let mut rest = line;
    while rest.len() > limit {
        let mut cut = limit;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let at_space = rest[..cut].rfind(' ').filter(|i| *i > limit / 2);
        let cut = at_space.map_or(cut, |i| i + 1);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Cut `text` (one document's extracted text) into passages.
pub fn chunk(text: &str, layout: Layout) -> Vec<Chunk> {
    let mut cutter = Cutter {
        chunks: Vec::new(),
        lines: Vec::new(),
        tokens: 0,
        headings: Vec::new(),
        opened_under: None,
    };
    let mut page = None;
    for (index, raw) in text.lines().enumerate() {
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        if let Some(n) = page_marker(raw) {
            // A passage stays on its page, so that a citation names one page.
            if cutter.opened_under.is_some() {
                cutter.close(false);
            }
            cutter.lines.clear();
            cutter.tokens = 0;
            page = Some(n);
            continue;
        }
        if layout == Layout::Headed
            && let Some((level, title)) = heading(raw)
        {
            if cutter.opened_under.is_none() {
                // Only the end of the passage before: a section starts afresh.
                cutter.lines.clear();
                cutter.tokens = 0;
            } else if cutter.tokens >= MIN_TOKENS {
                cutter.close(false);
            }
            cutter.headings.retain(|(l, _)| *l < level);
            cutter.headings.push((level, title));
            // The passage (new, or a scrap the heading joins) is under the new heading.
            cutter.opened_under = None;
        }
        for piece in pieces(raw) {
            cutter.push(Line {
                number,
                page,
                text: piece,
                tokens: estimated_tokens(piece) + 1,
            });
        }
    }
    cutter.close(false);
    cutter.chunks
}

#[cfg(test)]
mod tests;
