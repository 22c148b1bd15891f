//! The Tools page: MCP servers — add, edit, remove, enable or disable, "Test" (start
//! again: handshake and tool list), or paste `{"mcpServers": {…}}` JSON — each with its
//! state (starting, ready with N tools, failed with what to do), its last stderr lines
//! and its tools with their descriptions and schemas. Everything a server says is shown
//! as text. Here the page's state and what its buttons do, and the list of servers;
//! `editor` the form of one server, `paste` the JSON import, `state` how a server is
//! shown, `signin` signing in to one that asks, `resources` what a server offers to
//! attach, `form` the form's model.

mod editor;
mod form;
mod paste;
mod resources;
mod signin;
mod state;

use art_types::IpcError;
use art_types::commands as cmd;
use art_types::mcp::{McpImportReport, McpServerState, McpServerStatus, McpToolInfo};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::{FormProblem, field_of, local_problem};
use crate::ipc;
use editor::ServerEditor;
use form::Form;
use paste::PasteJson;
use state::state_line;

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
        let (config, header_values, client_secret) = match request {
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
                client_secret,
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
    let current = Signal::derive(move || {
        let name = open.get()?;
        servers.with(|all| all.iter().find(|s| s.config.name == name).cloned())
    });
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
                        <ServerEditor form problem open busy confirm tools current
                            on_save=Callback::new(save) on_test=Callback::new(test)
                            on_remove=Callback::new(remove) on_signed=Callback::new(settle) />
                    }>
                        <PasteJson json problem busy report on_import=Callback::new(import) />
                    </Show>
                </div>
            </div>
        </section>
    }
}
