//! The Tools page: MCP servers — add, edit, remove, enable or disable, "Test" (start
//! again: handshake and tool list), or paste `{"mcpServers": {…}}` JSON — each with its
//! state (starting, ready with N tools, failed with what to do), its last stderr lines
//! and its tools with their descriptions and schemas. Everything a server says is shown
//! as text.

use std::collections::BTreeMap;

use art_types::IpcError;
use art_types::approval::ToolPolicy;
use art_types::commands as cmd;
use art_types::mcp::{
    DEFAULT_CALL_TIMEOUT_SECS, DEFAULT_RESULT_LIMIT, McpImportReport, McpServerConfig,
    McpServerState, McpServerStatus, McpToolInfo, McpTransport, McpTransportKind, is_secret_name,
};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::{FormProblem, field_of, local_problem, problem_at};
use crate::ipc;

/// The form's fields as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// Server name.
    pub name: String,
    /// Which transport the form shows.
    pub transport: McpTransportKind,
    /// Stdio: the command.
    pub command: String,
    /// Stdio: one argument per line.
    pub args: String,
    /// Stdio: `NAME=value` per line.
    pub env: String,
    /// Stdio: working directory.
    pub cwd: String,
    /// HTTP: the endpoint.
    pub url: String,
    /// HTTP: `Name: value` per line (`Name` alone keeps the stored value).
    pub headers: String,
    /// Call timeout in seconds.
    pub timeout: String,
    /// Result limit in characters.
    pub limit: String,
    /// Started with the app.
    pub enabled: bool,
    /// What happens before one of its tools runs, unless a thread says otherwise.
    pub policy: ToolPolicy,
}

impl Default for Form {
    fn default() -> Self {
        Self {
            name: String::new(),
            transport: McpTransportKind::Stdio,
            command: String::new(),
            args: String::new(),
            env: String::new(),
            cwd: String::new(),
            url: String::new(),
            headers: String::new(),
            timeout: DEFAULT_CALL_TIMEOUT_SECS.to_string(),
            limit: DEFAULT_RESULT_LIMIT.to_string(),
            enabled: true,
            policy: ToolPolicy::Ask,
        }
    }
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

impl Form {
    /// The form for a saved server (header values are not shown: they stay in the keychain).
    pub fn from_config(config: &McpServerConfig) -> Self {
        let mut form = Self {
            name: config.name.clone(),
            timeout: config.timeout_secs.to_string(),
            limit: config.result_limit.to_string(),
            enabled: config.enabled,
            policy: config.tool_policy,
            ..Self::default()
        };
        match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                secret_env,
            } => {
                form.command = command.clone();
                form.args = args.join("\n");
                // A secret's name alone: its value stays in the keychain.
                form.env = env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .chain(secret_env.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("\n");
                form.cwd = cwd.clone().unwrap_or_default();
            }
            McpTransport::Http { url, headers } => {
                form.transport = McpTransportKind::Http;
                form.url = url.clone();
                form.headers = headers.join("\n");
            }
        }
        form
    }

    /// The configuration and the new header values, or the field that is wrong.
    pub fn to_request(
        &self,
    ) -> Result<(McpServerConfig, BTreeMap<String, String>), (String, String)> {
        let number = |text: &str, field: &str| {
            text.trim()
                .parse::<u32>()
                .map_err(|_| (field.to_owned(), "a whole number".to_owned()))
        };
        let mut values = BTreeMap::new();
        let transport = if self.transport == McpTransportKind::Http {
            let mut names = Vec::new();
            for line in lines(&self.headers) {
                match line.split_once(':') {
                    Some((name, value)) => {
                        names.push(name.trim().to_owned());
                        values.insert(name.trim().to_owned(), value.trim().to_owned());
                    }
                    None => names.push(line.to_owned()),
                }
            }
            McpTransport::Http {
                url: self.url.trim().to_owned(),
                headers: names,
            }
        } else {
            let (mut env, mut secret_env) = (BTreeMap::new(), Vec::new());
            for line in lines(&self.env) {
                match line.split_once('=') {
                    Some((name, value)) => {
                        env.insert(name.trim().to_owned(), value.to_owned());
                    }
                    // A secret's name alone keeps its stored value.
                    None if is_secret_name(line) => secret_env.push(line.to_owned()),
                    None => {
                        return Err(("env".to_owned(), format!("write `{line}` as NAME=value")));
                    }
                }
            }
            McpTransport::Stdio {
                command: self.command.trim().to_owned(),
                args: lines(&self.args).map(str::to_owned).collect(),
                env,
                cwd: Some(self.cwd.trim().to_owned()).filter(|c| !c.is_empty()),
                secret_env,
            }
        };
        let mut config = McpServerConfig::new(self.name.trim(), transport);
        config.enabled = self.enabled;
        config.timeout_secs = number(&self.timeout, "timeoutSecs")?;
        config.result_limit = number(&self.limit, "resultLimit")?;
        config.tool_policy = self.policy;
        Ok((config, values))
    }
}

