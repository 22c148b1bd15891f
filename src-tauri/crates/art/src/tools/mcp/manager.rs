//! Starts and stops the configured servers and keeps the tool registry in step: a
//! ready server's tools are registered under `<server>__<tool>`, re-listed when the
//! server says they changed, and removed when it stops.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use art_types::ToolSchema;
use art_types::mcp::{
    McpImportReport, McpServerConfig, McpServerState, McpServerStatus, McpToolInfo, McpTransport,
    TOOL_SEPARATOR, server_of, tool_name,
};
use serde_json::Value;

use super::asking::Asking;
use super::connection::{Connection, HANDSHAKE_TIMEOUT, StderrTail};
use super::elicit::Elicitor;
use super::store::McpStore;
use super::tasks::TaskTools;
use super::tool::McpTool;
use super::{McpError, oauth};
use crate::tools::{ToolError, ToolRegistry};
use tokio_util::sync::CancellationToken;

/// A server's live parts.
struct Running {
    connection: Connection,
    refresher: tokio::task::JoinHandle<()>,
}

/// What is known of a server besides its configuration.
#[derive(Clone)]
struct Known {
    state: McpServerState,
    stderr: StderrTail,
    tools: Vec<McpToolInfo>,
}

/// The MCP servers of an instance, as tool sources.
pub struct McpManager {
    store: McpStore,
    registry: Arc<ToolRegistry>,
    running: Mutex<HashMap<String, Running>>,
    known: Arc<Mutex<HashMap<String, Known>>>,
    handshake: Duration,
    asking: Arc<Asking>,
}

impl McpManager {
    /// Servers from `store`, their tools registered in `registry`.
    pub fn new(store: McpStore, registry: Arc<ToolRegistry>) -> Self {
        Self {
            store,
            registry,
            running: Mutex::new(HashMap::new()),
            known: Arc::new(Mutex::new(HashMap::new())),
            handshake: HANDSHAKE_TIMEOUT,
            asking: Arc::new(Asking::default()),
        }
    }

    /// Record the servers' questions on the runs of the calls they come in, and take
    /// their answers from `storage` too (posted by another process: `art answer`).
    #[must_use]
    pub fn recording_questions(
        mut self,
        observations: Arc<crate::observation::ObservationManager>,
        storage: Arc<dyn crate::storage::StorageAdapter>,
    ) -> Self {
        self.asking = Arc::new(Asking::recording(observations, storage));
        self
    }

    /// Answering, from this process, a question that waits in another (`art answer`);
    /// `None` when the manager does not record questions.
    pub fn posting(&self) -> Option<super::Posting> {
        self.asking.posting()
    }

    /// Have servers ask the user their questions through `elicitor` (without one,
    /// every question is declined, and servers started are told the client takes none).
    pub fn set_elicitor(&self, elicitor: Arc<dyn Elicitor>) {
        self.asking.set_elicitor(elicitor);
    }

    /// Wait at most `limit` for a server's handshake and tool list (default 30 s).
    #[must_use]
    pub fn with_handshake_timeout(mut self, limit: Duration) -> Self {
        self.handshake = limit;
        self
    }

    /// How long a handshake (and a list) may take.
    pub(super) fn handshake_limit(&self) -> Duration {
        self.handshake
    }

    /// The configurations.
    pub fn store(&self) -> &McpStore {
        &self.store
    }

