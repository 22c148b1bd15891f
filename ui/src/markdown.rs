//! Markdown to HTML for messages, with `pulldown-cmark`. Raw HTML in a message is shown
//! as text, never interpreted (a model's answer cannot inject markup or scripts); links
//! keep only http(s) and mailto targets. Code blocks get a header with their language
//! and a Copy button (the view handles its clicks), and — in finished answers — syntax
//! highlighting.

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd, html};

use crate::highlight;

/// Render `source` (CommonMark + tables, strikethrough, task lists) to safe HTML, code
/// blocks plain (fast: for an answer still streaming).
pub fn to_html(source: &str) -> String {
    render(source, false)
}

/// Like [`to_html`], with code blocks syntax-highlighted (for finished answers).
pub fn to_html_highlighted(source: &str) -> String {
    render(source, true)
}

/// Whether `source` may have a fenced code block (the only kind that is highlighted):
/// a cheap check, never false when there is one.
pub fn has_code_block(source: &str) -> bool {
    source.contains("```") || source.contains("~~~")
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Writing into a String cannot fail.
    let _ = pulldown_cmark_escape::escape_html(&mut out, text);
    out
}

/// A code block as trusted HTML: header (language, Copy) and the escaped or
/// highlighted code.
fn code_block(language: &str, code: &str, highlighted: bool) -> String {
    // A fence tag is a word like `rust` or `c++`; anything else is not shown.
    let language: String = language
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(*c))
        .collect();
    let body = highlighted
        .then(|| highlight::highlight(code, &language))
        .flatten()
        .unwrap_or_else(|| escape(code));
    let class = match language.is_empty() {
        true => String::new(),
        false => format!(" class=\"language-{language}\""),
    };
    format!(
        "<div class=\"code-block\"><div class=\"code-head\"><span class=\"code-lang\">{language}</span>\
         <button type=\"button\" class=\"code-copy\">Copy</button></div>\
         <pre><code{class}>{body}</code></pre></div>\n"
    )
}

/// Replace each code block's events by one trusted HTML event (after the model's own
/// markup was turned into text, so only ours is HTML).
fn with_code_blocks<'a>(
    events: impl Iterator<Item = Event<'a>>,
    highlighted: bool,
) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    let mut block: Option<(String, String)> = None;
    for event in events {
        match (event, &mut block) {
            (Event::Start(Tag::CodeBlock(kind)), _) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                block = Some((language, String::new()));
            }
            (Event::End(TagEnd::CodeBlock), Some((language, code))) => {
                out.push(Event::Html(code_block(language, code, highlighted).into()));
                block = None;
            }
            (Event::Text(text), Some((_, code))) => code.push_str(&text),
            (event, _) => out.push(event),
        }
    }
    out
}

fn render(source: &str, highlighted: bool) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(source, options).map(|event| match event {
        // Markup written by the model is text to us.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let safe = ["http://", "https://", "mailto:", "#"]
                .iter()
                .any(|p| dest_url.starts_with(p));
            let dest_url = if safe {
                dest_url
            } else {
                CowStr::Borrowed("#")
            };
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            })
        }
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            // No remote content: images become links.
            let _ = (dest_url, id);
            Event::Start(Tag::Link {
                link_type,
                dest_url: CowStr::Borrowed("#"),
                title,
                id: CowStr::Borrowed(""),
            })
        }
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(source.len() * 3 / 2);
    html::push_html(&mut out, with_code_blocks(events, highlighted).into_iter());
    out
}

/// Whether `line` opens or closes a code fence: its marker (` or ~) and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|c| *c == marker).count();
    (run >= 3).then_some((marker, run))
}

/// Markdown of a growing text (an answer while it streams), rendered block by block:
/// text before the last blank line outside a code fence can no longer change, so it is
/// rendered once into chunks that stay as they are; only the tail is rendered again as
/// tokens arrive. The finished answer is rendered whole (with highlighting) instead.
#[derive(Debug, Default)]
pub struct Incremental {
    /// The text scanned so far (the next one must extend it).
    seen: String,
    /// Bytes of the text already turned into chunks.
    stable: usize,
    /// Bytes scanned for boundaries (whole lines), and the fence open there.
    scanned: usize,
    open_fence: Option<(char, usize)>,
}

/// What [`Incremental::advance`] produced.
#[derive(Debug, PartialEq)]
pub struct Advance {
    /// The text did not extend the previous one: drop the chunks shown so far.
    pub reset: bool,
    /// HTML of blocks that became stable, to append after the earlier chunks.
    pub chunks: Vec<String>,
    /// HTML of the rest, replacing the previous tail.
    pub tail: String,
}

