//! Markdown to HTML for messages, with `pulldown-cmark`. Raw HTML in a message is shown
//! as text, never interpreted (a model's answer cannot inject markup or scripts); links
//! keep only http(s) and mailto targets. Code blocks get a header with their language
//! and a Copy button (the view handles its clicks), and — in finished answers — syntax
//! highlighting, which the backend does: [`code_blocks`] lists what to send it
//! (`highlight_code`), [`to_html_highlighted`] puts its answer in place.

use art_types::commands::CodeBlock;
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// Render `source` (CommonMark + tables, strikethrough, task lists) to safe HTML, code
/// blocks plain (fast: for an answer still streaming).
pub fn to_html(source: &str) -> String {
    render(source, &[])
}

/// Like [`to_html`], with the code blocks' HTML from the backend's highlighter: the
/// `n`th entry of `highlighted` (trusted, escaped HTML) for the `n`th block of
/// [`code_blocks`]; a block without one is shown plain.
pub fn to_html_highlighted(source: &str, highlighted: &[Option<String>]) -> String {
    render(source, highlighted)
}

/// The fenced and indented code blocks of `source`, in order, each with its fence's
/// language tag as the page shows it (what the backend is asked to highlight).
pub fn code_blocks(source: &str) -> Vec<CodeBlock> {
    pieces(events(source))
        .filter_map(|piece| match piece {
            Piece::Block(block) => Some(block),
            Piece::Other(_) => None,
        })
        .collect()
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

/// A code block's language as shown: its fence's first word up to anything but a
/// letter, digit or `+-_.#` (`rust`, `c++`); empty for an indented block.
fn language_tag(kind: &CodeBlockKind) -> String {
    match kind {
        CodeBlockKind::Fenced(info) => info
            .split_whitespace()
            .next()
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(*c))
            .collect(),
        CodeBlockKind::Indented => String::new(),
    }
}

/// A code block as trusted HTML: header (language, Copy) and the code, escaped here or
/// highlighted (already escaped) by the backend.
fn code_block(language: &str, code: &str, highlighted: Option<&str>) -> String {
    let body = highlighted.map_or_else(|| escape(code), str::to_owned);
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

/// A code block gathered whole, or any other event as it came.
enum Piece<'a> {
    Block(CodeBlock),
    Other(Event<'a>),
}

/// `events` with each code block's events (start, text, end) gathered into one
/// [`Piece::Block`]: the one walk both [`code_blocks`] and the rendering make, so the
/// `n`th block is the same for both.
fn pieces<'a>(events: impl Iterator<Item = Event<'a>>) -> impl Iterator<Item = Piece<'a>> {
    let mut open: Option<CodeBlock> = None;
    events.filter_map(move |event| match (event, &mut open) {
        (Event::Start(Tag::CodeBlock(kind)), _) => {
            open = Some(CodeBlock {
                language: language_tag(&kind),
                code: String::new(),
            });
            None
        }
        (Event::End(TagEnd::CodeBlock), Some(_)) => open.take().map(Piece::Block),
        (Event::Text(text), Some(block)) => {
            block.code.push_str(&text);
            None
        }
        (event, _) => Some(Piece::Other(event)),
    })
}

/// `source`'s Markdown events, made safe: the model's markup is text, links keep only
/// safe targets, images become links.
fn events(source: &str) -> impl Iterator<Item = Event<'_>> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    Parser::new_ext(source, options).map(|event| match event {
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
    })
}

