//! Signing in to an HTTP server that asks for it: the account the app holds there
//! (issuer, client, scopes, until when) with Sign out, or Sign in — the browser opens on
//! the server's sign-in page and the panel waits for it, showing the address to open by
//! hand when no browser opened, with Cancel.

use art_types::commands as cmd;
use art_types::mcp::{McpAccount, McpServerState, McpServerStatus, McpTransport};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::{FormProblem, problem_at};
use crate::ipc;
use crate::store::Store;

/// What the panel says of an account: where, as whom, with what, until when.
pub fn account_line(account: &McpAccount) -> String {
    let mut line = match &account.issuer {
        Some(issuer) => format!("Signed in at {issuer}"),
        None => "Signed in".to_owned(),
    };
    if !account.scopes.is_empty() {
        line.push_str(&format!(" · scopes {}", account.scopes.join(" ")));
    }
    if account.renewable {
        line.push_str(" · renews itself");
    } else if let Some(until) = account.expires_at {
        let until = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(until as f64));
        line.push_str(&format!(
            " · until {}",
            String::from(until.to_locale_time_string("default"))
        ));
    }
    line
}

/// The sign-in panel of `current` (nothing for a stdio server, or one that never asked).
#[component]
pub fn SignInPanel(
    #[prop(into)] current: Signal<Option<McpServerStatus>>,
    problem: RwSignal<FormProblem>,
    on_done: Callback<McpServerStatus>,
) -> impl IntoView {
    let store = expect_context::<Store>();
    let waiting = RwSignal::new(None::<String>);
    let sign_in = move |_| {
        let Some(name) = current.with_untracked(|c| c.as_ref().map(|s| s.config.name.clone()))
        else {
            return;
        };
        store.sign_in_page.set(None);
        problem.set(None);
        waiting.set(Some(name.clone()));
        spawn_local(async move {
            let signed = ipc::call(&cmd::SignInMcpServer { name }).await;
            waiting.set(None);
            store.sign_in_page.set(None);
            match signed {
                Ok(status) => on_done.run(status),
                Err(e) => problem.set(Some(("signIn".into(), e))),
            }
        });
    };
    let cancel = move |_| {
        if let Some(name) = waiting.get_untracked() {
            spawn_local(async move {
                let _ = ipc::call(&cmd::CancelMcpSignIn { name }).await;
            });
        }
    };
    let sign_out = move |_| {
        let Some(name) = current.with_untracked(|c| c.as_ref().map(|s| s.config.name.clone()))
        else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::SignOutMcpServer { name }).await {
                Ok(status) => on_done.run(status),
                Err(e) => problem.set(Some(("signIn".into(), e))),
            }
        });
    };
    move || {
        let status = current.get()?;
        if !matches!(status.config.transport, McpTransport::Http { .. }) {
            return None;
        }
        let asks = match &status.state {
            McpServerState::SignInNeeded { reason, .. } => Some(format!("The server {reason}.")),
            _ => None,
        };
        let account = status.account.clone();
        if account.is_none() && asks.is_none() && waiting.get().is_none() {
            return None;
        }
        let more = account.as_ref().and_then(|a| a.more_scope.clone());
        Some(view! {
            <div class="card sign-in" id="mcp-sign-in-panel">
                {account.map(|a| view! {
                    <p id="mcp-account"><span class="dot ok"></span>" "{account_line(&a)}</p>
                    <p class="muted small">"As client "<code>{a.client_id.clone()}</code>". The tokens are in your OS keychain, never in the app's files or exports."</p>
                })}
                {asks.map(|why| view! { <p id="mcp-sign-in-reason">{why}</p> })}
                {more.map(|scope| view! { <p id="mcp-more-scope">{format!("The server asks for more access ({scope}): sign in again to grant it.")}</p> })}
                <Show when=move || waiting.get().is_some() fallback=move || view! {
                    <div class="form-actions">
                        <button id="mcp-sign-in" class="primary" on:click=sign_in>
                            {move || if current.with(|c| c.as_ref().is_some_and(|s| s.account.is_some())) { "Sign in again" } else { "Sign in" }}
                        </button>
                        <Show when=move || current.with(|c| c.as_ref().is_some_and(|s| s.account.is_some()))>
                            <button id="mcp-sign-out" class="ghost" on:click=sign_out>"Sign out"</button>
                        </Show>
                    </div>
                }>
                    <p id="mcp-waiting">"Waiting for your browser: sign in there, then come back."</p>
                    {move || store.sign_in_page.get().map(|page| view! {
                        <p class="muted small">
                            {page.no_browser.map(|why| format!("No browser opened ({why}). "))}
                            "Sign-in page: "<code id="mcp-sign-in-address" class="selectable">{page.address}</code>
                        </p>
                    })}
                    <button id="mcp-cancel-sign-in" class="ghost" on:click=cancel>"Cancel"</button>
                </Show>
                {problem_at(problem, "signIn")}
            </div>
        })
    }
}
