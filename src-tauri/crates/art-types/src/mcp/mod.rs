//! MCP servers as the user configures them, their state, and the tools they offer.
//!
//! A server's configuration is the user's: it is stored in SQLite without its secrets
//! (an HTTP header's value lives in the OS keychain; only the header's name is here).
//! Its tools reach the model under namespaced names, `<server>__<tool>`: providers
//! accept only letters, digits, `_` and `-` in a function name, and a server name
//! cannot contain `__`, so two servers' tools can never collide.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod auth;
pub mod catalog;
pub mod elicit;
pub mod question;

pub use auth::{McpAccount, McpOAuth, McpSignInPage};

/// Separator between a server's name and its tool's name in a namespaced tool name.
pub const TOOL_SEPARATOR: &str = "__";

/// Default time one `tools/call` may take.
pub const DEFAULT_CALL_TIMEOUT_SECS: u32 = 60;

/// Default longest result, in characters, the model is given (the observation keeps
/// the whole result).
pub const DEFAULT_RESULT_LIMIT: u32 = 20_000;

/// How the client reaches the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// Program to run (`npx`, `uvx`, a path).
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Its environment, beside a few safe variables of ours (`PATH`, `HOME`, …; no
        /// other variable of the app's or the shell's reaches it). A variable whose name
        /// says it holds a secret ([`is_secret_name`]) is not kept here when saved: its
        /// value goes to the OS keychain and its name to `secret_env` — unless the value
        /// is a reference, `${env:NAME}` ([`env_reference`]), read from our environment
        /// when the server starts.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// Names of variables whose values are in the OS keychain (a name listed here
        /// without a value in `env` keeps its stored value).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        secret_env: Vec<String>,
        /// Working directory (the app's own when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `https://example.com/mcp`.
        url: String,
        /// Names of the headers sent with every request; their values are secrets,
        /// kept in the OS keychain.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        headers: Vec<String>,
    },
}

impl McpTransport {
    /// Which of the two it is.
    pub fn kind(&self) -> McpTransportKind {
        match self {
            Self::Stdio { .. } => McpTransportKind::Stdio,
            Self::Http { .. } => McpTransportKind::Http,
        }
    }
}

/// The two transports, by name: `stdio` or `http`, as shown, recorded and traced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransportKind {
    /// A child process on stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl McpTransportKind {
    /// `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Http => "http",
        }
    }

    /// The kind named `name` (`stdio` or `http`).
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Stdio, Self::Http]
            .into_iter()
            .find(|k| k.as_str() == name)
    }

    /// OpenTelemetry's `network.transport`: `pipe` for stdio, `tcp` for HTTP.
    pub fn network_transport(self) -> &'static str {
        match self {
            Self::Stdio => "pipe",
            Self::Http => "tcp",
        }
    }
}

impl std::fmt::Display for McpTransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One MCP server the user added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// Unique name: lowercase letters, digits and single `-` (the namespace of its tools).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Whether it is started (a disabled server's tools are unavailable).
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Longest time one call may take, in seconds.
    #[serde(default = "call_timeout")]
    pub timeout_secs: u32,
    /// Longest result, in characters, the model is given.
    #[serde(default = "result_limit")]
    pub result_limit: u32,
    /// What happens before one of its tools runs, unless a thread says otherwise.
    #[serde(default = "ask")]
    pub tool_policy: crate::approval::ToolPolicy,
    /// How to sign in to it, when it asks (HTTP servers; usually nothing to set).
    #[serde(default, skip_serializing_if = "McpOAuth::is_default")]
    pub oauth: McpOAuth,
}

fn ask() -> crate::approval::ToolPolicy {
    crate::approval::ToolPolicy::Ask
}

fn enabled() -> bool {
    true
}

fn call_timeout() -> u32 {
    DEFAULT_CALL_TIMEOUT_SECS
}

fn result_limit() -> u32 {
    DEFAULT_RESULT_LIMIT
}

impl McpServerConfig {
    /// A server with the default timeout and result limit, enabled.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            enabled: true,
            timeout_secs: DEFAULT_CALL_TIMEOUT_SECS,
            result_limit: DEFAULT_RESULT_LIMIT,
            tool_policy: crate::approval::ToolPolicy::Ask,
            oauth: McpOAuth::default(),
        }
    }
}

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum McpServerState {
    /// Disabled by the user: not running.
    Disabled,
    /// Being started: process spawned or connection opened, handshake under way.
    Starting,
    /// Handshake done, tools listed.
    #[serde(rename_all = "camelCase")]
    Ready {
        /// How many tools it offers (usable or not).
        tools: usize,
        /// The protocol version agreed on.
        protocol_version: String,
        /// The server's own name and version, if it gave them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_info: Option<String>,
    },
    /// The server asks the user to sign in (OAuth) before it answers: at first, when
    /// the sign-in expired and could not be renewed, or for more access than was given.
    #[serde(rename_all = "camelCase")]
    SignInNeeded {
        /// Why, in plain words.
        reason: String,
        /// The scope the server asked for, when it named one (step-up).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<String>,
    },
    /// Could not be started or stopped working.
    Failed {
        /// What went wrong.
        reason: String,
        /// What to do about it, when we know.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
}

/// A server with its state, as the Tools page and `art mcp list` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// Its configuration (no secrets in it).
    pub config: McpServerConfig,
    /// Its state now.
    pub state: McpServerState,
    /// The last lines it wrote to stderr (stdio servers), redacted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// The account the app is signed in with there (HTTP servers that ask for sign-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<McpAccount>,
}

