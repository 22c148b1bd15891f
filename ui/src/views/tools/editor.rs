//! The form of one server: name, transport and how it is reached, limits, the default
//! policy of its tools, enabled; save (and start), test (start again), remove; then its
//! state, what it said and its tools.

use art_types::approval::ToolPolicy;
use art_types::mcp::{McpServerStatus, McpToolInfo, McpTransportKind};
use leptos::prelude::*;

use super::form::Form;
use super::signin::SignInPanel;
use super::state::ServerState;
use crate::components::error_card::{FormProblem, problem_at};

/// A labelled text input (or text area when `rows > 1`) bound to one field of `form`,
/// with the field's problem under it.
fn text_field(
    form: RwSignal<Form>,
    problem: RwSignal<FormProblem>,
    id: &'static str,
    label: &'static str,
    get: fn(&Form) -> String,
    set: fn(&mut Form, String),
    rows: u32,
) -> impl IntoView {
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
}

/// The open server's form (`open`: its saved name; `None` for a new server) and, below
/// it, the server as it runs (`current`).
#[component]
pub fn ServerEditor(
    form: RwSignal<Form>,
    problem: RwSignal<FormProblem>,
    open: RwSignal<Option<String>>,
    busy: RwSignal<bool>,
    confirm: RwSignal<bool>,
    tools: RwSignal<Vec<McpToolInfo>>,
    #[prop(into)] current: Signal<Option<McpServerStatus>>,
    on_save: Callback<()>,
    on_test: Callback<()>,
    on_remove: Callback<()>,
    on_signed: Callback<McpServerStatus>,
) -> impl IntoView {
    let text_field =
        move |id, label, get, set, rows| text_field(form, problem, id, label, get, set, rows);
    let save = move |_| on_save.run(());
    let test = move |_| on_test.run(());
    let remove = move |_| on_remove.run(());
    view! {
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
                <span class="label">"Sign-in"</span>
                <details id="mcp-oauth-settings">
                    <summary class="muted small">"Most servers need nothing here: the app finds where to sign in and registers itself."</summary>
                    <div class="form-grid">
                        {text_field("clientId", "Client id (given to you by the server's owner)", |f| f.client_id.clone(), |f, v| f.client_id = v, 1)}
                        <label for="clientSecret">"Client secret (goes to the keychain)"</label>
                        <div>
                            <input id="clientSecret" type="password" autocomplete="off"
                                placeholder=move || if form.with(|f| f.has_client_secret) { "kept — type to replace" } else { "" }
                                prop:value=move || form.with(|f| f.client_secret.clone())
                                on:input=move |ev| form.update(|f| f.client_secret = event_target_value(&ev)) />
                        </div>
                        {text_field("scopes", "Scopes (space-separated; default: what the server asks)", |f| f.scopes.clone(), |f, v| f.scopes = v, 1)}
                        {text_field("clientMetadataUrl", "Client ID Metadata Document (https address)", |f| f.metadata_url.clone(), |f, v| f.metadata_url = v, 1)}
                    </div>
                    {problem_at(problem, "oauth")}
                </details>
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
        <SignInPanel current problem on_done=on_signed />
        {move || current.get().map(|status| view! { <ServerState status=status tools=tools /> })}
    }
}