/// `source` as HTML, each code block as one trusted HTML event (after the model's own
/// markup was turned into text, so only ours is HTML); the `n`th block takes the `n`th
/// entry of `highlighted` when there is one.
fn render(source: &str, highlighted: &[Option<String>]) -> String {
    let mut highlighted = highlighted.iter();
    let html_events = pieces(events(source)).map(|piece| match piece {
        Piece::Block(block) => {
            let html = highlighted.next().and_then(Option::as_deref);
            Event::Html(code_block(&block.language, &block.code, html).into())
        }
        Piece::Other(event) => event,
    });
    let mut out = String::with_capacity(source.len() * 3 / 2);
    html::push_html(&mut out, html_events);
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
    /// What followed `seen` in the text last rendered (its unfinished line), if any was.
    rendered: Option<String>,
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
    /// Take the text as it is now (the previous one extended); `None` when it is the
    /// text last rendered (a view hears of every run's batch, not only its own).
    pub fn advance(&mut self, text: &str) -> Option<Advance> {
        let reset = !text.starts_with(&self.seen);
        if reset {
            *self = Self::default();
        } else if self.rendered.as_deref() == Some(&text[self.seen.len()..]) {
            return None;
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
        self.rendered = Some(text[self.scanned..].to_owned());
        let mut chunks = Vec::new();
        if let Some(end) = boundary.filter(|end| *end > self.stable) {
            chunks.push(to_html(&text[self.stable..end]));
            self.stable = end;
        }
        Some(Advance {
            reset,
            chunks,
            tail: to_html(&text[self.stable..]),
        })
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
        // The backend's HTML goes to its block; a block it left plain is escaped here.
        let blocks = code_blocks(source);
        assert_eq!(
            blocks,
            [
                CodeBlock {
                    language: "rust".into(),
                    code: "let x = \"<i>\";\n".into()
                },
                CodeBlock {
                    language: String::new(),
                    code: "<script>alert(1)</script>\n".into()
                },
            ]
        );
        let from_backend = "<span class=\"hl-string\">&quot;&lt;i&gt;&quot;</span>";
        let highlighted = to_html_highlighted(source, &[Some(from_backend.into()), None]);
        assert!(highlighted.contains(from_backend), "{highlighted}");
        assert!(
            !highlighted.contains("<i>") && !highlighted.contains("<script>"),
            "{highlighted}"
        );
        assert_eq!(highlighted.matches("hl-").count(), 1, "{highlighted}");
        // Fewer entries than blocks (or none): the rest is plain, as while streaming.
        assert_eq!(to_html_highlighted(source, &[]), plain);
        // A hostile fence tag cannot break out of the attribute.
        let hostile = to_html("```rust\"><img src=x>\nx\n```");
        assert!(!hostile.contains("<img"), "{hostile}");
        assert_eq!(
            code_blocks("```rust\"><img src=x>\nx\n```")[0].language,
            "rust"
        );
        // Tildes, indented blocks and a tag with attributes (`py title=x`).
        let kinds = code_blocks("~~~py title=x\na\n~~~\n\n    indented\n");
        assert_eq!(kinds.len(), 2);
        assert_eq!(
            (kinds[0].language.as_str(), kinds[0].code.as_str()),
            ("py", "a\n")
        );
        assert_eq!(
            (kinds[1].language.as_str(), kinds[1].code.as_str()),
            ("", "indented\n")
        );
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
            let step = md.advance(&text[..end]).expect("a longer text");
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
        let step = md.advance("other").expect("another text");
        assert!(step.reset);
        assert_eq!(step.tail, to_html("other"));
        // Even one as long as the last is rendered anew.
        let step = md.advance("00000").expect("another text");
        assert_eq!(step.tail, to_html("00000"));
    }

    #[test]
    fn the_same_text_again_renders_nothing() {
        let mut md = Incremental::default();
        assert!(
            md.advance("").is_some(),
            "the first text is rendered, even empty"
        );
        assert!(md.advance("").is_none());
        assert!(md.advance("one\n\ntw").is_some());
        assert!(
            md.advance("one\n\ntw").is_none(),
            "nothing new: nothing rendered"
        );
        let step = md.advance("one\n\ntwo").expect("one more letter");
        assert_eq!(step.tail, to_html("two"));
    }

    #[test]
    fn images_do_not_load_remote_content() {
        let html = to_html("![cat](https://evil.example/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("evil.example"), "{html}");
    }
}
