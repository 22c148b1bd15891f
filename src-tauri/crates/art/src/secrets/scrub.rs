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
pub(crate) static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:\bsk-[A-Za-z0-9_\-]{16,}|\bAIza[0-9A-Za-z_\-]{30,}|(?i:\bbearer[ \t]+)[A-Za-z0-9._~+/\-]{8,}=*)",
    )
    .expect("token pattern is valid")
});

/// A header or field naming a key, e.g. `"authorization": "…"`, `x-api-key: …`,
/// `apiKey=…`: the name stays, the value goes.
pub(crate) static FIELDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)((?:authorization|proxy-authorization|x-api-key|x-goog-api-key|api[_-]?key|apikey|access[_-]?token)\\?"?[ \t]*[:=][ \t]*\\?"?)([^"\\\s,;}]{6,})"#,
    )
    .expect("field pattern is valid")
});

/// `text` with key-shaped tokens and key fields' values replaced by [`REDACTED`]
/// (borrowed when there were none).
pub fn scrub(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Cow::Owned(replaced) = TOKENS.replace_all(&out, REDACTED) {
        out = Cow::Owned(replaced);
    }
    if let Cow::Owned(replaced) = FIELDS.replace_all(&out, format!("${{1}}{REDACTED}")) {
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
}
