//! The servers the user added: configuration in SQLite; HTTP header values and secret
//! environment variables in the OS keychain (accounts `mcp:<server>:<header>` and
//! `mcp:<server>:env:<NAME>`), never in the database; so are a sign-in's tokens and a
//! client secret the user gave for it (`mcp:<server>:oauth`,
//! `mcp:<server>:oauth:client-secret`, see [`super::oauth`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use art_types::mcp::{McpServerConfig, McpTransport, check_server_name, keeps_in_keychain};

use super::{McpError, oauth};
use crate::clock;
use crate::secrets::{Secret, SecretError, SecretStore};
use crate::storage::{self, Collection, Query, Record, StorageAdapter};

/// Longest call timeout a server may be given, in seconds.
pub const MAX_TIMEOUT_SECS: u32 = 3_600;

/// Configured MCP servers.
pub struct McpStore {
    storage: Arc<dyn StorageAdapter>,
    secrets: Arc<dyn SecretStore>,
}

fn invalid(field: &'static str, message: impl Into<String>) -> McpError {
    McpError::InvalidConfig {
        field,
        message: message.into(),
    }
}

fn account(server: &str, header: &str) -> String {
    format!("mcp:{server}:{}", header.to_ascii_lowercase())
}

/// A secret environment variable's account (a header name cannot hold `:`).
fn env_account(server: &str, variable: &str) -> String {
    format!("mcp:{server}:env:{variable}")
}

/// Why `config` cannot be saved, if it cannot.
pub fn validate(config: &McpServerConfig) -> Result<(), McpError> {
    check_server_name(&config.name).map_err(|m| invalid("name", m))?;
    config.oauth.check().map_err(|m| invalid("oauth", m))?;
    if !(1..=MAX_TIMEOUT_SECS).contains(&config.timeout_secs) {
        return Err(invalid(
            "timeoutSecs",
            format!("a call timeout is 1 to {MAX_TIMEOUT_SECS} seconds"),
        ));
    }
    if config.result_limit < 100 {
        return Err(invalid(
            "resultLimit",
            "give the model at least 100 characters of a result",
        ));
    }
    match &config.transport {
        McpTransport::Stdio {
            command,
            env,
            secret_env,
            ..
        } => {
            if command.trim().is_empty() {
                return Err(invalid(
                    "command",
                    "give the command that starts the server",
                ));
            }
            if let Some(bad) = env
                .keys()
                .chain(secret_env)
                .find(|k| k.is_empty() || k.contains(['=', '\0', ':']))
            {
                return Err(invalid("env", format!("{bad:?} is not a variable name")));
            }
        }
        McpTransport::Http { url, headers } => {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| invalid("url", format!("{url:?} is not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(invalid("url", "use an http:// or https:// URL"));
            }
            for (i, name) in headers.iter().enumerate() {
                if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(invalid("headers", format!("{name:?} is not a header name")));
                }
                if headers[..i].iter().any(|h| h.eq_ignore_ascii_case(name)) {
                    return Err(invalid("headers", format!("{name} is listed twice")));
                }
            }
        }
    }
    Ok(())
}

impl McpStore {
    /// Servers stored in `storage`, header values in `secrets`.
    pub fn new(storage: Arc<dyn StorageAdapter>, secrets: Arc<dyn SecretStore>) -> Self {
        Self { storage, secrets }
    }

    /// Every server, by name.
    pub async fn list(&self) -> Result<Vec<McpServerConfig>, McpError> {
        let mut all = self
            .storage
            .query(Collection::McpServers, &Query::default())
            .await?
            .iter()
            .map(|r| r.decode(Collection::McpServers))
            .collect::<Result<Vec<McpServerConfig>, _>>()?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }

    /// One server.
    pub async fn get(&self, name: &str) -> Result<McpServerConfig, McpError> {
        match self.storage.get(Collection::McpServers, name).await? {
            Some(r) => Ok(r.decode(Collection::McpServers)?),
            None => Err(McpError::UnknownServer(name.to_owned())),
        }
    }

