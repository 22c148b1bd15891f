//! Signing in to a server that asks for it, and out; the account a server's state
//! shows. The sign-in itself is `oauth`'s; here it meets the manager (a server is
//! restarted with its new sign-in).

use std::time::Duration;

use art_types::mcp::{McpServerState, McpServerStatus, McpTransport};
use tokio_util::sync::CancellationToken;

use super::{McpError, McpManager, oauth};

impl McpManager {
    /// `status` with the account the app is signed in with there (read from the
    /// keychain; none when it cannot be read).
    pub(super) async fn with_account(&self, mut status: McpServerStatus) -> McpServerStatus {
        if let McpTransport::Http { url, .. } = &status.config.transport {
            status.account = oauth::signed_in(self.store().secrets(), &status.config.name, url)
                .await
                .ok()
                .flatten();
        }
        status
    }

    /// Sign in to `name` (an HTTP server that asks for it) — for the scope it last
    /// asked for too, if it asked for more — and restart it with the new sign-in.
    /// `show` gets the address to open in the browser; the wait for the browser ends
    /// after `wait` or on `cancel`.
    pub async fn sign_in(
        &self,
        name: &str,
        show: impl FnOnce(&str),
        wait: Duration,
        cancel: CancellationToken,
    ) -> Result<McpServerStatus, McpError> {
        let config = self.store().get(name).await?;
        let McpTransport::Http { url, .. } = &config.transport else {
            return Err(McpError::InvalidConfig {
                field: "transport",
                message: "only HTTP servers are signed in to; a stdio server runs as you".into(),
            });
        };
        let more_scope = match self.status_of(config.clone()).state {
            McpServerState::SignInNeeded { scope, .. } => scope,
            _ => None,
        };
        let request = oauth::SignIn {
            server: name,
            url,
            oauth: &config.oauth,
            more_scope: more_scope.as_deref(),
        };
        oauth::sign_in(request, self.store().secrets(), show, wait, cancel)
            .await
            .map_err(|e| McpError::SignIn {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        self.start(name).await
    }

    /// The tokens and client secrets of every server's sign-in, for exports to redact
    /// (none when the keychain cannot be read: the key patterns still apply).
    pub async fn sign_in_secrets(&self) -> Vec<String> {
        let Ok(configs) = self.store().list().await else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for config in configs {
            if matches!(config.transport, McpTransport::Http { .. }) {
                found.extend(oauth::secrets_of(self.store().secrets(), &config.name).await);
            }
        }
        found
    }

    /// Forget the sign-in to `name` and restart it (it then asks to sign in again).
    pub async fn sign_out(&self, name: &str) -> Result<McpServerStatus, McpError> {
        let config = self.store().get(name).await?;
        oauth::sign_out(self.store().secrets(), &config.name)
            .await
            .map_err(|e| McpError::SignIn {
                url: match &config.transport {
                    McpTransport::Http { url, .. } => url.clone(),
                    McpTransport::Stdio { command, .. } => command.clone(),
                },
                reason: e.to_string(),
            })?;
        self.start(name).await
    }
}
