//! Keeping secrets out of exports: the API keys the app knows, and anything that looks
//! like a key (provider key patterns, `Authorization` / API-key headers and fields), are
//! replaced by [`REDACTED`] in every line an export writes.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        // Longest first: text shorter than the last cannot hold any.
        let shortest = self.known.last().map_or(usize::MAX, String::len);
        if text.len() >= shortest {
            for key in &self.known {
                if out.contains(key.as_str()) {
                    out = Cow::Owned(out.replace(key.as_str(), REDACTED));
                }
            }
        }
        // Then anything key-shaped (the same scrub provider messages get).
        match scrub(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
        }
    }
}

/// How long a kept redactor serves at most: a key another process changed meanwhile
/// (`art keys set` while the app runs) is known by then. This process's own changes
/// rebuild it at once ([`crate::secrets::changes`]).
pub const KEEP_REDACTOR: Duration = Duration::from_secs(60);

/// A redactor kept between the runs that need one (the trace push, for every run it
/// sends): building one reads every provider key and MCP secret from the keychain — a
/// Secret Service session each: for six accounts, 29 ms of this process's CPU and as
/// much of the keyring daemon's (release build, GNOME Keyring), against about 5 ms for
/// a whole run. Rebuilt when a secret was written
/// or removed in this process since, or after `max_age`.
pub struct Redactors {
    max_age: Duration,
    /// What counts the changes to secrets ([`crate::secrets::changes`]).
    changes: fn() -> u64,
    kept: tokio::sync::Mutex<Option<Kept>>,
}

struct Kept {
    /// [`crate::secrets::changes`] before it was built.
    changes: u64,
    built: Instant,
    redactor: Arc<Redactor>,
}

impl Default for Redactors {
    fn default() -> Self {
        Self::new(KEEP_REDACTOR)
    }
}

impl Redactors {
    /// None kept yet; each kept for `max_age` at most.
    pub fn new(max_age: Duration) -> Self {
        Self::counting(max_age, crate::secrets::changes)
    }

    /// With the changes counted by `changes` (a test's own counter).
    fn counting(max_age: Duration, changes: fn() -> u64) -> Self {
        Self {
            max_age,
            changes,
            kept: tokio::sync::Mutex::new(None),
        }
    }

    /// The kept redactor while it is current, else the one `build` makes (kept when it
    /// was made; `Err` gives a redactor of key patterns only, not kept). Callers at the
    /// same time wait for one build.
    pub async fn get<E>(&self, build: impl Future<Output = Result<Redactor, E>>) -> Arc<Redactor> {
        let mut kept = self.kept.lock().await;
        let changes = (self.changes)();
        if let Some(current) = kept
            .as_ref()
            .filter(|k| k.changes == changes && k.built.elapsed() < self.max_age)
        {
            return Arc::clone(&current.redactor);
        }
        let built = Instant::now();
        match build.await {
            Ok(redactor) => {
                let redactor = Arc::new(redactor);
                *kept = Some(Kept {
                    changes,
                    built,
                    redactor: Arc::clone(&redactor),
                });
                redactor
            }
            Err(_) => {
                *kept = None;
                Arc::new(Redactor::new(Vec::new()))
            }
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
            // The text no longer than the shortest key is still searched.
            (SENTINEL.to_owned(), "[REDACTED]"),
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

    #[tokio::test]
    async fn a_kept_redactor_serves_until_a_secret_changes_or_it_is_too_old() {
        use crate::secrets::{MemoryStore, Secret};
        use std::sync::atomic::{AtomicU64, Ordering};
        let store = MemoryStore::new();
        store.set("openai", &Secret::new(SENTINEL)).unwrap();
        let builds = std::sync::atomic::AtomicUsize::new(0);
        let build = || async {
            builds.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ()>(Redactor::for_keys(&store, ["openai"]))
        };
        // A counter of its own: other tests write secrets meanwhile.
        static CHANGES: AtomicU64 = AtomicU64::new(0);
        let changes = || CHANGES.load(Ordering::SeqCst);
        let redactors = Redactors::counting(Duration::from_secs(3600), changes);
        let first = redactors.get(build()).await;
        let again = redactors.get(build()).await;
        assert!(Arc::ptr_eq(&first, &again), "kept while nothing changed");
        assert_eq!(builds.load(Ordering::SeqCst), 1);

        // A new key is redacted by the next one asked for.
        let new_key = "open sesame 42";
        store.set("openai", &Secret::new(new_key)).unwrap();
        CHANGES.fetch_add(1, Ordering::SeqCst);
        let after = redactors.get(build()).await;
        assert!(!Arc::ptr_eq(&first, &after));
        assert_eq!(after.apply(&format!("x{new_key}x")), "x[REDACTED]x");

        // A failed build (after a change) is not kept, and leaves the key patterns in
        // force.
        CHANGES.fetch_add(1, Ordering::SeqCst);
        let failed = redactors.get(async { Err::<Redactor, _>(()) }).await;
        assert_eq!(failed.apply("sk-proj-abcdefghijklmnop1234"), "[REDACTED]");
        assert_eq!(
            failed.apply(&format!("x{new_key}x")),
            format!("x{new_key}x")
        );
        let rebuilt = redactors.get(build()).await;
        assert_eq!(rebuilt.apply(&format!("x{new_key}x")), "x[REDACTED]x");

        // Past its age, built again even when nothing changed here.
        let brief = Redactors::counting(Duration::ZERO, changes);
        let one = brief.get(build()).await;
        let two = brief.get(build()).await;
        assert!(!Arc::ptr_eq(&one, &two));
    }

    #[test]
    fn writing_or_removing_a_secret_is_counted() {
        use crate::secrets::{MemoryStore, Secret, changes};
        let store = MemoryStore::new();
        let before = changes();
        store.set("openai", &Secret::new(SENTINEL)).unwrap();
        let set = changes();
        assert!(set > before);
        store.delete("openai").unwrap();
        assert!(changes() > set);
    }
}
