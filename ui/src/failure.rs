//! A failure as the user reads it, whatever it came from — a command the page called
//! (`IpcError`) or a run (`FailureCode`): what happened in plain words, the message that
//! says why, what to do next, and the code for reference. Pure, unit-tested natively;
//! `components::error_card::ErrorCard` is the one way every view shows one.

use art_types::{ErrorCode, FailureCode, IpcError};
use serde_json::Value;

/// One failure, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// What happened, in a few plain words ("Ollama is not running").
    pub headline: &'static str,
    /// Why, in the words of the part that failed.
    pub message: String,
    /// What to do next, when there is something to say the message does not say.
    pub todo: Option<String>,
    /// The stable code, for reference and for reports.
    pub code: String,
    /// What else is known (a path, a field), pretty-printed.
    pub details: Option<String>,
}

impl Failure {
    /// A command's error. A provider's error (`Provider`, its `FailureCode` in
    /// `details.code`) reads as the run's would; a keychain error's `details.hint` is
    /// what to do.
    pub fn of_call(error: &IpcError) -> Self {
        let message = error.message.clone();
        if error.code == ErrorCode::Provider
            && let Some(code) = error.details.get("code").and_then(Value::as_str)
        {
            return Self::of_run(&FailureCode::parse(code), &message);
        }
        let (headline, todo) = match error.code {
            ErrorCode::DataDirUnavailable => (
                "The data folder cannot be used",
                Some(
                    "Check that the folder exists and can be written to, or start the app with --data-dir pointing elsewhere.",
                ),
            ),
            ErrorCode::KeychainUnavailable => (
                "The system keychain is not available",
                Some(
                    "Unlock the keychain (or start one, such as GNOME Keyring), or set the provider's <PROVIDER>_API_KEY variable before starting the app.",
                ),
            ),
            ErrorCode::InvalidInput => ("That was not accepted", None),
            ErrorCode::NotFound => (
                "Not found",
                Some("It may have been deleted or renamed meanwhile: look again."),
            ),
            ErrorCode::Storage => (
                "The database failed",
                Some("Check the free disk space; the app's log has the details."),
            ),
            ErrorCode::FileWrite => (
                "The file could not be written",
                Some("Choose another folder, or free some space, and try again."),
            ),
            ErrorCode::Provider => ("The provider failed", None),
            ErrorCode::Attachment => ("The file was not attached", None),
            ErrorCode::Knowledge => ("The knowledge request was refused", None),
            ErrorCode::Models => ("Ollama could not do that", None),
            ErrorCode::McpSignIn => (
                "The sign-in did not complete",
                Some("Nothing was kept from it; sign in again when ready."),
            ),
            ErrorCode::Mcp => (
                "The MCP server could not do that",
                Some("Its state and last output are on the Tools page."),
            ),
            ErrorCode::IpcFailure | ErrorCode::Internal => (
                "Something went wrong inside the app",
                Some(
                    "Try again; if it happens again, please report it with the code and details below.",
                ),
            ),
        };
        let hint = error.details.get("hint").and_then(Value::as_str);
        let details = match &error.details {
            Value::Null => None,
            Value::Object(map) if map.is_empty() => None,
            other => {
                Some(serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()))
            }
        };
        Self {
            headline,
            message,
            todo: hint.map(str::to_owned).or(todo.map(str::to_owned)),
            code: error.code.as_str().to_owned(),
            details,
        }
    }

    /// Why a run (or a provider call) failed.
    pub fn of_run(code: &FailureCode, message: &str) -> Self {
        let (headline, todo) = match code {
            FailureCode::OllamaNotRunning => (
                "Ollama is not running",
                "Start Ollama with `ollama serve` (or open the Ollama app), then try again.",
            ),
            FailureCode::ApiKeyMissing => {
                ("No API key", "Add the provider's API key under Providers.")
            }
            FailureCode::AuthenticationFailed => (
                "The provider refused the API key",
                "Check the API key under Providers.",
            ),
            FailureCode::RateLimited => (
                "The provider is rate-limiting",
                "Wait a moment and try again.",
            ),
            FailureCode::QuotaExhausted => (
                "The account's quota is used up",
                "Check the billing with the provider.",
            ),
            FailureCode::ContextLengthExceeded => (
                "Too long for the model",
                "Lower the history limit in the thread's settings, or start a new thread.",
            ),
            FailureCode::NotFound | FailureCode::InvalidModel => (
                "The model was not found",
                "Check the model name in the thread's settings (for Ollama: `ollama pull <model>`).",
            ),
            FailureCode::ToolsUnsupported => (
                "The model's server does not take tools",
                "Set Tool calling to \u{201c}Described in the prompt\u{201d} in the thread's settings.",
            ),
            FailureCode::IdleTimeout
            | FailureCode::StreamInterrupted
            | FailureCode::ProviderUnavailable
            | FailureCode::ProviderOverloaded => {
                ("The provider stopped answering", "Try again in a moment.")
            }
            FailureCode::ConnectionFailed => (
                "The provider cannot be reached",
                "Check the network, and the base URL in the thread's settings.",
            ),
            FailureCode::KeychainUnavailable => (
                "The system keychain is not available",
                "Unlock the keychain, or set the provider's <PROVIDER>_API_KEY variable.",
            ),
            FailureCode::DocumentTooLong => (
                "The document is longer than the model reads",
                "Add it to the thread's knowledge with the button under the question: the agent then searches it. Or choose a model with a larger window and retry.",
            ),
            FailureCode::ImagesUnsupported => (
                "The model does not take images",
                "Choose a model with vision in the thread's settings (a llama.cpp server needs the model's --mmproj), or ask without the image.",
            ),
            FailureCode::AttachmentRefused => (
                "An attachment cannot go to this model",
                "Choose another model in the thread's settings and retry, or edit the question without it.",
            ),
            _ => ("The run failed", ""),
        };
        // The message may already say what to do.
        let said = match code {
            FailureCode::OllamaNotRunning => message.contains("ollama serve"),
            _ => false,
        };
        Self {
            headline,
            message: message.to_owned(),
            todo: (!todo.is_empty() && !said).then(|| todo.to_owned()),
            code: code.to_string(),
            details: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_run_failure_says_what_to_do_once() {
        let code = FailureCode::OllamaNotRunning;
        let failure = Failure::of_run(&code, "Ollama is not reachable");
        assert_eq!(failure.headline, "Ollama is not running");
        assert!(failure.todo.unwrap().contains("ollama serve"));
        let said = "Ollama is not reachable: start it with `ollama serve`";
        assert_eq!(Failure::of_run(&code, said).todo, None);
        let other = Failure::of_run(&FailureCode::MalformedStream, "bad bytes");
        assert_eq!((other.message.as_str(), other.todo), ("bad bytes", None));
        assert_eq!(other.code, "MALFORMED_STREAM");
    }

    #[test]
    fn a_call_error_has_plain_words_and_keeps_its_details() {
        let error = IpcError::new(ErrorCode::DataDirUnavailable, "cannot create /x")
            .with_details(json!({ "path": "/x" }));
        let failure = Failure::of_call(&error);
        assert_eq!(failure.headline, "The data folder cannot be used");
        assert_eq!(failure.code, "DATA_DIR_UNAVAILABLE");
        assert!(failure.details.unwrap().contains("\"/x\""));
        // A keychain's own hint wins over the generic advice.
        let locked = IpcError::new(ErrorCode::KeychainUnavailable, "locked")
            .with_details(json!({ "hint": "unlock it" }));
        assert_eq!(Failure::of_call(&locked).todo.as_deref(), Some("unlock it"));
        // A provider's error reads as the run's would.
        let provider = IpcError::new(ErrorCode::Provider, "401 from openai")
            .with_details(json!({ "class": "auth", "code": "AUTHENTICATION_FAILED" }));
        let failure = Failure::of_call(&provider);
        assert_eq!(failure.headline, "The provider refused the API key");
        assert_eq!(failure.code, "AUTHENTICATION_FAILED");
        // Every code has plain words.
        for code in ErrorCode::ALL {
            let failure = Failure::of_call(&IpcError::new(*code, "why"));
            assert!(!failure.headline.is_empty() && failure.message == "why");
        }
    }
}
