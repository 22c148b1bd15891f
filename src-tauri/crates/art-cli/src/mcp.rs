//! `art mcp …`: the MCP servers of the data directory, as the app's Tools page manages
//! them. Each command that needs a server starts it for its own use and ends it before
//! returning (nothing outlives the `art` process).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use art::secrets::Secret;
use art::standard::Standard;
use art::tools::mcp::McpTool;
use art_types::mcp::{McpServerConfig, McpServerState, McpServerStatus, McpTransport};
use clap::Subcommand;

use crate::out::{noteln, sayln};

/// What `art mcp` can do.
#[derive(Subcommand)]
pub enum Command {
    /// List the servers and their state (the enabled ones are started to check them).
    List,
    /// Add (or replace) a server and try it: `art mcp add time -- uvx mcp-server-time`,
    /// or `art mcp add remote --url https://host/mcp --header "Authorization: Bearer …"`.
    Add(AddArgs),
    /// Add the servers of a `{"mcpServers": {…}}` JSON file (`-` reads standard input),
    /// as Claude Desktop, Cursor and others write it.
    Import {
        /// The JSON file, or `-`.
        file: PathBuf,
    },
    /// Remove a server (and its header values from the keychain).
    Remove {
        /// The server's name.
        name: String,
    },
    /// Enable a server.
    Enable {
        /// The server's name.
        name: String,
    },
    /// Disable a server (its tools become unavailable to threads).
    Disable {
        /// The server's name.
        name: String,
    },
    /// Start a server and list its tools, as threads enable them (`<server>__<tool>`).
    Tools {
        /// The server's name.
        name: String,
        /// Print each tool's input schema too.
        #[arg(long)]
        schema: bool,
    },
    /// Sign in to a server that asks for it (OAuth): prints the address to open, opens
    /// it in the browser, and waits for the browser to come back. The tokens go to the
    /// OS keychain.
    Login {
        /// The server's name.
        name: String,
        /// Only print the address (open it yourself, on this machine).
        #[arg(long)]
        no_browser: bool,
        /// Longest wait for the browser, in seconds.
        #[arg(long, value_name = "SECS", default_value_t = art::tools::mcp::oauth::SIGN_IN_WAIT.as_secs())]
        wait: u64,
    },
    /// Sign out of a server: its tokens are removed from the keychain.
    Logout {
        /// The server's name.
        name: String,
    },
    /// Start a server and list its prompts (`/name`, its arguments; optional ones in
    /// brackets).
    Prompts {
        /// The server's name.
        name: String,
    },
    /// Fill in a server's prompt and print its messages: `art mcp prompt everything
    /// args-prompt city=Lyon`.
    Prompt {
        /// The server's name.
        name: String,
        /// The prompt's name.
        prompt: String,
        /// Its arguments, `NAME=VALUE`.
        #[arg(value_name = "NAME=VALUE")]
        arguments: Vec<String>,
    },
    /// Start a server and list its resources (address, name, type, size).
    Resources {
        /// The server's name.
        name: String,
    },
    /// Read a server's resource: its text on standard output, or its bytes into a file
    /// (to attach with `art run --attach FILE`).
    Read {
        /// The server's name.
        name: String,
        /// The resource's address.
        uri: String,
        /// Write it to this file.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Start a server and call one of its tools: `art mcp call time get_current_time
    /// '{"timezone": "UTC"}'`. Prints what the model would read (`--json`: the whole
    /// result).
    Call {
        /// The server's name.
        name: String,
        /// The tool (its name on the server, or `<server>__<tool>`).
        tool: String,
        /// Its arguments as a JSON object (default `{}`).
        arguments: Option<String>,
        /// Print the whole result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `art mcp add`.
#[derive(clap::Args)]
pub struct AddArgs {
    /// Name: lowercase letters, digits and `-` (its tools are called `<name>__<tool>`).
    name: String,
    /// A streamable HTTP endpoint instead of a command.
    #[arg(long, value_name = "URL", conflicts_with_all = ["env", "cwd"])]
    url: Option<String>,
    /// An HTTP header, `Name: value` (the value goes to the OS keychain).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    headers: Vec<String>,
    /// A variable for the command's environment, `NAME=value`.
    #[arg(long, value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// The command's working directory.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Longest time one call may take, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = art_types::mcp::DEFAULT_CALL_TIMEOUT_SECS)]
    timeout: u32,
    /// For signing in: a client id the server's authorization server gave you for this
    /// app (most servers need none: the app registers itself).
    #[arg(long, value_name = "ID", requires = "url")]
    client_id: Option<String>,
    /// For signing in: the client secret paired with --client-id (goes to the keychain).
    #[arg(long, value_name = "SECRET", requires = "client_id")]
    client_secret: Option<String>,
    /// For signing in: a scope to ask for (repeatable; default: what the server names).
    #[arg(long = "scope", value_name = "SCOPE", requires = "url")]
    scopes: Vec<String>,
    /// For signing in: the https address of a Client ID Metadata Document describing
    /// this app, used as its client id where the authorization server accepts one.
    #[arg(long, value_name = "URL", requires = "url")]
    client_metadata_url: Option<String>,
    /// Save it disabled.
    #[arg(long)]
    disabled: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Run `art mcp <command>`; servers started for it are ended before it returns.
pub async fn mcp(stack: &Standard, command: Command) -> anyhow::Result<ExitCode> {
    let outcome = dispatch(stack, command).await;
    stack.art.mcp.shutdown().await;
    outcome
}

async fn dispatch(stack: &Standard, command: Command) -> anyhow::Result<ExitCode> {
    let mcp = &stack.art.mcp;
    match command {
        Command::List => {
            // A hung server does not hold the list up: it is listed as not answering.
            let checked = tokio::time::timeout(LIST_WAIT, mcp.start_enabled()).await;
            if let Ok(started) = checked {
                started?;
            }
            let statuses = mcp.statuses().await?;
            if statuses.is_empty() {
                sayln!("No MCP servers yet. Add one: art mcp add NAME -- COMMAND ARGS…");
            }
            for status in &statuses {
                sayln!("{}", line(status));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Add(args) => {
            let client_secret = args.client_secret.clone().map(Secret::new);
            let (config, headers) = args.into_config()?;
            if let Err(e) = mcp.store().save(&config, &headers).await {
                return Err(without_keychain(&config, e));
            }
            if client_secret.is_some() {
                mcp.store()
                    .set_client_secret(&config.name, client_secret)
                    .await?;
            }
            sayln!("Saved {}.", config.name);
            if !config.enabled {
                return Ok(ExitCode::SUCCESS);
            }
            report(&mcp.start(&config.name).await?)
        }
        Command::Import { file } => import_file(stack, &file).await,
        Command::Login {
            name,
            no_browser,
            wait,
        } => {
            login(
                stack,
                &name,
                no_browser,
                std::time::Duration::from_secs(wait),
            )
            .await
        }
        Command::Logout { name } => {
            let status = mcp.sign_out(&name).await?;
            sayln!("Signed out of {name}.");
            sayln!("{}", line(&status));
            Ok(ExitCode::SUCCESS)
        }
        Command::Remove { name } => {
            mcp.forget(&name).await;
            if !mcp.store().remove(&name).await? {
                bail!("there is no MCP server named `{name}` (see `art mcp list`)");
            }
            sayln!("Removed {name}.");
            Ok(ExitCode::SUCCESS)
        }
        Command::Enable { name } => set_enabled(stack, &name, true).await,
        Command::Disable { name } => set_enabled(stack, &name, false).await,
        Command::Tools { name, schema } => {
            let status = mcp.start(&name).await?;
            if !matches!(status.state, McpServerState::Ready { .. }) {
                return report(&status);
            }
            for tool in mcp.tools(&name) {
                let summary = tool.description.lines().next().unwrap_or_default();
                match &tool.unusable {
                    None => sayln!("{}  {summary}", tool.tool_name),
                    Some(why) => sayln!("{}  (unusable: {why})", tool.tool_name),
                }
                if schema {
                    sayln!("    {}", tool.input_schema);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Prompts { name } => crate::catalog::prompts(stack, &name).await,
        Command::Prompt {
            name,
            prompt,
            arguments,
        } => crate::catalog::prompt(stack, &name, &prompt, &arguments).await,
        Command::Resources { name } => crate::catalog::resources(stack, &name).await,
        Command::Read { name, uri, out } => {
            crate::catalog::read(stack, &name, &uri, out.as_ref()).await
        }
        Command::Call {
            name,
            tool,
            arguments,
            json,
        } => {
            let arguments: serde_json::Value = match arguments {
                Some(text) => serde_json::from_str(&text).context("the arguments are not JSON")?,
                None => serde_json::json!({}),
            };
            let status = mcp.start(&name).await?;
            if !matches!(status.state, McpServerState::Ready { .. }) {
                return report(&status);
            }
            let limit = status.config.result_limit as usize;
            match mcp.call(&name, &tool, &arguments).await {
                Ok(result) if json => sayln!("{result}"),
                Ok(result) => sayln!("{}", McpTool::model_view(&result, limit)),
                Err(e) => {
                    noteln!("art: {} ({})", e.message, e.code);
                    return Ok(ExitCode::FAILURE);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn set_enabled(stack: &Standard, name: &str, enabled: bool) -> anyhow::Result<ExitCode> {
    let mut config = stack.art.mcp.store().get(name).await?;
    config.enabled = enabled;
    stack
        .art
        .mcp
        .store()
        .save(&config, &BTreeMap::new())
        .await?;
    if enabled {
        report(&stack.art.mcp.start(name).await?)
    } else {
        stack.art.mcp.stop(name).await;
        sayln!("{name} disabled.");
        Ok(ExitCode::SUCCESS)
    }
}

async fn import_file(stack: &Standard, file: &PathBuf) -> anyhow::Result<ExitCode> {
    let text = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    let report = stack
        .art
        .mcp
        .import(&text)
        .await
        .map_err(anyhow::Error::msg)?;
    for name in &report.added {
        match report.renamed.iter().find(|(_, saved)| saved == name) {
            Some((old, _)) => sayln!("Added {name} (named `{old}` in the file)."),
            None => sayln!("Added {name}."),
        }
    }
    for (name, why) in &report.skipped {
        noteln!("art: skipped `{name}`: {why}");
    }
    Ok(if report.skipped.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `art mcp login NAME`: the address printed (and opened), the wait, the account.
async fn login(
    stack: &Standard,
    name: &str,
    no_browser: bool,
    wait: std::time::Duration,
) -> anyhow::Result<ExitCode> {
    use art::tools::mcp::oauth;
    let show = |address: &str| {
        noteln!("Sign in to {name} in your browser:\n  {address}");
        if !no_browser && let Err(why) = oauth::open_in_browser(address) {
            noteln!("({why}: open the address yourself.)");
        }
        noteln!(
            "Waiting for the browser to come back (at most {} s)…",
            wait.as_secs()
        );
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let status = stack.art.mcp.sign_in(name, show, wait, cancel).await?;
    match &status.account {
        Some(account) => sayln!("Signed in to {name}{}.", signed_in_as(account)),
        None => sayln!("Signed in to {name}."),
    }
    report(&status)
}

/// ` as CLIENT at ISSUER (scopes: …)`.
fn signed_in_as(account: &art_types::mcp::McpAccount) -> String {
    let mut text = format!(" as {}", account.client_id);
    if let Some(issuer) = &account.issuer {
        text.push_str(&format!(" at {issuer}"));
    }
    if !account.scopes.is_empty() {
        text.push_str(&format!(" (scopes: {})", account.scopes.join(" ")));
    }
    text
}

/// Say how a start went; failure is exit status 1.
pub(crate) fn report(status: &McpServerStatus) -> anyhow::Result<ExitCode> {
    sayln!("{}", line(status));
    if let McpServerState::SignInNeeded { .. } = &status.state {
        noteln!("  sign in: art mcp login {}", status.config.name);
        return Ok(ExitCode::FAILURE);
    }
    if let McpServerState::Failed { hint, .. } = &status.state {
        if let Some(hint) = hint {
            noteln!("  {hint}");
        }
        for l in status.stderr_tail.iter().rev().take(5).rev() {
            noteln!("  | {l}");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// One server as a line: name, state, how it is reached.
/// A save that failed because the keychain cannot keep a secret: say how to pass the
/// secret from the environment instead (as provider keys are), variable by variable.
fn without_keychain(config: &McpServerConfig, error: art::tools::mcp::McpError) -> anyhow::Error {
    use art::secrets::SecretError;
    use art::tools::mcp::McpError;
    let McpError::Keychain(SecretError::Unavailable { reason, .. }) = &error else {
        return error.into();
    };
    let McpTransport::Stdio { env, .. } = &config.transport else {
        return anyhow::anyhow!(
            "{error}\nHeader values need the keychain; a stdio server can take secrets from \
             the environment instead"
        );
    };
    let secrets: Vec<&String> = env
        .iter()
        .filter(|(k, v)| art_types::mcp::keeps_in_keychain(k, v))
        .map(|(k, _)| k)
        .collect();
    let instead: Vec<String> = secrets
        .iter()
        .map(|name| format!("--env '{name}=${{env:{name}}}'"))
        .collect();
    anyhow::anyhow!(
        "the OS keychain is unavailable ({reason}), so the value of {} cannot be kept.\n\
         Pass it from the environment instead: {} reads it from this process's environment \
         each time the server starts (as provider keys are read), nothing is stored",
        secrets
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        instead.join(" ")
    )
}

/// How long `art mcp list` waits for the enabled servers to answer.
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn line(status: &McpServerStatus) -> String {
    let state = match &status.state {
        McpServerState::Disabled => "disabled".to_owned(),
        McpServerState::Starting => format!(
            "not answering after {} s (still starting, or hung: `art mcp tools {}` waits longer)",
            LIST_WAIT.as_secs(),
            status.config.name
        ),
        McpServerState::Ready { tools: 1, .. } => "ready (1 tool)".to_owned(),
        McpServerState::Ready { tools, .. } => format!("ready ({tools} tools)"),
        McpServerState::SignInNeeded { reason, .. } => format!("sign-in needed: it {reason}"),
        McpServerState::Failed { reason, .. } => format!("failed: {reason}"),
    };
    let state = match &status.account {
        Some(account) => format!(
            "{state}, signed in{}",
            account
                .issuer
                .as_deref()
                .map(|issuer| format!(" at {issuer}"))
                .unwrap_or_default()
        ),
        None => state,
    };
    let reached = match &status.config.transport {
        McpTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        McpTransport::Http { url, .. } => url.clone(),
    };
    format!(
        "{}  {state}  {}  {reached}",
        status.config.name,
        status.config.transport.kind()
    )
}

impl AddArgs {
    fn into_config(self) -> anyhow::Result<(McpServerConfig, BTreeMap<String, Secret>)> {
        let mut headers = BTreeMap::new();
        let transport = match (self.url, self.command.split_first()) {
            (Some(url), None) => {
                for header in &self.headers {
                    let (name, value) = header.split_once(':').with_context(|| {
                        format!("--header {header:?}: write it as `Name: value`")
                    })?;
                    headers.insert(name.trim().to_owned(), Secret::new(value.trim()));
                }
                McpTransport::Http {
                    url,
                    headers: headers.keys().cloned().collect(),
                }
            }
            (None, Some((command, args))) => {
                let mut env = BTreeMap::new();
                for pair in &self.env {
                    let (name, value) = pair
                        .split_once('=')
                        .with_context(|| format!("--env {pair:?}: write it as `NAME=value`"))?;
                    env.insert(name.to_owned(), value.to_owned());
                }
                McpTransport::Stdio {
                    command: command.clone(),
                    args: args.to_vec(),
                    env,
                    cwd: self.cwd,
                    secret_env: Vec::new(),
                }
            }
            (Some(_), Some(_)) => bail!("give either --url or a command after `--`, not both"),
            (None, None) => {
                bail!("give the command after `--` (art mcp add NAME -- COMMAND ARGS…) or --url")
            }
        };
        let mut config = McpServerConfig::new(self.name, transport);
        config.oauth = art_types::mcp::McpOAuth {
            client_id: self.client_id,
            client_secret: self.client_secret.is_some(),
            scopes: self.scopes,
            client_metadata_url: self.client_metadata_url,
        };
        config.enabled = !self.disabled;
        config.timeout_secs = self.timeout;
        Ok((config, headers))
    }
}
