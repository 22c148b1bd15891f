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

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn images_do_not_load_remote_content() {
        let html = to_html("![cat](https://evil.example/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("evil.example"), "{html}");
    }
}
