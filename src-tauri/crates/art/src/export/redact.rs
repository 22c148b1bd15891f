//! Keeping secrets out of exports: the API keys the app knows, and anything that looks
//! like a key (provider key patterns, `Authorization` / API-key headers and fields), are
//! replaced by [`REDACTED`] in every line an export writes.

use std::borrow::Cow;

use crate::providers::ProviderManager;
use crate::secrets::{SecretStore, scrub};

pub use crate::secrets::REDACTED;

/// Shortest known secret replaced verbatim (shorter values would hit ordinary text).
const MIN_SECRET: usize = 8;

/// Replaces secrets in text.
pub struct Redactor {
    known: Vec<String>,
}

impl Redactor {
    /// A redactor for key-shaped text and the `known` secrets (e.g. every API key in the
    /// keychain).
    pub fn new(known: impl IntoIterator<Item = String>) -> Self {
        let mut known: Vec<String> = known
            .into_iter()
            .filter(|k| k.trim().len() >= MIN_SECRET)
            .collect();
        // Longest first, so a key containing another is replaced whole.
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
        Self { known }
    }

    /// This redactor, replacing the `more` secrets too (an MCP server's sign-in tokens).
    #[must_use]
    pub fn with(self, more: impl IntoIterator<Item = String>) -> Self {
        Self::new(self.known.into_iter().chain(more))
    }

    /// A redactor for the keys `store` holds for `accounts` (a key that cannot be read
    /// is skipped: the key patterns still apply).
    pub fn for_keys<'a>(
        store: &dyn SecretStore,
        accounts: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let keys = accounts
            .into_iter()
            .filter_map(|account| store.get(account).ok().flatten())
            .map(|secret| secret.expose().to_owned());
        Self::new(keys)
    }

    /// A redactor for the keys of every provider `providers` knows and the secrets of
    /// the `more` accounts (an MCP server's header and environment values), read from
    /// `store`.
    pub fn for_providers(
        providers: &ProviderManager,
        store: &dyn SecretStore,
        more: &[String],
    ) -> Self {
        let names: Vec<String> = providers.entries().into_iter().map(|e| e.name).collect();
        Self::for_keys(store, names.iter().chain(more).map(String::as_str))
    }

    /// `text` with every secret replaced (borrowed when there was none).
    pub fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for key in &self.known {
            if out.contains(key.as_str()) {
                out = Cow::Owned(out.replace(key.as_str(), REDACTED));
            }
        }
        // Then anything key-shaped (the same scrub provider messages get).
        match scrub(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SENTINEL: &str = "zz-sentinel-4f9a2c7e1b";

    #[test]
    fn known_keys_and_key_shaped_text_are_replaced() {
        let r = Redactor::new([SENTINEL.to_owned(), "short".to_owned()]);
        let cases = [
            (format!("the key is {SENTINEL}."), "the key is [REDACTED]."),
            ("sk-proj-abcdefghijklmnop1234".into(), "[REDACTED]"),
            (
                "key sk-ant-api03-AbCdEfGhIjKlMnOp_qr-st".into(),
                "key [REDACTED]",
            ),
            (
                "AIzaSyA1234567890abcdefghijklmnopqrstuv".into(),
                "[REDACTED]",
            ),
            (
                "Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9".into(),
                "Authorization: [REDACTED]",
            ),
            (
                r#"{"x-api-key":"abc123def456"}"#.into(),
                r#"{"x-api-key":"[REDACTED]"}"#,
            ),
            (
                r#"{\"apiKey\":\"abc123def456\"}"#.into(),
                r#"{\"apiKey\":\"[REDACTED]\"}"#,
            ),
            (
                "x-goog-api-key: q1w2e3r4t5y6".into(),
                "x-goog-api-key: [REDACTED]",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(r.apply(&text), want, "{text}");
        }
    }

    #[test]
    fn keys_come_from_the_store() {
        use crate::secrets::{MemoryStore, Secret};
        let store = MemoryStore::new();
        store.set("openai", &Secret::new(SENTINEL)).unwrap();
        let r = Redactor::for_keys(&store, ["openai", "anthropic"]);
        assert_eq!(r.apply(&format!("x{SENTINEL}x")), "x[REDACTED]x");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let r = Redactor::new([SENTINEL.to_owned(), "short".to_owned()]);
        for text in [
            "a short answer about skiing: sk-8 is a size",
            "the bearer of bad news",
            r#"{"expression":"19 + 23","apiVersion":2}"#,
            "Ask-me-anything",
        ] {
            assert!(matches!(r.apply(text), Cow::Borrowed(_)), "{text}");
        }
    }
}