    fn set_known(&self, name: &str, known: Known) {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned(), known);
    }

    /// Start (or restart) `name`. A disabled server is stopped instead. Failing to
    /// start is not an error of this call: the server's state says why.
    pub async fn start(&self, name: &str) -> Result<McpServerStatus, McpError> {
        let config = self.store.get(name).await?;
        self.stop(name).await;
        if !config.enabled {
            self.set_known(
                name,
                Known {
                    state: McpServerState::Disabled,
                    stderr: StderrTail::default(),
                    tools: Vec::new(),
                },
            );
            return Ok(self.with_account(self.status_of(config)).await);
        }
        self.set_known(
            name,
            Known {
                state: McpServerState::Starting,
                stderr: StderrTail::default(),
                tools: Vec::new(),
            },
        );
        match self.connect(&config).await {
            Ok((connection, tools)) => {
                let state = ready_state(&connection, tools.len());
                self.set_known(
                    name,
                    Known {
                        state,
                        stderr: connection.stderr.clone(),
                        tools,
                    },
                );
                let refresher = self.refresher(&config, &connection);
                let replaced = self
                    .running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(
                        name.to_owned(),
                        Running {
                            connection,
                            refresher,
                        },
                    );
                if let Some(old) = replaced {
                    old.refresher.abort();
                    old.connection.close().await;
                }
            }
            Err((error, stderr)) => {
                tracing::warn!(server = %name, "MCP server failed to start: {error}");
                let state = match &error {
                    // A server given a token in its headers that answers 401 refused
                    // that token (or wants a sign-in instead): both are said.
                    McpError::SignInNeeded { scope: None, .. } if matches!(&config.transport, McpTransport::Http { headers, .. } if !headers.is_empty()) => {
                        McpServerState::SignInNeeded {
                            reason: "refused the credentials in its headers (check them), or \
                                     asks to sign in instead"
                                .into(),
                            scope: None,
                        }
                    }
                    McpError::SignInNeeded { reason, scope, .. } => McpServerState::SignInNeeded {
                        reason: reason.clone(),
                        scope: scope.clone(),
                    },
                    _ => McpServerState::Failed {
                        reason: error.to_string(),
                        hint: error.hint(),
                    },
                };
                self.set_known(
                    name,
                    Known {
                        state,
                        stderr,
                        tools: Vec::new(),
                    },
                );
            }
        }
        Ok(self.with_account(self.status_of(config)).await)
    }

    /// Open the connection and list the tools, registering them.
    async fn connect(
        &self,
        config: &McpServerConfig,
    ) -> Result<(Connection, Vec<McpToolInfo>), (McpError, StderrTail)> {
        let store_config = config.clone();
        let secrets = match tokio::task::spawn_blocking({
            let read = self.store.secret_reader();
            move || read(&store_config)
        })
        .await
        {
            Ok(Ok(secrets)) => secrets,
            Ok(Err(e)) => return Err((e, StderrTail::default())),
            Err(e) => return Err((McpError::Protocol(e.to_string()), StderrTail::default())),
        };
        let mut secrets = secrets;
        if let McpTransport::Http { url, .. } = &config.transport {
            let user_secret = secrets.client_secret.take().map(|s| s.expose().to_owned());
            secrets.auth =
                super::oauth::authorizer(self.store.secrets(), &config.name, url, user_secret)
                    .await
                    .map_err(|e| {
                        let error = McpError::SignIn {
                            url: url.clone(),
                            reason: e.to_string(),
                        };
                        (error, StderrTail::default())
                    })?;
            secrets.scope_asked =
                Some(oauth::scope_keeper(self.store.secrets(), &config.name, url));
        }
        let stderr = StderrTail::default();
        let asking = Arc::clone(&self.asking);
        let connection = Connection::open(config, secrets, self.handshake, stderr.clone(), asking)
            .await
            .map_err(|e| (e, stderr))?;
        let listed = list_and_register(
            &self.registry,
            &self.asking,
            config,
            &connection.service,
            &connection.tasks,
            self.handshake,
        );
        match listed.await {
            Ok(tools) => Ok((connection, tools)),
            Err(e) => {
                let stderr = connection.stderr.clone();
                connection.close().await;
                Err((e, stderr))
            }
        }
    }

    /// Re-list `config`'s tools whenever the server says they changed.
    fn refresher(
        &self,
        config: &McpServerConfig,
        connection: &Connection,
    ) -> tokio::task::JoinHandle<()> {
        let changed = Arc::clone(&connection.tools_changed);
        let peer = connection.service.peer().clone();
        let tasks = connection.tasks.clone();
        let registry = Arc::clone(&self.registry);
        let asking = Arc::clone(&self.asking);
        let known = Arc::clone(&self.known);
        let config = config.clone();
        tokio::spawn(async move {
            loop {
                changed.notified().await;
                match list_and_register(
                    &registry,
                    &asking,
                    &config,
                    &peer,
                    &tasks,
                    HANDSHAKE_TIMEOUT,
                )
                .await
                {
                    Ok(tools) => {
                        let mut known = known.lock().unwrap_or_else(|p| p.into_inner());
                        if let Some(entry) = known.get_mut(&config.name) {
                            if let McpServerState::Ready { tools: count, .. } = &mut entry.state {
                                *count = tools.len();
                            }
                            entry.tools = tools;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(server = %config.name, "could not re-list the MCP server's tools: {e}")
                    }
                }
            }
        })
    }

    /// Stop `name` if it runs: its tools go from the registry, its process (group) ends.
    pub async fn stop(&self, name: &str) {
        self.registry
            .replace_where(|tool| server_of(tool) == Some(name), Vec::new());
        let running = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        if let Some(running) = running {
            running.refresher.abort();
            running.connection.close().await;
        }
        if let Some(known) = self
            .known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(name)
            && matches!(
                known.state,
                McpServerState::Ready { .. } | McpServerState::Starting
            )
        {
            known.state = McpServerState::Disabled;
            known.tools.clear();
        }
    }

    /// Save the servers of a pasted `{"mcpServers": {…}}` JSON (`Err`: the text is not
    /// such JSON). One that cannot be saved is skipped with the reason; none is started.
    pub async fn import(&self, text: &str) -> Result<McpImportReport, String> {
        let parsed = super::import::parse(text)?;
        let mut report = McpImportReport {
            skipped: parsed.skipped,
            ..McpImportReport::default()
        };
        for server in parsed.servers {
            let name = server.config.name.clone();
            let original = server.renamed_from.clone().unwrap_or_else(|| name.clone());
            if let Err(e) = self.store.save(&server.config, &server.header_values).await {
                report.skipped.push((original, e.to_string()));
                continue;
            }
            if let Some(old) = server.renamed_from {
                report.renamed.push((old, name.clone()));
            }
            report.added.push(name);
        }
        Ok(report)
    }

    /// Stop `name` and forget it: for a server that was removed.
    pub async fn forget(&self, name: &str) {
        self.stop(name).await;
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    /// Start the servers `names`, all at once (each one's outcome is its state).
    pub async fn start_many(&self, names: &[&str]) {
        futures::future::join_all(names.iter().map(|name| self.start(name))).await;
    }

    /// Start every enabled server, all at once.
    pub async fn start_enabled(&self) -> Result<(), McpError> {
        let configs = self.store.list().await?;
        let enabled: Vec<&str> = configs
            .iter()
            .filter(|c| c.enabled)
            .map(|c| c.name.as_str())
            .collect();
        self.start_many(&enabled).await;
        Ok(())
    }

    /// Start the servers that `tools` (a thread's enabled tools) need and that are not
    /// running yet. Nothing is read when no tool is an MCP server's; a server that is
    /// not configured is left alone (its tools are reported unavailable when called).
    pub async fn start_for(&self, tools: &[String]) {
        let mut idle: Vec<&str> = {
            let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            tools
                .iter()
                .filter_map(|t| server_of(t))
                .filter(|name| !running.contains_key(*name))
                .collect()
        };
        idle.sort_unstable();
        idle.dedup();
        self.start_many(&idle).await;
    }

    /// [`Self::start_for`] the tools `thread_id` has enabled (before a run). A server
    /// that cannot start is recorded in its state, and the run reports its tools
    /// unavailable when they are called.
    pub async fn start_for_thread(&self, state: &crate::context::StateManager, thread_id: &str) {
        let enabled = match state.thread_config(thread_id).await {
            Ok(config) => config.enabled_tools,
            Err(_) => return,
        };
        self.start_for(&enabled).await;
    }

    /// Every configured server with its state.
    pub async fn statuses(&self) -> Result<Vec<McpServerStatus>, McpError> {
        let configs = self.store.list().await?;
        let statuses = configs.into_iter().map(|c| self.status_of(c));
        Ok(futures::future::join_all(statuses.map(|s| self.with_account(s))).await)
    }

    /// One server with its state.
    pub async fn status(&self, name: &str) -> Result<McpServerStatus, McpError> {
        Ok(self
            .with_account(self.status_of(self.store.get(name).await?))
            .await)
    }

    /// `status` with the account the app is signed in with there (read from the
    /// keychain; none when it cannot be read).
    async fn with_account(&self, mut status: McpServerStatus) -> McpServerStatus {
        if let McpTransport::Http { url, .. } = &status.config.transport {
            status.account = oauth::signed_in(self.store.secrets(), &status.config.name, url)
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
        let config = self.store.get(name).await?;
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
        oauth::sign_in(request, self.store.secrets(), show, wait, cancel)
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
        let Ok(configs) = self.store.list().await else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for config in configs {
            if matches!(config.transport, McpTransport::Http { .. }) {
                found.extend(oauth::secrets_of(self.store.secrets(), &config.name).await);
            }
        }
        found
    }

    /// Forget the sign-in to `name` and restart it (it then asks to sign in again).
    pub async fn sign_out(&self, name: &str) -> Result<McpServerStatus, McpError> {
        let config = self.store.get(name).await?;
        oauth::sign_out(self.store.secrets(), &config.name)
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

    fn status_of(&self, config: McpServerConfig) -> McpServerStatus {
        let name = config.name.clone();
        let exited = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&name)
            .is_some_and(|r| r.connection.exited() || r.connection.service.is_closed());
        let known = self
            .known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&name)
            .cloned();
        let (mut state, stderr) = match known {
            Some(k) => (k.state, k.stderr.lines()),
            None if config.enabled => (
                McpServerState::Failed {
                    reason: "not started".into(),
                    hint: None,
                },
                Vec::new(),
            ),
            None => (McpServerState::Disabled, Vec::new()),
        };
        if exited {
            state = McpServerState::Failed {
                reason: format!(
                    "stopped working{}",
                    stderr.last().map(|l| format!(": {l}")).unwrap_or_default()
                ),
                hint: Some("restart it; if it stops again, its last output says why".into()),
            };
        }
        McpServerStatus {
            config,
            state,
            stderr_tail: stderr,
            account: None,
        }
    }

    /// The session with `name`, while it runs.
    pub(super) fn peer(&self, name: &str) -> Result<rmcp::Peer<rmcp::RoleClient>, McpError> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        match running.get(name) {
            Some(r) => Ok(r.connection.service.peer().clone()),
            None if self
                .known
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(name) =>
            {
                Err(McpError::NotRunning(name.to_owned()))
            }
            None => Err(McpError::UnknownServer(name.to_owned())),
        }
    }

    /// The servers running now, by name.
    pub(super) fn running_names(&self) -> Vec<String> {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<String> = running.keys().cloned().collect();
        names.sort();
        names
    }

    /// The tools `name` offers (listed at its last start or change).
    pub fn tools(&self, name: &str) -> Vec<McpToolInfo> {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .map(|k| k.tools.clone())
            .unwrap_or_default()
    }

    /// Call `tool` on `server` directly (not in a run): arguments are checked against
    /// its schema first; the whole result comes back.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Value, ToolError> {
        // Found under the lock, without copying every tool's schema.
        let name = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let entry = known.get(server);
            let found = entry.and_then(|k| {
                k.tools
                    .iter()
                    .find(|t| t.name == tool || t.tool_name == tool)
                    .map(|t| (t.tool_name.clone(), t.unusable.clone()))
            });
            match (found, entry) {
                (Some((name, None)), _) => name,
                (Some((name, Some(reason))), _) => {
                    return Err(ToolError::new(
                        "TOOL_UNAVAILABLE",
                        format!("`{name}` cannot be used: {reason}"),
                    ));
                }
                (None, Some(k)) if matches!(k.state, McpServerState::Ready { .. }) => {
                    let names: Vec<&str> = k.tools.iter().map(|t| t.name.as_str()).collect();
                    return Err(ToolError::new(
                        "TOOL_NOT_FOUND",
                        format!(
                            "MCP server `{server}` has no tool `{tool}`; it offers: {}",
                            names.join(", ")
                        ),
                    ));
                }
                (None, Some(_)) => {
                    return Err(ToolError::new(
                        "TOOL_NOT_FOUND",
                        format!(
                            "MCP server `{server}` is not running, so its tool `{tool}` cannot \
                             be called"
                        ),
                    ));
                }
                (None, None) => {
                    return Err(ToolError::new(
                        "TOOL_NOT_FOUND",
                        format!("there is no MCP server named `{server}`"),
                    ));
                }
            }
        };
        self.registry.check_arguments(&name, arguments)?;
        let entry = self
            .registry
            .entry(&name)
            .ok_or_else(|| ToolError::new("TOOL_UNAVAILABLE", format!("`{name}` is not usable")))?;
        let context = crate::tools::ExecutionContext::default();
        crate::tools::user_time::run_within(&*entry.tool, &name, arguments, &context).await
    }

    /// Stop every server (before the process exits).
    pub async fn shutdown(&self) {
        let names: Vec<String> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        futures::future::join_all(names.iter().map(|n| self.stop(n))).await;
    }
}

