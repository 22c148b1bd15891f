//! Starts and stops the configured servers and keeps the tool registry in step: a
//! ready server's tools are registered under `<server>__<tool>`, re-listed when the
//! server says they changed, and removed when it stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use art_types::mcp::{
    McpImportReport, McpServerConfig, McpServerState, McpServerStatus, McpToolInfo, McpTransport,
    server_of,
};
use serde_json::Value;

use super::asking::Asking;
use super::connection::{Connection, HANDSHAKE_TIMEOUT, StderrTail};
use super::elicit::Elicitor;
use super::registration::{list_and_register, ready_state};
use super::store::McpStore;
use super::{McpError, oauth};
use crate::tools::{ToolError, ToolRegistry};

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
    /// The records of the stdio servers' process groups.
    leftovers: super::leftovers::Leftovers,
}

impl McpManager {
    /// Servers from `store`, their tools registered in `registry`.
    pub fn new(store: McpStore, registry: Arc<ToolRegistry>) -> Self {
        Self {
            leftovers: super::leftovers::Leftovers::new(store.storage()),
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

    /// End the stdio servers that processes which died (killed, crashed) left running
    /// on this data directory — the ones still the same processes; how many. Call it
    /// when a process opens the data directory.
    pub async fn end_leftovers(&self) -> usize {
        self.leftovers.end().await
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
        if let Some(group) = connection.group() {
            self.leftovers.started(group).await;
        }
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
                let group = connection.group();
                connection.close().await;
                if let Some(group) = group {
                    self.leftovers.stopped(group).await;
                }
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
            let group = running.connection.group();
            running.connection.close().await;
            if let Some(group) = group {
                self.leftovers.stopped(group).await;
            }
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

    pub(super) fn status_of(&self, config: McpServerConfig) -> McpServerStatus {
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