/// A tool an MCP server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The server's name.
    pub server: String,
    /// The tool's name on its server.
    pub name: String,
    /// The name the model calls it by (`<server>__<tool>`).
    pub tool_name: String,
    /// Human title, if the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does (the server's words: untrusted text, shown as text).
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
    /// Why it cannot be used (a schema that does not compile, a name too long), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

/// What an import of pasted `mcpServers` JSON did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpImportReport {
    /// Servers added, by the name they were saved under.
    pub added: Vec<String>,
    /// Names changed to be valid: `(name in the JSON, name saved)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<(String, String)>,
    /// Servers not added: `(name in the JSON, why)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<(String, String)>,
}

/// The key of a TOOL_EXECUTION observation's metadata that holds its [`McpOrigin`].
pub const ORIGIN_KEY: &str = "mcp";

/// Where an MCP tool call went: recorded with each call (its TOOL_EXECUTION
/// observation's `metadata.mcp`) and read by the tool card and every export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpOrigin {
    /// The server's name.
    pub server: String,
    /// How it was reached.
    pub transport: McpTransportKind,
    /// The tool's name on its server.
    pub tool: String,
    /// The protocol version agreed on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

impl McpOrigin {
    /// The origin recorded in an observation's `metadata`, if it is an MCP call's.
    pub fn of(metadata: &serde_json::Value) -> Option<Self> {
        serde_json::from_value(metadata.get(ORIGIN_KEY)?.clone()).ok()
    }
}

/// The namespaced name of `tool` on `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{server}{TOOL_SEPARATOR}{tool}")
}

/// The server a namespaced tool name belongs to, if it is one.
pub fn server_of(tool_name: &str) -> Option<&str> {
    tool_name
        .split_once(TOOL_SEPARATOR)
        .map(|(server, _)| server)
        .filter(|s| !s.is_empty())
}

/// Whether an environment variable's name says it holds a secret: one of its `_`-separated
/// words is `TOKEN`, `SECRET`, `PASSWORD`, `PASS`, `PASSWD`, `KEY`, `APIKEY`, `PAT`,
/// `AUTH`, `CREDENTIAL` or `CREDENTIALS` (`GITHUB_TOKEN`, `OPENAI_API_KEY`, `DB_PASSWORD`).
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: [&str; 11] = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASS",
        "PASSWD",
        "KEY",
        "APIKEY",
        "PAT",
        "AUTH",
        "CREDENTIAL",
        "CREDENTIALS",
    ];
    name.to_ascii_uppercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| WORDS.contains(&word))
}

/// The variable a stdio server's environment value refers to, when the whole value is
/// `${env:NAME}`: the value is read from the environment of the app or `art` when the
/// server starts (never stored; how a secret is passed without an OS keychain).
pub fn env_reference(value: &str) -> Option<&str> {
    value
        .trim()
        .strip_prefix("${env:")?
        .strip_suffix('}')
        .filter(|name| !name.is_empty() && !name.contains(['=', '\0', '}', '$']))
}

/// Whether a stdio server's variable keeps its value in the OS keychain when saved: its
/// name says it is a secret and the value is not a `${env:NAME}` reference.
pub fn keeps_in_keychain(name: &str, value: &str) -> bool {
    is_secret_name(name) && env_reference(value).is_none()
}

/// Why a server name is refused, if it is.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(format!(
            "invalid server name {name:?}: use 1-32 lowercase letters, digits and single '-' \
             (it prefixes its tools' names)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_at_the_first_separator() {
        assert_eq!(
            tool_name("time", "get_current_time"),
            "time__get_current_time"
        );
        assert_eq!(server_of("time__get__x"), Some("time"));
        assert_eq!(server_of("calculator"), None);
        assert_eq!(server_of("__x"), None);
    }

    #[test]
    fn server_names_cannot_hold_the_separator() {
        assert!(check_server_name("everything").is_ok());
        assert!(check_server_name("my-git-2").is_ok());
        for bad in [
            "",
            "a_b",
            "a__b",
            "Caps",
            "-a",
            "a-",
            "a--b",
            &"x".repeat(33),
        ] {
            assert!(check_server_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secret_names_are_recognised_by_their_words() {
        for secret in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "db_password",
            "BRAVE_API_KEY",
            "GITLAB_PAT",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(is_secret_name(secret), "{secret}");
        }
        for plain in [
            "TZ",
            "PATH",
            "MONKEY_MODE",
            "TOKENIZERS_PARALLELISM",
            "HOME",
            "PASSAGE",
        ] {
            assert!(!is_secret_name(plain), "{plain}");
        }
    }

    #[test]
    fn a_config_reads_back_with_defaults() {
        let json = r#"{"name":"time","transport":{"type":"stdio","command":"uvx","args":["mcp-server-time"]}}"#;
        let config: McpServerConfig = serde_json::from_str(json).unwrap();
        assert!(config.enabled);
        assert_eq!(config.timeout_secs, DEFAULT_CALL_TIMEOUT_SECS);
        assert_eq!(config.transport.kind(), McpTransportKind::Stdio);
        assert_eq!(
            McpTransportKind::parse("http"),
            Some(McpTransportKind::Http)
        );
        let back = serde_json::to_string(&config).unwrap();
        assert_eq!(
            serde_json::from_str::<McpServerConfig>(&back).unwrap(),
            config
        );
    }
}