fn ready_state(connection: &Connection, tools: usize) -> McpServerState {
    let (protocol_version, server_info) = connection.handshake();
    McpServerState::Ready {
        tools,
        protocol_version,
        server_info,
    }
}

/// `tools/list` (every page) and the registry updated: the server's old tools go, the
/// new ones come, each usable one registered, each unusable one (a name too long or
/// taken, a tool that runs only as a task) listed with the reason.
async fn list_and_register(
    registry: &ToolRegistry,
    asking: &Arc<Asking>,
    config: &McpServerConfig,
    peer: &rmcp::Peer<rmcp::RoleClient>,
    tasks: &TaskTools,
    limit: Duration,
) -> Result<Vec<McpToolInfo>, McpError> {
    let listed = tokio::time::timeout(limit, peer.list_all_tools())
        .await
        .map_err(|_| McpError::Timeout {
            what: "tools/list".into(),
            secs: limit.as_secs(),
        })?
        .map_err(|e| McpError::Protocol(format!("tools/list failed: {e}")))?;
    let protocol_version = peer.peer_info().map(|i| i.protocol_version.to_string());
    let mut infos: Vec<McpToolInfo> = Vec::with_capacity(listed.len());
    let mut executors: Vec<Arc<dyn crate::tools::ToolExecutor>> = Vec::new();
    let mut taken = BTreeSet::new();
    for tool in listed {
        let local: String = tool
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let namespaced = tool_name(&config.name, &local);
        let input_schema = Value::Object((*tool.input_schema).clone());
        let mut info = McpToolInfo {
            server: config.name.clone(),
            name: tool.name.to_string(),
            tool_name: namespaced.clone(),
            title: tool
                .title
                .clone()
                .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone())),
            description: tool.description.as_deref().unwrap_or_default().to_owned(),
            input_schema: input_schema.clone(),
            unusable: None,
        };
        if namespaced.len() > 64 {
            info.unusable = Some(format!(
                "its name `{namespaced}` is longer than the 64 characters providers accept; give the server a shorter name"
            ));
        } else if !taken.insert(namespaced.clone()) {
            info.unusable = Some(format!(
                "another tool of this server is also called `{namespaced}`"
            ));
        } else if tasks.required(&tool.name) {
            info.unusable = Some(super::tasks::REASON.to_owned());
        } else {
            let schema = ToolSchema {
                name: namespaced.clone(),
                description: info.description.clone(),
                input_schema,
                output_schema: tool
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone())),
                examples: Vec::new(),
            };
            let executor = McpTool::new(
                schema,
                &config.name,
                config.transport.kind(),
                &tool.name,
                peer.clone(),
                Duration::from_secs(u64::from(config.timeout_secs)),
                config.result_limit as usize,
            )
            .with_protocol_version(protocol_version.clone())
            .with_policy(config.tool_policy)
            .with_asking(Arc::clone(asking));
            executors.push(Arc::new(executor));
        }
        infos.push(info);
    }
    // The old tools go and the new come in one step: a run never finds none.
    let refused = registry.replace_where(
        |tool| server_of(tool) == Some(config.name.as_str()),
        executors,
    );
    for error in refused {
        if let Some(info) = infos.iter_mut().find(|i| i.tool_name == error.tool_name()) {
            info.unusable = Some(error.to_string());
        }
    }
    debug_assert!(infos.iter().all(|t| t.tool_name.contains(TOOL_SEPARATOR)));
    Ok(infos)
}
