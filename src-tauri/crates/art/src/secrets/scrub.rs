//! Key-shaped text out of untrusted text: what providers send back can repeat the key it
//! was given ("Incorrect API key provided: sk-…"), and an error message is shown, stored
//! in an observation and logged. [`scrub`] replaces anything that looks like a key.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// What a secret becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Key-shaped tokens: OpenAI / DeepSeek / OpenRouter / Anthropic (`sk-…`), Google
/// (`AIza…`), bearer tokens.
pub(crate) static TOKENS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(TOKEN_PATTERN).expect("token pattern is valid"));

const TOKEN_PATTERN: &str = r"(?:\bsk-[A-Za-z0-9_\-]{16,}|\bAIza[0-9A-Za-z_\-]{30,}|(?i:\bbearer[ \t]+)[A-Za-z0-9._~+/\-]{8,}=*)";

/// A header or field naming a key, e.g. `"authorization": "…"`, `x-api-key: …`,
/// `apiKey=…`: the name stays, the value goes.
pub(crate) static FIELDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(FIELD_PATTERN).expect("field pattern is valid"));

const FIELD_PATTERN: &str = r#"(?i)((?:authorization|proxy-authorization|x-api-key|x-goog-api-key|api[_-]?key|apikey|access[_-]?token)\\?"?[ \t]*[:=][ \t]*\\?"?)([^"\\\s,;}]{6,})"#;

/// What a key field becomes: its name, then [`REDACTED`].
static FIELD_REPLACEMENT: LazyLock<String> = LazyLock::new(|| format!("${{1}}{REDACTED}"));

/// Bytes of the shortest text either pattern matches (`apikey=abcdef`): shorter text
/// cannot hold a key and is not searched — most of a span's attribute values are that
/// short, and a search has a fixed cost. The tests derive it from the patterns.
const SHORTEST_MATCH: usize = 13;

/// `text` with key-shaped tokens and key fields' values replaced by [`REDACTED`]
/// (borrowed when there were none).
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if text.len() < SHORTEST_MATCH {
        return out;
    }
    if let Cow::Owned(replaced) = TOKENS.replace_all(&out, REDACTED) {
        out = Cow::Owned(replaced);
    }
    if let Cow::Owned(replaced) = FIELDS.replace_all(&out, FIELD_REPLACEMENT.as_str()) {
        out = Cow::Owned(replaced);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_provider_messages_are_replaced_and_plain_text_is_borrowed() {
        assert_eq!(
            scrub("Incorrect API key provided: sk-proj-abcdefghijklmnop1234. See docs."),
            "Incorrect API key provided: [REDACTED]. See docs."
        );
        assert_eq!(scrub("x-api-key: q1w2e3r4t5y6"), "x-api-key: [REDACTED]");
        assert!(matches!(scrub("the model is overloaded"), Cow::Borrowed(_)));
    }

    #[test]
    fn text_shorter_than_any_match_is_what_is_skipped() {
        let shortest = [TOKEN_PATTERN, FIELD_PATTERN]
            .into_iter()
            .map(|pattern| {
                let hir = regex_syntax::parse(pattern).expect("pattern parses");
                hir.properties()
                    .minimum_len()
                    .expect("a pattern that can match")
            })
            .min();
        assert_eq!(shortest, Some(SHORTEST_MATCH));
        // The shortest match is replaced; one byte less cannot match.
        assert_eq!(scrub("apikey=abcdef"), "apikey=[REDACTED]");
        assert!(matches!(scrub("apikey=abcde"), Cow::Borrowed(_)));
    }
}