/// A server's state in a few words, and the class of its dot.
pub fn state_line(state: &McpServerState) -> (String, &'static str) {
    match state {
        McpServerState::Disabled => ("Disabled".into(), "off"),
        McpServerState::Starting => ("Starting…".into(), "busy"),
        McpServerState::Ready { tools: 1, .. } => ("Ready · 1 tool".into(), "ok"),
        McpServerState::Ready { tools, .. } => (format!("Ready · {tools} tools"), "ok"),
        McpServerState::Failed { reason, .. } => (format!("Failed: {reason}"), "bad"),
    }
}

/// The page.
#[component]
pub fn Tools() -> impl IntoView {
    let servers = RwSignal::new(Vec::<McpServerStatus>::new());
    // The open server; `None`: a new one (or the paste form when `pasting`).
    let open = RwSignal::new(None::<String>);
    let pasting = RwSignal::new(false);
    let form = RwSignal::new(Form::default());
    let tools = RwSignal::new(Vec::<McpToolInfo>::new());
    let problem = RwSignal::new(None::<(String, IpcError)>);
    let busy = RwSignal::new(false);
    let confirm = RwSignal::new(false);
    let json = RwSignal::new(String::new());
    let report = RwSignal::new(None::<McpImportReport>);

    let load_tools = move |name: String| {
        spawn_local(async move {
            tools.set(
                ipc::call(&cmd::ListMcpTools { name })
                    .await
                    .unwrap_or_default(),
            );
        });
    };
    // Reload the list; while a server is starting, look again shortly.
    fn reload(servers: RwSignal<Vec<McpServerStatus>>, problem: RwSignal<FormProblem>) {
        spawn_local(async move {
            match ipc::call(&cmd::ListMcpServers {}).await {
                Ok(list) => {
                    let starting = list.iter().any(|s| s.state == McpServerState::Starting);
                    servers.set(list);
                    if starting {
                        set_timeout(
                            move || reload(servers, problem),
                            std::time::Duration::from_millis(500),
                        );
                    }
                }
                Err(e) => problem.set(Some(("form".into(), e))),
            }
        });
    }
    reload(servers, problem);
    let show = move |status: Option<McpServerStatus>| {
        problem.set(None);
        confirm.set(false);
        pasting.set(false);
        tools.set(Vec::new());
        open.set(status.as_ref().map(|s| s.config.name.clone()));
        form.set(
            status
                .as_ref()
                .map(|s| Form::from_config(&s.config))
                .unwrap_or_default(),
        );
        if let Some(s) = status {
            load_tools(s.config.name);
        }
    };
    let settle = move |status: McpServerStatus| {
        busy.set(false);
        let name = status.config.name.clone();
        open.set(Some(name.clone()));
        form.set(Form::from_config(&status.config));
        load_tools(name);
        reload(servers, problem);
    };
    let save = move |_| {
        let request = form.with_untracked(Form::to_request);
        let (config, header_values) = match request {
            Ok(request) => request,
            Err((field, message)) => return problem.set(Some(local_problem(field, message))),
        };
        problem.set(None);
        busy.set(true);
        let previous_name = open.get_untracked();
        spawn_local(async move {
            match ipc::call(&cmd::SaveMcpServer {
                config,
                header_values,
                previous_name,
            })
            .await
            {
                Ok(status) => settle(status),
                Err(e) => {
                    busy.set(false);
                    problem.set(Some((field_of(&e), e)));
                }
            }
        });
    };
    let test = move |_| {
        let Some(name) = open.get_untracked() else {
            return;
        };
        busy.set(true);
        spawn_local(async move {
            match ipc::call(&cmd::RestartMcpServer { name }).await {
                Ok(status) => settle(status),
                Err(e) => {
                    busy.set(false);
                    problem.set(Some(("form".into(), e)));
                }
            }
        });
    };
    let remove = move |_| {
        let Some(name) = open.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::RemoveMcpServer { name }).await {
                Ok(()) => {
                    show(None);
                    reload(servers, problem);
                }
                Err(e) => problem.set(Some(("form".into(), e))),
            }
        });
    };
    let import = move |_| {
        let text = json.get_untracked();
        busy.set(true);
        spawn_local(async move {
            match ipc::call(&cmd::ImportMcpServers { json: text }).await {
                Ok(done) => {
                    problem.set(None);
                    report.set(Some(done));
                    reload(servers, problem);
                }
                Err(e) => problem.set(Some(("json".into(), e))),
            }
            busy.set(false);
        });
    };
    let current = move || {
        let name = open.get()?;
        servers.with(|all| all.iter().find(|s| s.config.name == name).cloned())
    };
    let text_field = move |id: &'static str,
                           label: &'static str,
                           get: fn(&Form) -> String,
                           set: fn(&mut Form, String),
                           rows: u32| {
        let input = move |ev| form.update(|f| set(f, event_target_value(&ev)));
        view! {
            <label for=id>{label}</label>
            <div>
                {if rows > 1 {
                    view! { <textarea id=id rows=rows prop:value=move || form.with(get) on:input=input></textarea> }.into_any()
                } else {
                    view! { <input id=id prop:value=move || form.with(get) on:input=input /> }.into_any()
                }}
                {problem_at(problem, id)}
            </div>
        }
    };

    view! {
        <section class="pane tools-page" id="tools">
            <h1>"Tools"</h1>
            <p class="muted">"MCP servers give the agent real tools: files, web pages, git, your own scripts. Enable a server's tools per thread in its settings."</p>
            <div class="library">
                <nav class="library-list" id="mcp-server-list">
                    <button id="new-mcp-server" class="primary wide" on:click=move |_| show(None)>"+ Add server"</button>
                    <button id="paste-mcp-json" class="ghost wide" on:click=move |_| { show(None); report.set(None); pasting.set(true); }>"Paste JSON…"</button>
                    <Show when=move || servers.with(Vec::is_empty)>
                        <p class="muted small">"No servers yet."</p>
                    </Show>
                    <For each=move || servers.get() key=|s| format!("{:?}{:?}", s.config, s.state)
                        children=move |status| {
                            let name = status.config.name.clone();
                            let (line, dot) = state_line(&status.state);
                            let is_open = { let name = name.clone(); move || open.get().as_deref() == Some(name.as_str()) };
                            view! {
                                <button class="library-item server-item" class:active=is_open data-server=name.clone() data-state=dot
                                    on:click=move |_| show(Some(status.clone()))>
                                    <span class=format!("dot {dot}")></span>
                                    <span class="server-name">{name.clone()}</span>
                                    <span class="muted small server-state">{line}</span>
                                </button>
                            }
                        } />
                </nav>
                <div class="library-form">
                    <Show when=move || pasting.get() fallback=move || view! {
                        <div class="form-grid">
                            {text_field("mcp-name", "Name", |f| f.name.clone(), |f, v| f.name = v, 1)}
                            {problem_at(problem, "name")}
                            <label for="mcp-transport">"Transport"</label>
                            <div>
                                <select id="mcp-transport" prop:value=move || form.with(|f| f.transport.as_str())
                                    on:change=move |ev| form.update(|f| f.transport = McpTransportKind::parse(&event_target_value(&ev)).unwrap_or(McpTransportKind::Stdio))>
                                    <option value=McpTransportKind::Stdio.as_str()>"Command (stdio)"</option>
                                    <option value=McpTransportKind::Http.as_str()>"URL (streamable HTTP)"</option>
                                </select>
                            </div>
                            <Show when=move || form.with(|f| f.transport == McpTransportKind::Http) fallback=move || view! {
                                {text_field("command", "Command", |f| f.command.clone(), |f, v| f.command = v, 1)}
                                {text_field("args", "Arguments (one per line)", |f| f.args.clone(), |f, v| f.args = v, 3)}
                                {text_field("env", "Environment (NAME=value per line; *_TOKEN, *_KEY, *_SECRET… go to the keychain)", |f| f.env.clone(), |f, v| f.env = v, 2)}
                                {text_field("cwd", "Working directory", |f| f.cwd.clone(), |f, v| f.cwd = v, 1)}
                            }>
                                {text_field("url", "URL", |f| f.url.clone(), |f, v| f.url = v, 1)}
                                {text_field("headers", "Headers (Name: value per line; values go to the keychain)", |f| f.headers.clone(), |f, v| f.headers = v, 2)}
                            </Show>
                            {text_field("timeoutSecs", "Call timeout (s)", |f| f.timeout.clone(), |f, v| f.timeout = v, 1)}
                            {text_field("resultLimit", "Result limit (characters for the model)", |f| f.limit.clone(), |f, v| f.limit = v, 1)}
                            <label for="mcp-policy">"Before a tool runs"</label>
                            <div>
                                <select id="mcp-policy" prop:value=move || form.with(|f| f.policy.as_str())
                                    on:change=move |ev| form.update(|f| f.policy = ToolPolicy::parse(&event_target_value(&ev)).unwrap_or(ToolPolicy::Ask))>
                                    <option value="ask">"Ask me first"</option>
                                    <option value="auto">"Run without asking"</option>
                                    <option value="deny">"Never run"</option>
                                </select>
                                <p class="muted small">"The default for every thread; a thread's settings can choose otherwise for each tool."</p>
                            </div>
                            <span class="label">"Enabled"</span>
                            <div>
                                <label><input type="checkbox" id="mcp-enabled" prop:checked=move || form.with(|f| f.enabled)
                                    on:change=move |ev| form.update(|f| f.enabled = event_target_checked(&ev)) />
                                    " Start it with the app and offer its tools to threads"</label>
                            </div>
                            <span></span>
                            <div class="form-actions">
                                <button id="save-mcp-server" class="primary" on:click=save disabled=move || busy.get()>
                                    {move || if busy.get() { "Starting…" } else if open.get().is_some() { "Save and restart" } else { "Add and start" }}
                                </button>
                                <Show when=move || open.get().is_some()>
                                    <button id="test-mcp-server" class="ghost" on:click=test disabled=move || busy.get()>"Test"</button>
                                    <Show when=move || confirm.get()
                                        fallback=move || view! { <button id="remove-mcp-server" class="ghost" on:click=move |_| confirm.set(true)>"Remove"</button> }>
                                        <button id="confirm-remove-mcp-server" class="danger" on:click=remove>"Remove for good"</button>
                                        <button class="ghost" on:click=move |_| confirm.set(false)>"Keep"</button>
                                    </Show>
                                </Show>
                            </div>
                            {problem_at(problem, "form")}
                            {problem_at(problem, "headers")}
                        </div>
                        {move || current().map(|status| view! { <ServerState status=status tools=tools /> })}
                    }>
                        <div class="form-grid">
                            <label for="mcp-json">"mcpServers JSON"</label>
                            <div>
                                <textarea id="mcp-json" rows="12" placeholder=r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#
                                    prop:value=move || json.get() on:input=move |ev| json.set(event_target_value(&ev))></textarea>
                                <p class="muted small">"As Claude Desktop, Cursor or LM Studio write it. Header values go to the keychain."</p>
                                {problem_at(problem, "json")}
                            </div>
                            <span></span>
                            <div class="form-actions">
                                <button id="import-mcp" class="primary" on:click=import disabled=move || busy.get()>
                                    {move || if busy.get() { "Starting…" } else { "Add these servers" }}
                                </button>
                            </div>
                        </div>
                        {move || report.get().map(|r| view! {
                            <div class="import-report" id="mcp-import-report">
                                <p>{format!("Added {}.", if r.added.is_empty() { "nothing".to_owned() } else { r.added.join(", ") })}</p>
                                {r.renamed.iter().map(|(from, to)| view! { <p class="muted small">{format!("“{from}” is saved as {to}.")}</p> }).collect_view()}
                                {r.skipped.iter().map(|(name, why)| view! { <p class="field-problem">{format!("Skipped “{name}”: {why}")}</p> }).collect_view()}
                            </div>
                        })}
                    </Show>
                </div>
            </div>
        </section>
    }
}

