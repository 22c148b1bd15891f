//! Signing in to a remote MCP server (OAuth 2.1, as the MCP authorization specification
//! describes it): what the user sets up for a server, and the account the app holds.
//!
//! The tokens themselves never appear here: they live in the OS keychain only. What is
//! stored in SQLite is [`McpOAuth`] (no secret in it: a client secret's value is in the
//! keychain, only the fact that there is one is here); what is shown is [`McpAccount`].

use serde::{Deserialize, Serialize};

/// How the app signs in to an HTTP server that asks for it. Most servers need nothing
/// here: the app finds the server's authorization server and registers itself there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpOAuth {
    /// A client id registered with the authorization server beforehand, for servers
    /// that do not let apps register themselves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Whether a client secret paired with `client_id` is kept in the OS keychain.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_secret: bool,
    /// The scopes to ask for; when empty, those the server names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The `https` address of a Client ID Metadata Document describing this app, used
    /// as its client id by authorization servers that accept one (instead of
    /// registering).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
}

impl McpOAuth {
    /// Whether nothing is set (the usual case).
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }

    /// Why these settings cannot be saved, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.client_secret && self.client_id.is_none() {
            return Err("a client secret needs the client id it was issued with".into());
        }
        if let Some(id) = &self.client_id
            && (id.trim().is_empty() || id.len() > 512 || id.chars().any(char::is_control))
        {
            return Err("a client id is 1 to 512 printable characters".into());
        }
        if let Some(url) = &self.client_metadata_url {
            let path = url
                .strip_prefix("https://")
                .and_then(|rest| rest.split_once('/'));
            if !path.is_some_and(|(host, path)| !host.is_empty() && !path.is_empty()) {
                return Err(format!(
                    "{url:?} is not a Client ID Metadata Document's address: it is an \
                     https:// URL with a path"
                ));
            }
        }
        if let Some(bad) = self
            .scopes
            .iter()
            .find(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '"'))
        {
            return Err(format!("{bad:?} is not a scope (one word each)"));
        }
        Ok(())
    }
}

/// The account the app is signed in with at a server, as the Tools page and `art mcp
/// list` show it (no token in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAccount {
    /// The authorization server that issued the tokens (its `issuer`), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The client id the app signed in as.
    pub client_id: String,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// When the current access token expires (ms since the epoch), when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Whether the app can renew the access token without the browser (it holds a
    /// refresh token).
    pub renewable: bool,
    /// A scope the server asked for beyond those granted (signing in again asks for
    /// it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_scope: Option<String>,
}

/// The authorization page of a sign-in under way, as the Tools page shows it while
/// waiting (the address to open by hand when no browser opened).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpSignInPage {
    /// The server being signed in to.
    pub server: String,
    /// The authorization page's address.
    pub address: String,
    /// Why no browser opened, when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_browser: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_before_they_are_kept() {
        assert!(McpOAuth::default().check().is_ok());
        let secret_alone = McpOAuth {
            client_secret: true,
            ..McpOAuth::default()
        };
        assert!(secret_alone.check().unwrap_err().contains("client id"));
        for bad in [
            "http://example.com/client.json",
            "https://example.com",
            "https:///x",
        ] {
            let cimd = McpOAuth {
                client_metadata_url: Some(bad.into()),
                ..McpOAuth::default()
            };
            assert!(cimd.check().is_err(), "{bad}");
        }
        let good = McpOAuth {
            client_id: Some("art-workbench".into()),
            client_secret: true,
            scopes: vec!["repo".into(), "read:user".into()],
            client_metadata_url: Some("https://example.com/oauth/client.json".into()),
        };
        assert!(good.check().is_ok());
        let spaced = McpOAuth {
            scopes: vec!["read write".into()],
            ..McpOAuth::default()
        };
        assert!(spaced.check().is_err());
    }
}
