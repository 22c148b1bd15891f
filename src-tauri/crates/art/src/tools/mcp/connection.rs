//! One running MCP server: the child process or HTTP session, the rmcp client over it,
//! the handshake's outcome and the server's last stderr lines.
//!
//! A stdio server is spawned as a process tree of its own (`tree`: a process group on
//! Unix, a Job Object on Windows), so `npx` and the `node` it starts go together:
//! closing a connection closes the server's stdin, waits briefly, then kills the whole
//! tree; dropping one kills the tree at once. No orphans.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use art_types::mcp::{McpServerConfig, McpTransport};
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProgressNotificationParam, ProtocolVersion,
    UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, Command};
use tokio::sync::Notify;

use super::McpError;
use super::asking::Asking;
use super::stdout::{Watch, Watched};
use super::store::ServerSecrets;
use super::tasks::TaskTools;
use super::tree::Tree;

/// Longest wait for the handshake and for `tools/list`, unless the manager is told
/// otherwise (a server fetched by `npx -y` on first use is slow).
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Lines of stderr kept for the Tools page.
const STDERR_LINES: usize = 20;

/// Longest stderr line kept, in characters.
const STDERR_LINE_CHARS: usize = 400;

/// Longest JSON-RPC line read from a stdio server: large enough for a 50 MB result,
/// which is then shortened for the model.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// The server's last stderr lines, newest last.
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The lines kept, oldest first.
    pub(super) fn lines(&self) -> Vec<String> {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().cloned().collect()
    }

    fn last(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().rev().find(|l| !l.trim().is_empty()).cloned()
    }
}

/// The client side of the session: says who we are, wakes the manager when the
/// server's tools change, and has the server's questions asked (elicitation).
pub(crate) struct Client {
    tools_changed: Arc<Notify>,
    /// The server's name.
    server: String,
    /// Where a server's question goes.
    asking: Arc<Asking>,
}

impl ClientHandler for Client {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.notify_one();
        std::future::ready(())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.asking.progress(&self.server, params).await;
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(super::elicit::answer(&self.server, &self.asking, request).await)
    }

    fn get_info(&self) -> ClientConfig {
        let mut me = Implementation::default();
        "art-workbench".clone_into(&mut me.name);
        me.title = Some("ART Workbench".to_owned());
        env!("CARGO_PKG_VERSION").clone_into(&mut me.version);
        // The newest revision that still has `initialize` (the latest has none, so
        // naming it in one is a contradiction servers refuse).
        // Questions are asked when someone can answer them: a form, or a page to open.
        let mut capabilities = ClientCapabilities::default();
        if self.asking.can_ask() {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::default())
                    .with_url(UrlElicitationCapability::default()),
            );
        }
        ClientConfig::new(capabilities, me)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

impl Connection {
    /// The stdio server's process group (Unix).
    pub(super) fn group(&self) -> Option<i32> {
        self.tree.as_ref().and_then(Tree::group)
    }
}

/// A started server.
pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, Client>,
    /// The stdio server and what it started (killed when dropped).
    tree: Option<Tree>,
    /// Its stderr.
    pub(super) stderr: StderrTail,
    /// Signalled on `notifications/tools/list_changed`.
    pub(super) tools_changed: Arc<Notify>,
    /// Which of its tools run only as tasks (read from its raw listings).
    pub(super) tasks: TaskTools,
}

impl Connection {
    /// Start `config`'s server and complete the handshake. `secrets` are its header
    /// or environment values from the keychain.
    pub(super) async fn open(
        config: &McpServerConfig,
        secrets: ServerSecrets,
        handshake: Duration,
        stderr: StderrTail,
        asking: Arc<Asking>,
    ) -> Result<Self, McpError> {
        let tools_changed = Arc::new(Notify::new());
        let client = Client {
            tools_changed: Arc::clone(&tools_changed),
            server: config.name.clone(),
            asking,
        };
        let tasks = TaskTools::default();
        let (service, tree) = match &config.transport {
            McpTransport::Stdio { .. } => {
                let (service, tree) =
                    spawn_stdio(config, &secrets, client, handshake, &stderr, &tasks).await?;
                (service, Some(tree))
            }
            McpTransport::Http { url, .. } => (
                within(
                    handshake,
                    super::http::connect(
                        url,
                        secrets.headers,
                        secrets.auth,
                        secrets.scope_asked,
                        client,
                        tasks.clone(),
                    ),
                )
                .await?,
                None,
            ),
        };
        // Made before the version is checked: dropped on a refusal, it ends the server.
        let connection = Self {
            service,
            tree,
            stderr,
            tools_changed,
            tasks,
        };
        check_version(&connection.service)?;
        Ok(connection)
    }

    /// The protocol version agreed on and the server's name and version.
    pub(super) fn handshake(&self) -> (String, Option<String>) {
        match self.service.peer_info() {
            Some(info) => (
                info.protocol_version.to_string(),
                info.server_info
                    .as_ref()
                    .map(|s| format!("{} {}", s.name, s.version)),
            ),
            None => (String::new(), None),
        }
    }

    /// Whether the stdio child has exited (an HTTP session: never).
    pub(super) fn exited(&mut self) -> bool {
        self.tree.as_mut().is_some_and(Tree::exited)
    }

