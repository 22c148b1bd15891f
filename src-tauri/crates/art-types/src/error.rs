//! The error contract across IPC: `{code, message, details}` with stable codes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Stable, machine-readable error codes (SCREAMING_SNAKE on the wire). The UI decides
/// what to show from the code; the message is for people; codes never change meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The data directory could not be created or written.
    DataDirUnavailable,
    /// The OS keychain could not be reached.
    KeychainUnavailable,
    /// A command payload failed validation.
    InvalidInput,
    /// The IPC call itself failed (unknown command, payload not decodable, ...).
    IpcFailure,
    /// The thread, run or provider named does not exist.
    NotFound,
    /// The database failed.
    Storage,
    /// A file the user chose could not be written (an export: disk full, no permission).
    FileWrite,
    /// A provider call failed; `details` carries its `class` and `code`.
    Provider,
    /// A file could not be attached; `details` is the
    /// [`AttachmentProblem`](crate::attachment::AttachmentProblem).
    Attachment,
    /// A knowledge request was refused; `details` is the
    /// [`KnowledgeProblem`](crate::knowledge::KnowledgeProblem).
    Knowledge,
    /// A request about local models failed; `details` is the
    /// [`ModelsProblem`](crate::models::ModelsProblem).
    Models,
    /// Signing in to an MCP server did not complete (denied, cancelled, the browser
    /// did not come back, the authorization server refused or could not be reached);
    /// the message says which and what to do. Nothing was kept from it.
    McpSignIn,
    /// An MCP server could not do what was asked of it (it is not running, it answered
    /// with an error, it did not answer in time); the message says which, in its words.
    Mcp,
    /// Anything else; `details` carries what is known.
    Internal,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: &'static [ErrorCode] = &[
        Self::DataDirUnavailable,
        Self::KeychainUnavailable,
        Self::InvalidInput,
        Self::IpcFailure,
        Self::NotFound,
        Self::Storage,
        Self::FileWrite,
        Self::Provider,
        Self::Attachment,
        Self::Knowledge,
        Self::Models,
        Self::McpSignIn,
        Self::Mcp,
        Self::Internal,
    ];

    /// The wire form, e.g. `DATA_DIR_UNAVAILABLE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DataDirUnavailable => "DATA_DIR_UNAVAILABLE",
            Self::KeychainUnavailable => "KEYCHAIN_UNAVAILABLE",
            Self::InvalidInput => "INVALID_INPUT",
            Self::IpcFailure => "IPC_FAILURE",
            Self::NotFound => "NOT_FOUND",
            Self::Storage => "STORAGE",
            Self::FileWrite => "FILE_WRITE",
            Self::Provider => "PROVIDER",
            Self::Attachment => "ATTACHMENT",
            Self::Knowledge => "KNOWLEDGE",
            Self::Models => "MODELS",
            Self::McpSignIn => "MCP_SIGN_IN",
            Self::Mcp => "MCP",
            Self::Internal => "INTERNAL",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as it crosses IPC: every failed command rejects with this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpcError {
    /// Stable code.
    pub code: ErrorCode,
    /// One sentence for people, saying what happened and, where possible, what to do.
    pub message: String,
    /// Structured extra facts (paths, limits, the offending field); `null` when none.
    #[serde(default)]
    pub details: serde_json::Value,
}

impl IpcError {
    /// An error without details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: serde_json::Value::Null,
        }
    }

    /// Attach structured details.
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = details;
        self
    }
}

impl fmt::Display for IpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for IpcError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shape_is_code_message_details() {
        let err = IpcError::new(ErrorCode::DataDirUnavailable, "cannot create /x")
            .with_details(serde_json::json!({"path": "/x"}));
        let json = serde_json::to_value(&err).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "code": "DATA_DIR_UNAVAILABLE",
                "message": "cannot create /x",
                "details": {"path": "/x"}
            })
        );
    }

    #[test]
    fn serde_name_and_as_str_agree_for_every_code() {
        for &code in ErrorCode::ALL {
            // Exhaustive: a new variant stops this compiling until it is listed here, and
            // the count below then asks for it in ALL too.
            match code {
                ErrorCode::DataDirUnavailable
                | ErrorCode::KeychainUnavailable
                | ErrorCode::InvalidInput
                | ErrorCode::IpcFailure
                | ErrorCode::NotFound
                | ErrorCode::Storage
                | ErrorCode::FileWrite
                | ErrorCode::Provider
                | ErrorCode::Attachment
                | ErrorCode::Knowledge
                | ErrorCode::Models
                | ErrorCode::McpSignIn
                | ErrorCode::Mcp
                | ErrorCode::Internal => {}
            }
            let wire = serde_json::to_value(code).unwrap();
            assert_eq!(wire, serde_json::Value::String(code.as_str().to_owned()));
            assert_eq!(serde_json::from_value::<ErrorCode>(wire).unwrap(), code);
        }
        assert_eq!(ErrorCode::ALL.len(), 14);
    }

    #[test]
    fn missing_details_decode_as_null() {
        let err: IpcError =
            serde_json::from_str(r#"{"code":"INTERNAL","message":"boom"}"#).unwrap();
        assert_eq!(err.details, serde_json::Value::Null);
        assert_eq!(err.to_string(), "INTERNAL: boom");
    }
}
