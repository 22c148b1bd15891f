//! Markdown to HTML for messages, with `pulldown-cmark`. Raw HTML in a message is shown
//! as text, never interpreted (a model's answer cannot inject markup or scripts); links
//! keep only http(s) and mailto targets. Code blocks carry their language as a class
//! and get a copy button in the view.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

/// Render `source` (CommonMark + tables, strikethrough, task lists) to safe HTML.
pub fn to_html(source: &str) -> String {
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
        Event::End(pulldown_cmark::TagEnd::Image) => Event::End(pulldown_cmark::TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(source.len() * 3 / 2);
    html::push_html(&mut out, events);
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
    fn images_do_not_load_remote_content() {
        let html = to_html("![cat](https://evil.example/cat.png)");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("evil.example"), "{html}");
    }
}