/// A server's state, its last stderr lines and its tools.
#[component]
fn ServerState(status: McpServerStatus, tools: RwSignal<Vec<McpToolInfo>>) -> impl IntoView {
    let (line, dot) = state_line(&status.state);
    let detail = match &status.state {
        McpServerState::Ready {
            protocol_version,
            server_info,
            ..
        } => Some(format!(
            "{} · protocol {protocol_version}",
            server_info.clone().unwrap_or_else(|| "server".into())
        )),
        McpServerState::Failed { hint, .. } => hint.clone(),
        _ => None,
    };
    let stderr = status.stderr_tail.join("\n");
    view! {
        <div class="server-state card" id="mcp-server-state" data-state=dot>
            <p><span class=format!("dot {dot}")></span>" "<strong id="mcp-state-line">{line}</strong></p>
            {detail.map(|d| view! { <p class="muted small" id="mcp-state-detail">{d}</p> })}
            {(!stderr.is_empty()).then(|| view! {
                <details><summary class="muted small">"Its last output (stderr)"</summary><pre class="stderr" id="mcp-stderr">{stderr}</pre></details>
            })}
            <div class="tools" id="mcp-tool-list">
                {move || tools.get().into_iter().map(|tool| {
                    let schema = serde_json::to_string_pretty(&tool.input_schema).unwrap_or_default();
                    view! {
                        <div class="tool-option" class:unavailable=tool.unusable.is_some() data-tool=tool.tool_name.clone()>
                            <strong>{tool.title.clone().unwrap_or_else(|| tool.name.clone())}</strong>
                            <code class="muted small">" "{tool.tool_name.clone()}</code>
                            <p class="small">{tool.description.clone()}</p>
                            {tool.unusable.clone().map(|why| view! { <p class="field-problem">{format!("Unusable: {why}")}</p> })}
                            <details><summary class="muted small">"Schema"</summary><pre>{schema}</pre></details>
                        </div>
                    }
                }).collect_view()}
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_form_becomes_its_config_and_back() {
        let form = Form {
            name: "files".into(),
            command: "npx".into(),
            args: "-y\n@modelcontextprotocol/server-filesystem\n/home/me/My Notes\n".into(),
            env: "TZ=UTC\nEMPTY=".into(),
            ..Form::default()
        };
        let (config, values) = form.to_request().unwrap();
        assert!(values.is_empty());
        let McpTransport::Stdio { args, env, cwd, .. } = &config.transport else {
            panic!()
        };
        assert_eq!(args[2], "/home/me/My Notes");
        assert_eq!(env["EMPTY"], "");
        assert_eq!(*cwd, None);
        assert_eq!(Form::from_config(&config).to_request().unwrap().0, config);
    }

    #[test]
    fn header_values_travel_apart_and_are_never_shown_again() {
        let form = Form {
            name: "remote".into(),
            transport: McpTransportKind::Http,
            url: "https://h/mcp".into(),
            headers: "Authorization: Bearer abc:def\nX-Kept".into(),
            ..Form::default()
        };
        let (config, values) = form.to_request().unwrap();
        assert_eq!(values["Authorization"], "Bearer abc:def");
        assert!(!values.contains_key("X-Kept"));
        let shown = Form::from_config(&config);
        assert_eq!(shown.headers, "Authorization\nX-Kept");
    }

    #[test]
    fn a_secret_variable_is_shown_by_name_only_and_kept_so() {
        let mut config = Form {
            name: "gh".into(),
            command: "gh-mcp".into(),
            ..Form::default()
        }
        .to_request()
        .unwrap()
        .0;
        if let McpTransport::Stdio {
            env, secret_env, ..
        } = &mut config.transport
        {
            env.insert("TZ".into(), "UTC".into());
            secret_env.push("GITHUB_TOKEN".into());
        }
        let form = Form::from_config(&config);
        assert_eq!(form.env, "TZ=UTC\nGITHUB_TOKEN");
        assert_eq!(form.to_request().unwrap().0, config);
    }

    #[test]
    fn bad_fields_are_named() {
        let form = Form {
            env: "NOEQUALS".into(),
            ..Form::default()
        };
        assert_eq!(form.to_request().unwrap_err().0, "env");
        let form = Form {
            timeout: "soon".into(),
            ..Form::default()
        };
        assert_eq!(form.to_request().unwrap_err().0, "timeoutSecs");
    }
}
