//! Signing in to remote MCP servers from the Tools page: the sign-in in the browser,
//! its cancellation, signing out.

use serde::{Deserialize, Serialize};

/// Sign in to an MCP server that asks for it: the app opens the authorization page in
/// the system browser (and sends [`MCP_SIGN_IN`](crate::events::MCP_SIGN_IN) with its
/// address, for when no browser opens), waits for the browser to come back (at most
/// five minutes, or until [`CancelMcpSignIn`]), keeps the tokens in the OS keychain
/// and restarts the server. Returns its state, with the account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignInMcpServer {
    /// The server's name.
    pub name: String,
}

/// Stop waiting for the browser of a sign-in under way (nothing is kept from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelMcpSignIn {
    /// The server's name.
    pub name: String,
}

/// Forget the sign-in to an MCP server (its tokens leave the keychain) and restart it;
/// returns its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignOutMcpServer {
    /// The server's name.
    pub name: String,
}
