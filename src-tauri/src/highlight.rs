//! Syntax highlighting of the code blocks in finished answers, for the `highlight_code`
//! command: `syntect` (Sublime Text grammars, pure-Rust regexes). It lives in the backend,
//! not the page, because the web process keeps every byte of its WebAssembly compiled and
//! its memory never shrinks: the grammars and their regex engine were a third of the UI's
//! module and stayed in the page's memory once loaded. The output is spans with `hl-`
//! scope classes that the stylesheet colours (the CSP allows no inline styles).

use std::sync::OnceLock;

use art_types::commands::{CodeBlock, HighlightCode};
use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// The grammars, loaded on first use (a few tens of milliseconds, once per run).
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Each block highlighted, in order; those past [`HighlightCode::MAX_BLOCKS`] are `None`.
pub fn highlight_all(blocks: &[CodeBlock]) -> Vec<Option<String>> {
    blocks
        .iter()
        .enumerate()
        .map(|(i, block)| {
            (i < HighlightCode::MAX_BLOCKS)
                .then(|| highlight(&block.code, &block.language))
                .flatten()
        })
        .collect()
}

/// `code` as highlighted HTML (escaped, with `hl-` classes) for the fence tag
/// `language`; `None` when the language is unknown or the block too large, and the page
/// shows it plain.
pub fn highlight(code: &str, language: &str) -> Option<String> {
    if code.len() > HighlightCode::MAX_BYTES || language.is_empty() {
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

    fn block(language: &str, code: &str) -> CodeBlock {
        CodeBlock {
            language: language.into(),
            code: code.into(),
        }
    }

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
        let huge = "let x = 1;\n".repeat(HighlightCode::MAX_BYTES / 8);
        assert_eq!(highlight(&huge, "rust"), None);
    }

    #[test]
    fn blocks_come_back_in_order_one_entry_each_up_to_the_limit() {
        let blocks = [
            block("rust", "let a = 1;\n"),
            block("", "plain"),
            block("py", "# c\n"),
        ];
        let out = highlight_all(&blocks);
        assert_eq!(out.len(), 3);
        assert!(out[0].as_deref().unwrap().contains("hl-keyword"));
        assert_eq!(out[1], None);
        assert!(out[2].as_deref().unwrap().contains("hl-comment"));

        let many = vec![block("sh", "echo hi\n"); HighlightCode::MAX_BLOCKS + 2];
        let out = highlight_all(&many);
        assert_eq!(out.len(), many.len());
        assert!(out[HighlightCode::MAX_BLOCKS - 1].is_some());
        assert!(out[HighlightCode::MAX_BLOCKS..].iter().all(Option::is_none));
    }
}
