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
            self.close(true);
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

    /// Close the passage; with `overlap`, the next starts with the end of this one.
    fn close(&mut self, overlap: bool) {
        let Some(headings) = self.opened_under.take() else {
            self.lines.clear();
            self.tokens = 0;
            return;
        };
        while self.lines.last().is_some_and(|l| l.text.trim().is_empty()) {
            self.lines.pop();
        }
        let (Some(first), Some(last)) = (self.lines.first(), self.lines.last()) else {
            return;
        };
        let text = self
            .lines
            .iter()
            .map(|l| l.text)
            .collect::<Vec<_>>()
            .join("\n");
        let pages =
            self.lines
                .iter()
                .filter_map(|l| l.page)
                .fold(None, |range: Option<(u32, u32)>, p| {
                    Some(range.map_or((p, p), |(a, b)| (a.min(p), b.max(p))))
                });
        self.chunks.push(Chunk {
            ord: self.chunks.len() as u32,
            tokens: estimated_tokens(&text),
            text,
            headings,
            pages,
            lines: (first.number, last.number),
        });
        let mut kept = 0;
        if overlap {
            let mut carried = 0;
            for line in self.lines.iter().rev() {
                if carried + line.tokens > OVERLAP_TOKENS {
                    break;
                }
                carried += line.tokens;
                kept += 1;
            }
        }
        let from = self.lines.len() - kept;
        self.lines.drain(..from);
        self.tokens = self.lines.iter().map(|l| l.tokens).sum();
    }
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