    /// Add or replace a server. `header_values` are stored in the keychain (a header
    /// without a new value keeps its stored one), and so are the values of environment
    /// variables that are secrets ([`keeps_in_keychain`]): the database keeps their
    /// names only. Values no longer listed are deleted.
    pub async fn save(
        &self,
        config: &McpServerConfig,
        header_values: &BTreeMap<String, Secret>,
    ) -> Result<(), McpError> {
        validate(config)?;
        let listed = match &config.transport {
            McpTransport::Http { headers, .. } => headers.clone(),
            McpTransport::Stdio { .. } => Vec::new(),
        };
        if let Some(name) = header_values
            .keys()
            .find(|k| !listed.iter().any(|h| h.eq_ignore_ascii_case(k)))
        {
            return Err(invalid(
                "headers",
                format!("{name} has a value but is not listed"),
            ));
        }
        let (old, had_client_secret) = match self.get(&config.name).await {
            Ok(old) => (Some(old.transport), old.oauth.client_secret),
            Err(McpError::UnknownServer(_)) => (None, false),
            Err(e) => return Err(e),
        };
        let mut changes: Vec<(String, Option<Secret>)> = header_values
            .iter()
            .map(|(name, value)| (account(&config.name, name), Some(value.clone())))
            .collect();
        if let Some(McpTransport::Http { headers, .. }) = &old {
            changes.extend(
                headers
                    .iter()
                    .filter(|h| !listed.iter().any(|l| l.eq_ignore_ascii_case(h)))
                    .map(|gone| (account(&config.name, gone), None)),
            );
        }
        let mut stored = config.clone();
        if let McpTransport::Stdio {
            env, secret_env, ..
        } = &mut stored.transport
        {
            // A reference (`${env:NAME}`) holds no secret: it stays in the configuration.
            let secret: Vec<String> = env
                .iter()
                .filter(|(k, v)| keeps_in_keychain(k, v))
                .map(|(k, _)| k.clone())
                .collect();
            for name in secret {
                let value = env.remove(&name).unwrap_or_default();
                changes.push((env_account(&config.name, &name), Some(Secret::new(value))));
                secret_env.push(name);
            }
            secret_env.sort();
            secret_env.dedup();
            if let Some(McpTransport::Stdio {
                secret_env: before, ..
            }) = &old
            {
                changes.extend(
                    before
                        .iter()
                        .filter(|n| !secret_env.contains(n))
                        .map(|gone| (env_account(&config.name, gone), None)),
                );
            }
        }
        // A client secret no longer wanted leaves the keychain with the setting.
        if had_client_secret && !config.oauth.client_secret {
            changes.push((oauth::client_secret_account(&config.name), None));
        }
        self.keychain(changes).await?;
        let record = Record {
            id: config.name.clone(),
            thread_id: None,
            trace_id: None,
            kind: None,
            timestamp: clock::now_ms(),
            search_text: None,
            body: storage::encode(&stored)?,
            parent: None,
        };
        self.storage
            .set(Collection::McpServers, vec![record])
            .await?;
        Ok(())
    }

