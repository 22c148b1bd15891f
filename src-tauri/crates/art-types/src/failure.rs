//! Why an LLM call, a provider or a run failed: [`FailureCode`], one list of stable codes
//! used by the adapters that detect a failure, the agent that records it, the stored
//! observations and exports that keep it, and the UI that explains it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares [`FailureCode`] with its wire strings, once.
macro_rules! failure_codes {
    ($($(#[doc = $doc:literal])* $variant:ident = $wire:literal,)*) => {
        /// A stable failure code, `SCREAMING_SNAKE` on the wire (a plain JSON string, as
        /// stored in observations and exports). A code this build does not know (written by
        /// a newer one, or imported) reads as [`FailureCode::Other`] and is kept as it was.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum FailureCode {
            $($(#[doc = $doc])* $variant,)*
            /// A code this build does not know, kept as written.
            Other(String),
        }

        impl FailureCode {
            /// Every code this build knows.
            pub const KNOWN: &'static [FailureCode] = &[$(Self::$variant),*];

            /// The wire form, e.g. `RATE_LIMITED`.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)*
                    Self::Other(code) => code,
                }
            }

            /// The code written `wire`; [`FailureCode::Other`] when unknown.
            pub fn parse(wire: &str) -> Self {
                match wire {
                    $($wire => Self::$variant,)*
                    other => Self::Other(other.to_owned()),
                }
            }
        }
    };
}

failure_codes! {
    // The HTTP layer, shared by every provider.
    /// The HTTP client could not be built (TLS set-up).
    HttpClient = "HTTP_CLIENT",
    /// Nothing answers at the base URL.
    ConnectionFailed = "CONNECTION_FAILED",
    /// The request failed on the way (network trouble).
    HttpError = "HTTP_ERROR",
    /// The provider went silent mid-stream for longer than the idle timeout.
    IdleTimeout = "IDLE_TIMEOUT",
    /// The stream broke off before its end.
    StreamInterrupted = "STREAM_INTERRUPTED",
    /// The stream carried something that is not the protocol.
    MalformedStream = "MALFORMED_STREAM",
    /// A reply that is not what the endpoint returns (a model list, say).
    UnexpectedResponse = "UNEXPECTED_RESPONSE",
    // What providers answer.
    /// 401 / 403: the key is wrong, revoked or lacks access.
    AuthenticationFailed = "AUTHENTICATION_FAILED",
    /// 429: too many requests for now.
    RateLimited = "RATE_LIMITED",
    /// The account's quota or credit is used up.
    QuotaExhausted = "QUOTA_EXHAUSTED",
    /// The prompt is longer than the model's context.
    ContextLengthExceeded = "CONTEXT_LENGTH_EXCEEDED",
    /// 404: no such model or endpoint.
    NotFound = "NOT_FOUND",
    /// A 5xx: the provider is down or struggling.
    ProviderUnavailable = "PROVIDER_UNAVAILABLE",
    /// Anthropic's `overloaded_error`.
    ProviderOverloaded = "PROVIDER_OVERLOADED",
    /// Any other refusal of the request (a 4xx).
    RequestRejected = "REQUEST_REJECTED",
    /// The model or its server does not take tools natively (Ollama's "does not
    /// support tools", llama.cpp without `--jinja`, vLLM without auto tool choice): the
    /// agent asks in the text form instead.
    ToolsUnsupported = "TOOLS_UNSUPPORTED",
    /// The model or its server refused the question's images (llama.cpp's "image input
    /// is not supported" without its `--mmproj`, a model without vision): a refusal,
    /// not an outage, so never retried.
    ImagesUnsupported = "IMAGES_UNSUPPORTED",
    /// An error event inside an otherwise good stream.
    ProviderStreamError = "PROVIDER_STREAM_ERROR",
    /// Gemini blocked the prompt (safety).
    PromptBlocked = "PROMPT_BLOCKED",
    /// Gemini does not know the model.
    InvalidModel = "INVALID_MODEL",
    /// Ollama is not running at its base URL.
    OllamaNotRunning = "OLLAMA_NOT_RUNNING",
    /// Ollama answered with an error line.
    OllamaError = "OLLAMA_ERROR",
    /// A provider failed without saying more (scripted test providers).
    LlmProviderError = "LLM_PROVIDER_ERROR",
    // Choosing and configuring a provider.
    /// No provider has the thread's provider name.
    UnknownProvider = "UNKNOWN_PROVIDER",
    /// The thread has no provider or model chosen.
    ProviderNotConfigured = "PROVIDER_NOT_CONFIGURED",
    /// The base URL is not an http(s) URL.
    InvalidBaseUrl = "INVALID_BASE_URL",
    /// The provider needs an API key and none is set.
    ApiKeyMissing = "API_KEY_MISSING",
    /// The OS keychain cannot be reached to read the key.
    KeychainUnavailable = "KEYCHAIN_UNAVAILABLE",
    /// The OS keychain failed otherwise.
    KeychainError = "KEYCHAIN_ERROR",
    /// The local provider is serving another model and stayed busy.
    LocalInstanceBusy = "LOCAL_INSTANCE_BUSY",
    /// Another local provider holds the local slot.
    LocalProviderConflict = "LOCAL_PROVIDER_CONFLICT",
    /// Waited too long for one of the provider's parallel-call slots.
    ApiQueueTimeout = "API_QUEUE_TIMEOUT",
    // The agent's run.
    /// The prompt built for the model is invalid (no messages, say).
    InvalidPrompt = "INVALID_PROMPT",
    /// The planning output could not be read as a plan (the run goes on without one).
    PlanningOutputUnparseable = "PLANNING_OUTPUT_UNPARSEABLE",
    /// The user or the app stopped the run.
    Cancelled = "CANCELLED",
    /// An attachment cannot go to this model (an image for a model without vision,
    /// bytes gone from the store): refused before anything was sent.
    AttachmentRefused = "ATTACHMENT_REFUSED",
    /// The question's documents are longer than the model's window: refused before
    /// anything was sent (never cut), with the offer to add them to the thread's
    /// knowledge instead.
    DocumentTooLong = "DOCUMENT_TOO_LONG",
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FailureCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Self::parse(&wire))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_code_reads_back_as_itself_in_its_stored_form() {
        let mut seen = HashSet::new();
        for code in FailureCode::KNOWN {
            let wire = code.as_str();
            assert!(seen.insert(wire), "{wire} twice");
            assert!(
                wire.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                "{wire}"
            );
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(wire.to_owned()));
            assert_eq!(&serde_json::from_value::<FailureCode>(json).unwrap(), code);
            assert_eq!(&FailureCode::parse(wire), code);
            assert_eq!(code.to_string(), wire);
        }
    }

    #[test]
    fn an_unknown_code_is_kept_as_written() {
        let code: FailureCode = serde_json::from_str(r#""SOMETHING_NEW""#).unwrap();
        assert_eq!(code, FailureCode::Other("SOMETHING_NEW".into()));
        assert_eq!(serde_json::to_string(&code).unwrap(), r#""SOMETHING_NEW""#);
        assert!(serde_json::from_str::<FailureCode>("5").is_err());
    }
}
