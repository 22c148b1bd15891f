//! Configuration signatures: adapters are cached per signature. A secret takes part as
//! a SHA-256 digest, never as itself, so two configurations that differ only by API key
//! get different adapters (ART masked keys and reused the wrong one) and nothing
//! printable holds the key.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::secrets::Secret;

/// Identity of an adapter configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signature(String);

impl Signature {
    /// Signature of provider + model + merged options + (digest of) the secret.
    pub fn of(
        provider: &str,
        model: &str,
        options: &Map<String, Value>,
        secret: Option<&Secret>,
    ) -> Self {
        let mut hasher = Sha256::new();
        for part in [provider, "\u{0}", model, "\u{0}"] {
            hasher.update(part.as_bytes());
        }
        // serde_json maps are ordered by key, so the text is canonical.
        hasher.update(Value::Object(options.clone()).to_string().as_bytes());
        hasher.update(b"\x00");
        if let Some(secret) = secret {
            hasher.update(Sha256::digest(secret.expose().as_bytes()));
        }
        let digest = hasher.finalize();
        Self(digest.iter().map(|b| format!("{b:02x}")).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_the_signature_but_never_appear_in_it() {
        let options = Map::new();
        let a = Signature::of(
            "openai",
            "gpt",
            &options,
            Some(&Secret::new("sk-SENTINEL-A")),
        );
        let b = Signature::of(
            "openai",
            "gpt",
            &options,
            Some(&Secret::new("sk-SENTINEL-B")),
        );
        let none = Signature::of("openai", "gpt", &options, None);
        assert_ne!(a, b);
        assert_ne!(a, none);
        assert_eq!(
            a,
            Signature::of(
                "openai",
                "gpt",
                &options,
                Some(&Secret::new("sk-SENTINEL-A"))
            )
        );
        assert!(!format!("{a:?}").contains("SENTINEL"));
    }

    #[test]
    fn options_and_model_change_the_signature() {
        let mut options = Map::new();
        let plain = Signature::of("ollama", "llama", &options, None);
        options.insert("num_ctx".into(), 8192.into());
        assert_ne!(plain, Signature::of("ollama", "llama", &options, None));
        assert_ne!(plain, Signature::of("ollama", "qwen", &Map::new(), None));
    }
}