    /// Remove a server and its secrets (header and environment values); `false` if
    /// there was none.
    pub async fn remove(&self, name: &str) -> Result<bool, McpError> {
        let config = match self.get(name).await {
            Ok(config) => config,
            Err(McpError::UnknownServer(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        let accounts: Vec<(String, Option<Secret>)> = match &config.transport {
            McpTransport::Http { headers, .. } => {
                headers.iter().map(|h| (account(name, h), None)).collect()
            }
            McpTransport::Stdio { secret_env, .. } => secret_env
                .iter()
                .map(|v| (env_account(name, v), None))
                .collect(),
        };
        self.keychain(accounts).await?;
        // A sign-in may or may not be there. Without a keychain there is none to forget
        // (nothing can have been signed in to while it was missing), so the server goes
        // all the same; its settings' own secrets above could not be left behind.
        let signed_in = [
            oauth::session_account(name),
            oauth::client_secret_account(name),
        ];
        match self
            .keychain(signed_in.into_iter().map(|a| (a, None)).collect())
            .await
        {
            Err(McpError::Keychain(SecretError::Unavailable { reason, .. })) => {
                tracing::info!(
                    server = name,
                    "no sign-in to forget: the OS keychain is unavailable ({reason})"
                );
            }
            other => other?,
        }
        Ok(self.storage.delete(Collection::McpServers, name).await?)
    }

    /// The keychain accounts of every server's secrets (header values, secret
    /// environment variables): what an export must redact.
    pub async fn secret_accounts(&self) -> Result<Vec<String>, McpError> {
        Ok(self
            .list()
            .await?
            .iter()
            .flat_map(|config| match &config.transport {
                McpTransport::Http { headers, .. } => headers
                    .iter()
                    .map(|h| account(&config.name, h))
                    .chain(
                        config
                            .oauth
                            .client_secret
                            .then(|| oauth::client_secret_account(&config.name)),
                    )
                    .collect::<Vec<_>>(),
                McpTransport::Stdio { secret_env, .. } => secret_env
                    .iter()
                    .map(|v| env_account(&config.name, v))
                    .collect(),
            })
            .collect())
    }

    /// Store (`Some`) or delete (`None`) keychain entries, off the async workers: the
    /// keychain talks D-Bus and may block.
    async fn keychain(&self, changes: Vec<(String, Option<Secret>)>) -> Result<(), McpError> {
        if changes.is_empty() {
            return Ok(());
        }
        let secrets = Arc::clone(&self.secrets);
        tokio::task::spawn_blocking(move || {
            for (account, value) in changes {
                match value {
                    Some(value) => secrets.set(&account, &value)?,
                    None => secrets.delete(&account)?,
                }
            }
            Ok(())
        })
        .await
        .map_err(|e| McpError::Protocol(format!("the keychain call stopped: {e}")))?
    }

    /// Keep (`Some`) or forget (`None`) the client secret the user gave for `name`'s
    /// sign-in (its settings say whether there is one:
    /// [`art_types::mcp::McpOAuth::client_secret`]; saving settings without one forgets
    /// it too).
    pub async fn set_client_secret(
        &self,
        name: &str,
        secret: Option<Secret>,
    ) -> Result<(), McpError> {
        self.keychain(vec![(oauth::client_secret_account(name), secret)])
            .await
    }

    /// The keychain, for the sign-ins kept in it.
    pub(super) fn storage(&self) -> Arc<dyn StorageAdapter> {
        Arc::clone(&self.storage)
    }

    pub(super) fn secrets(&self) -> Arc<dyn SecretStore> {
        Arc::clone(&self.secrets)
    }

    /// A function reading the secrets a server needs to start from the keychain, to
    /// run off the async workers (the keychain may block).
    pub(super) fn secret_reader(
        &self,
    ) -> impl FnOnce(&McpServerConfig) -> Result<ServerSecrets, McpError> + Send + 'static {
        let secrets = Arc::clone(&self.secrets);
        move |config| read_secrets(secrets.as_ref(), config)
    }
}

/// What a server needs from the keychain to start.
#[derive(Default)]
pub(super) struct ServerSecrets {
    /// HTTP headers, by name.
    pub(super) headers: Vec<(String, Secret)>,
    /// Environment variables, by name.
    pub(super) env: Vec<(String, Secret)>,
    /// The client secret the user gave for signing in, if any.
    pub(super) client_secret: Option<Secret>,
    /// The sign-in requests carry (HTTP servers the user signed in to).
    pub(super) auth: Option<rmcp::transport::auth::AuthorizationManager>,
    /// Where a scope the server asks for is kept (HTTP servers).
    pub(super) scope_asked: Option<super::http::ScopeAsked>,
}

fn read_secrets(
    secrets: &dyn SecretStore,
    config: &McpServerConfig,
) -> Result<ServerSecrets, McpError> {
    let read = |names: &[String], field: &'static str, account: &dyn Fn(&str) -> String| {
        names
            .iter()
            .map(|name| match secrets.get(&account(name))? {
                Some(value) => Ok((name.clone(), value)),
                None => Err(invalid(
                    field,
                    format!("no value is stored for {name}: enter it again"),
                )),
            })
            .collect::<Result<Vec<_>, McpError>>()
    };
    Ok(match &config.transport {
        McpTransport::Http { headers, .. } => ServerSecrets {
            headers: read(headers, "headers", &|h| account(&config.name, h))?,
            client_secret: if config.oauth.client_secret {
                secrets.get(&oauth::client_secret_account(&config.name))?
            } else {
                None
            },
            ..ServerSecrets::default()
        },
        McpTransport::Stdio { secret_env, .. } => ServerSecrets {
            env: read(secret_env, "env", &|v| env_account(&config.name, v))?,
            ..ServerSecrets::default()
        },
    })
}
