//! Mapping of `art` errors to the IPC error contract `{code, message, details}`.

use art::context::ContextError;
use art::paths::DataDirError;
use art::reasoning::provider::ProviderError;
use art::secrets::SecretError;
use art::storage::StorageError;
use art::tools::mcp::McpError;
use art_types::{ErrorCode, IpcError};

/// `Ok` when `ok`, else an `INVALID_INPUT` error naming `field`.
pub fn require(ok: bool, field: &str, message: impl Into<String>) -> Result<(), IpcError> {
    match ok {
        true => Ok(()),
        false => Err(IpcError::new(ErrorCode::InvalidInput, message)
            .with_details(serde_json::json!({ "field": field }))),
    }
}

/// Threads, messages and state.
pub fn context_error(err: ContextError) -> IpcError {
    match err {
        ContextError::ThreadNotFound(id) => IpcError::new(
            ErrorCode::NotFound,
            "that thread does not exist (it may have been deleted)",
        )
        .with_details(serde_json::json!({ "threadId": id })),
        ContextError::MessageNotFound(id) => IpcError::new(
            ErrorCode::NotFound,
            "that message is not in this thread (it may have been deleted)",
        )
        .with_details(serde_json::json!({ "field": "messageId", "messageId": id })),
        ContextError::InvalidInput(message) => IpcError::new(ErrorCode::InvalidInput, message),
        ContextError::InvalidField { field, message } => {
            IpcError::new(ErrorCode::InvalidInput, message)
                .with_details(serde_json::json!({ "field": field }))
        }
        ContextError::Storage(e) => storage_error(e),
    }
}

/// A storage failure: a bad search query is the user's to fix, the rest is ours.
pub fn storage_error(err: StorageError) -> IpcError {
    match err {
        StorageError::InvalidSearch(message) => IpcError::new(ErrorCode::InvalidInput, message)
            .with_details(serde_json::json!({ "field": "query" })),
        other => IpcError::new(ErrorCode::Storage, other.to_string()),
    }
}

/// A provider call (model list, test); the provider's class and code go in `details`.
pub fn provider_error(err: ProviderError) -> IpcError {
    IpcError::new(ErrorCode::Provider, err.message.clone())
        .with_details(serde_json::json!({ "class": err.class, "code": err.code }))
}

/// A keychain failure, saying that the key was stored nowhere else.
pub fn secret_error(err: SecretError) -> IpcError {
    match err {
        SecretError::Unavailable { reason, hint } => IpcError::new(
            ErrorCode::KeychainUnavailable,
            format!("the OS keychain is unavailable ({reason}); the key was not stored anywhere"),
        )
        .with_details(serde_json::json!({ "hint": hint })),
        SecretError::InvalidName(_) => IpcError::new(ErrorCode::InvalidInput, err.to_string()),
        other => IpcError::new(ErrorCode::KeychainUnavailable, other.to_string()),
    }
}

/// The data directory cannot be used.
pub fn data_dir_error(err: DataDirError) -> IpcError {
    let path = match &err {
        DataDirError::Create { path, .. } | DataDirError::NotAbsolute(path) => {
            Some(path.display().to_string())
        }
        DataDirError::NoOsDataDir => None,
    };
    IpcError::new(ErrorCode::DataDirUnavailable, err.to_string())
        .with_details(serde_json::json!({ "path": path, "env": art::paths::DATA_DIR_ENV }))
}

/// An MCP server's configuration or storage: a bad field names itself; failures to
/// start are not errors of a command but the server's state.
pub fn mcp_error(err: McpError) -> IpcError {
    match err {
        McpError::InvalidConfig { field, message } => {
            IpcError::new(ErrorCode::InvalidInput, format!("{field}: {message}"))
                .with_details(serde_json::json!({ "field": field }))
        }
        McpError::UnknownServer(name) => IpcError::new(
            ErrorCode::NotFound,
            format!("there is no MCP server named `{name}`"),
        ),
        McpError::Keychain(e) => secret_error(e),
        sign_in @ McpError::SignIn { .. } => {
            IpcError::new(ErrorCode::McpSignIn, sign_in.to_string())
        }
        McpError::Storage(e) => storage_error(e),
        e @ (McpError::Refused { .. }
        | McpError::NotRunning(_)
        | McpError::Timeout { .. }
        | McpError::Gone { .. }) => {
            let error = IpcError::new(ErrorCode::Mcp, e.to_string());
            match e.hint() {
                Some(hint) => error.with_details(serde_json::json!({ "hint": hint })),
                None => error,
            }
        }
        other => IpcError::new(ErrorCode::Internal, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_errors_carry_code_path_and_the_override_variable() {
        let err = data_dir_error(DataDirError::NotAbsolute("rel".into()));
        assert_eq!(err.code, ErrorCode::DataDirUnavailable);
        assert_eq!(err.details["path"], "rel");
        assert_eq!(err.details["env"], "ART_WORKBENCH_DATA_DIR");
        assert!(err.message.contains("absolute"));
    }
}