impl Incremental {
    /// Take the text as it is now (the previous one extended).
    pub fn advance(&mut self, text: &str) -> Advance {
        let reset = !text.starts_with(&self.seen);
        if reset {
            *self = Self::default();
        }
        let mut boundary = None;
        while let Some(end) = text[self.scanned..].find('\n') {
            let line = &text[self.scanned..self.scanned + end];
            self.seen
                .push_str(&text[self.scanned..self.scanned + end + 1]);
            self.scanned += end + 1;
            match (self.open_fence, fence(line)) {
                (None, Some(opened)) => self.open_fence = Some(opened),
                (Some((marker, run)), Some((m, r))) if m == marker && r >= run => {
                    self.open_fence = None;
                }
                (None, None) if line.trim().is_empty() => boundary = Some(self.scanned),
                _ => {}
            }
        }
        let mut chunks = Vec::new();
        if let Some(end) = boundary.filter(|end| *end > self.stable) {
            chunks.push(to_html(&text[self.stable..end]));
            self.stable = end;
        }
        Advance {
            reset,
            chunks,
            tail: to_html(&text[self.stable..]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_blocks_are_noticed() {
        assert!(has_code_block("text\n\n```rust\nfn main() {}\n```"));
        assert!(has_code_block("~~~\ncode\n~~~"));
        assert!(!has_code_block("plain **text** with `inline` code"));
    }

    #[test]
    fn markdown_renders_and_markup_stays_text() {
        let html = to_html(
            "# Title\n\n**bold** `code`\n\n```rust\nfn main() {}\n```\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) [ok](https://example.org)",
        );
        assert!(html.contains("<h1>Title</h1>"));
        assert!(html.contains("<strong>bold</strong>"));
        assert!(html.contains("<code class=\"language-rust\">"));
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
        assert!(!html.contains("javascript:"));
        assert!(html.contains("href=\"https://example.org\""));
    }

    #[test]
    fn code_blocks_get_a_header_copy_button_and_highlighting_when_finished() {
        let source = "```rust\nlet x = \"<i>\";\n```\n\n```\n<script>alert(1)</script>\n```";
        let plain = to_html(source);
        assert_eq!(plain.matches("class=\"code-copy\"").count(), 2, "{plain}");
        assert!(
            plain.contains("<span class=\"code-lang\">rust</span>"),
            "{plain}"
        );
        assert!(
            !plain.contains("hl-"),
            "streaming answers are not highlighted: {plain}"
        );
        assert!(
            plain.contains("&lt;script&gt;") && !plain.contains("<script>"),
            "{plain}"
        );
        let highlighted = to_html_highlighted(source);
        assert!(highlighted.contains("hl-string"), "{highlighted}");
        assert!(
            !highlighted.contains("<i>") && !highlighted.contains("<script>"),
            "{highlighted}"
        );
        // A hostile fence tag cannot break out of the attribute.
        let hostile = to_html("```rust\"><img src=x>\nx\n```");
        assert!(!hostile.contains("<img"), "{hostile}");
    }

    /// Feed `text` in pieces; return everything shown at the end, chunks + tail.
    fn stream(text: &str, piece: usize) -> (String, usize) {
        let mut md = Incremental::default();
        let (mut chunks, mut tail) = (Vec::new(), String::new());
        let mut end = 0;
        while end < text.len() {
            end = (end + piece).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let step = md.advance(&text[..end]);
            assert!(!step.reset);
            chunks.extend(step.chunks);
            tail = step.tail;
        }
        let count = chunks.len();
        (chunks.concat() + &tail, count)
    }

    #[test]
    fn a_streamed_answer_renders_like_the_whole_and_stable_blocks_render_once() {
        let answer = "# Plan\n\nFirst paragraph with **bold**.\n\n```rust\nfn main() {\n\n    println!(\"hi\");\n}\n```\n\n- a\n- b\n\nLast — ünïcode words.";
        for piece in [1, 3, 7, 64] {
            let (html, chunks) = stream(answer, piece);
            assert_eq!(html, to_html(answer), "piece {piece}");
            // Heading, paragraph, code block (its blank line is not a boundary), list;
            // bigger pieces may bring several blocks at once.
            match piece {
                1 | 3 => assert_eq!(chunks, 4, "piece {piece}"),
                _ => assert!((1..=4).contains(&chunks), "piece {piece}: {chunks}"),
            }
        }
    }

    #[test]
    fn a_text_that_does_not_extend_the_last_one_starts_over() {
        let mut md = Incremental::default();
        md.advance("one\n\ntwo");
        let step = md.advance("other");
        assert!(step.reset);
        assert_eq!(step.tail, to_html("other"));
    }

    #[test]
    fn images_do_not_load_remote_content() {
        let html = to_html("![cat](https://evil.example/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("evil.example"), "{html}");
    }
}
