//! Syntax highlighting of code blocks with `syntect` (Sublime Text grammars, pure-Rust
//! regexes, so it runs in wasm). The output is spans with `hl-` scope classes that the
//! stylesheet colours for the light and the dark theme (the CSP allows no inline styles).

use std::sync::OnceLock;

use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// Largest code block that is highlighted (bigger ones are shown plain, at once).
pub const MAX_HIGHLIGHT_BYTES: usize = 64 * 1024;

/// The grammars, loaded on first use (a few tens of milliseconds, once).
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// `code` as highlighted HTML (escaped, with `hl-` classes) for the fence tag
/// `language` (`rust`, `py`, `json`, `sh`, …); `None` when the language is unknown or
/// the block too large, and the caller shows it plain.
pub fn highlight(code: &str, language: &str) -> Option<String> {
    if code.len() > MAX_HIGHLIGHT_BYTES || language.is_empty() {
        return None;
    }
    let set = syntaxes();
    let syntax = set.find_syntax_by_token(language)?;
    let style = ClassStyle::SpacedPrefixed { prefix: "hl-" };
    let mut html = ClassedHTMLGenerator::new_with_class_style(syntax, set, style);
    for line in LinesWithEndings::from(code) {
        html.parse_html_for_line_which_includes_newline(line).ok()?;
    }
    Some(html.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_scope_classes_and_stay_escaped() {
        let html = highlight("fn main() { let s = \"<b>\"; } // done\n", "rust").unwrap();
        assert!(html.contains("hl-keyword"), "{html}");
        assert!(html.contains("hl-string"), "{html}");
        assert!(html.contains("hl-comment"), "{html}");
        assert!(
            html.contains("&lt;b&gt;") && !html.contains("<b>"),
            "{html}"
        );
        for alias in ["py", "python", "json", "sh", "js"] {
            assert!(highlight("x = 1\n", alias).is_some(), "{alias}");
        }
    }

    #[test]
    fn unknown_or_huge_blocks_are_left_plain() {
        assert_eq!(highlight("x", "no-such-language"), None);
        assert_eq!(highlight("x", ""), None);
        let huge = "let x = 1;\n".repeat(MAX_HIGHLIGHT_BYTES / 8);
        assert_eq!(highlight(&huge, "rust"), None);
    }
}
