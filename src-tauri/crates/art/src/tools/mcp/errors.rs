//! What can go wrong with an MCP server, each with what to do about it.

use crate::secrets::SecretError;
use crate::storage::StorageError;

/// Why a server could not be configured, started or used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// A configuration field is not acceptable.
    #[error("{field}: {message}")]
    InvalidConfig {
        /// The field, as the form and the JSON name it.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// No server of that name.
    #[error("there is no MCP server named `{0}`")]
    UnknownServer(String),
    /// The stdio command does not exist on this machine (or on the app's `PATH`).
    #[error("`{command}` not found")]
    CommandNotFound {
        /// The command as configured.
        command: String,
    },
    /// The command exists but could not be started.
    #[error("cannot start `{command}`: {message}")]
    Spawn {
        /// The command as configured.
        command: String,
        /// The operating system's reason.
        message: String,
    },
    /// The stdio server ended before the handshake completed.
    #[error("exited {}{}", exit_text(*.code), .stderr.as_deref().map(|l| format!(": {l}")).unwrap_or_default())]
    Exited {
        /// Its exit code (`None`: killed by a signal).
        code: Option<i32>,
        /// The last line it wrote to stderr.
        stderr: Option<String>,
    },
    /// The HTTP endpoint answered with an error status.
    #[error("{status} from {url}")]
    HttpStatus {
        /// The HTTP status.
        status: u16,
        /// The endpoint.
        url: String,
    },
    /// A stdio server wrote something on stdout that is not an MCP message, and no
    /// handshake followed.
    #[error("the server wrote {line:?} on stdout instead of MCP messages")]
    NotMcp {
        /// The offending line (its start).
        line: String,
    },
    /// Nothing answers at the server's URL.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// What happened, in plain words.
        reason: String,
    },
    /// The server asks to sign in first (OAuth), again (the sign-in expired and could
    /// not be renewed, or was revoked), or for more access than was granted.
    #[error("{url} {reason}")]
    SignInNeeded {
        /// The endpoint.
        url: String,
        /// Why, in plain words (`asks to sign in`, …).
        reason: String,
        /// The scope it asked for, when it named one.
        scope: Option<String>,
    },
    /// Signing in, or renewing a sign-in, failed.
    #[error("signing in to {url}: {reason}")]
    SignIn {
        /// The endpoint.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The server went away while we were talking to it (a crash, a restart, a closed
    /// connection): noticed at once, not when a call times out.
    #[error("the MCP server at {url} went away: {reason}")]
    Gone {
        /// The endpoint.
        url: String,
        /// What happened, in plain words.
        reason: String,
    },
    /// The server did not complete the handshake or answer in time.
    #[error("{what} did not finish within {secs} s")]
    Timeout {
        /// What was waited for (`the handshake`, `tools/list`, a call).
        what: String,
        /// The limit.
        secs: u64,
    },
    /// The connection or the protocol failed (closed stream, malformed JSON-RPC…).
    #[error("{0}")]
    Protocol(String),
    /// The server answered a request (a prompt, a resource) with an error.
    #[error("{what}: the server answered with an error: {message}")]
    Refused {
        /// What was asked (`prompt \`x\` of \`server\``).
        what: String,
        /// What it said.
        message: String,
    },
    /// The server is not running (disabled, failed or stopped).
    #[error("MCP server `{0}` is not running")]
    NotRunning(String),
    /// A header value could not be kept in or read from the keychain.
    #[error(transparent)]
    Keychain(#[from] SecretError),
    /// The configuration could not be stored or read.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

fn exit_text(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("with code {code}"),
        None => "(killed by a signal)".to_owned(),
    }
}

impl McpError {
    /// What the user can do about it, when there is something specific.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::CommandNotFound { command } => Some(install_hint(command)),
            Self::HttpStatus {
                status: 401 | 403, ..
            } => Some("check the token in the server's headers".to_owned()),
            Self::SignInNeeded { .. } => {
                Some("sign in on the Tools page (or `art mcp login <server>`)".to_owned())
            }
            Self::HttpStatus { status: 404, .. } => {
                Some("check the URL: the MCP endpoint is often `/mcp`".to_owned())
            }
            Self::Exited { .. } => Some(
                "run the command in a terminal to see why it stops; its last output is below"
                    .to_owned(),
            ),
            Self::Timeout { .. } => Some("check that the server is up and answering".to_owned()),
            Self::NotMcp { .. } => Some(
                "check the command and its arguments: an MCP server over stdio writes only \
                 JSON-RPC messages on stdout (logs go to stderr)"
                    .to_owned(),
            ),
            Self::Unreachable { .. } => Some(
                "is the server running, and at this URL (host, port and path such as `/mcp`)?"
                    .to_owned(),
            ),
            Self::Gone { .. } => Some(
                "check that the server is still running, then use Test to reconnect".to_owned(),
            ),
            Self::NotRunning(_) => {
                Some("enable the server on the Tools page (or `art mcp list`)".to_owned())
            }
            _ => None,
        }
    }
}

/// What to install for a missing command, for the launchers servers are usually run with.
fn install_hint(command: &str) -> String {
    let program = std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command);
    let what = match program {
        "npx" | "node" | "npm" => "install Node.js (it brings `npx`)",
        "uvx" | "uv" => "install uv (it brings `uvx`): https://docs.astral.sh/uv/",
        "python" | "python3" | "pip" => "install Python 3",
        "docker" => "install Docker",
        _ => "install it, or check the command's spelling",
    };
    format!(
        "{what}; a desktop app does not see your shell's PATH, so you may need the full path \
         (e.g. `/usr/local/bin/{program}`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_happened_and_hints_what_to_do() {
        let missing = McpError::CommandNotFound {
            command: "/opt/bin/npx".into(),
        };
        assert_eq!(missing.to_string(), "`/opt/bin/npx` not found");
        assert!(missing.hint().unwrap().starts_with("install Node.js"));
        let exited = McpError::Exited {
            code: Some(1),
            stderr: Some("Error: boom".into()),
        };
        assert_eq!(exited.to_string(), "exited with code 1: Error: boom");
        let denied = McpError::HttpStatus {
            status: 401,
            url: "http://h/mcp".into(),
        };
        assert_eq!(denied.to_string(), "401 from http://h/mcp");
        assert!(denied.hint().unwrap().contains("token"));
    }
}