    /// End the session: close the server's stdin (or the HTTP session), give it a
    /// moment to exit, then kill its process tree.
    pub(super) async fn close(mut self) {
        let tree = self.tree.take();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.service.close()).await;
        // Whether or not the server left in time, nothing it started stays.
        if let Some(mut tree) = tree {
            tree.exit_within(Duration::from_millis(500)).await;
            tree.kill();
        }
    }
}

/// `future` (a handshake), or a timeout error after `limit`.
async fn within<T>(
    limit: Duration,
    future: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| {
            Err(McpError::Timeout {
                what: "the handshake".into(),
                secs: limit.as_secs(),
            })
        })
}

/// The variables of our own environment a stdio server gets (the official TypeScript
/// SDK's set): enough to find programs and a home, nothing else — not the provider
/// keys a CLI user exports (`OPENAI_API_KEY`), nor any other secret of the shell. What
/// a server needs beyond this is in its configured environment.
#[cfg(unix)]
const INHERITED: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The Windows variables a stdio server gets (the official TypeScript SDK's set).
#[cfg(windows)]
const INHERITED: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// [`INHERITED`] as set in this process (a shell function exported as a variable,
/// `()…`, is left out as the SDK does).
fn inherited_env() -> impl Iterator<Item = (&'static str, std::ffi::OsString)> {
    INHERITED.iter().filter_map(|name| {
        let value = std::env::var_os(name)?;
        (!value.to_string_lossy().starts_with("()")).then_some((*name, value))
    })
}

/// The server's configured variables, a `${env:NAME}` value read from our environment
/// (an error naming the variable when it is not set).
fn configured_env(
    env: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<(&str, std::ffi::OsString)>, McpError> {
    env.iter()
        .map(|(name, value)| match art_types::mcp::env_reference(value) {
            None => Ok((name.as_str(), value.into())),
            Some(from) => std::env::var_os(from)
                .map(|found| (name.as_str(), found))
                .ok_or_else(|| McpError::InvalidConfig {
                    field: "env",
                    message: format!(
                        "{name} is to come from the environment ({value}), but {from} is not \
                         set for this process"
                    ),
                }),
        })
        .collect()
}

/// Spawn a stdio server as a process tree of its own and shake hands; the tree is
/// killed (with what it started) unless the connection takes it.
async fn spawn_stdio(
    config: &McpServerConfig,
    secrets: &ServerSecrets,
    client: Client,
    handshake: Duration,
    stderr: &StderrTail,
    tasks: &TaskTools,
) -> Result<(RunningService<RoleClient, Client>, Tree), McpError> {
    let McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
        ..
    } = &config.transport
    else {
        return Err(McpError::Protocol("not a stdio server".into()));
    };
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(inherited_env())
        .envs(configured_env(env)?)
        .envs(secrets.env.iter().map(|(k, v)| (k, v.expose())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Killed with everything it started if the handshake does not get to hand it over.
    let mut tree = Tree::spawn(cmd).map_err(|e| spawn_error(command, &e))?;
    let Some((stdout, stdin, err)) = tree.pipes() else {
        return Err(McpError::Protocol(
            "the server's pipes were not opened".into(),
        ));
    };
    let reader = read_stderr(err, stderr.clone(), config.name.clone());
    let watch = Arc::new(Watch::default());
    let stdout = Watched::new(stdout, Arc::clone(&watch), tasks.clone());
    let transport = AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(MAX_LINE);
    let shaking = async {
        match client.serve(transport).await {
            Ok(service) => Ok(service),
            Err(e) => {
                let exited = tree
                    .exit_within(Duration::from_millis(500))
                    .await
                    .map(|status| status.code());
                // Its last words first: the reader ends at the pipe's end.
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
                Err(match exited {
                    Some(code) => McpError::Exited {
                        code,
                        stderr: stderr.last(),
                    },
                    None => McpError::Protocol(format!("the handshake failed: {e}")),
                })
            }
        }
    };
    let service = within(handshake, async {
        tokio::select! {
            shaken = shaking => shaken,
            line = watch.not_mcp() => Err(McpError::NotMcp { line }),
        }
    })
    .await?;
    watch.stop();
    Ok((service, tree))
}

/// The server must have agreed on a protocol version we speak: the SDK goes on with
/// any answer, but a version we do not know means messages we may misread.
fn check_version(service: &RunningService<RoleClient, Client>) -> Result<(), McpError> {
    let agreed = service.peer_info().map(|i| i.protocol_version.clone());
    match agreed {
        Some(version) if ProtocolVersion::KNOWN_VERSIONS.contains(&version) => Ok(()),
        Some(version) => Err(McpError::Protocol(format!(
            "the server speaks MCP protocol version {version}, which this app does not \
             support (it speaks {})",
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Err(McpError::Protocol(
            "the server did not say which protocol version it speaks".into(),
        )),
    }
}

fn spawn_error(command: &str, e: &std::io::Error) -> McpError {
    if e.kind() == std::io::ErrorKind::NotFound {
        McpError::CommandNotFound {
            command: command.to_owned(),
        }
    } else {
        McpError::Spawn {
            command: command.to_owned(),
            message: e.to_string(),
        }
    }
}

/// Feed the server's stderr into `tail` and the log, line by line, until it closes.
fn read_stderr(
    stderr: ChildStderr,
    tail: StderrTail,
    server: String,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line: String = crate::secrets::scrub(&line)
                .chars()
                .take(STDERR_LINE_CHARS)
                .collect();
            tracing::info!(target: "art::mcp", server = %server, "{line}");
            tail.push(line);
        }
    })
}
