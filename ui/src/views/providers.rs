//! Providers: for each, its base URL and API key state (the key goes to the OS keychain
//! and is never shown again), a Test button (a real model-list call) and, for Ollama,
//! the doctor's findings with how to fix each.

use art_types::commands as cmd;
use art_types::{DoctorReport, IpcError, KeyState, ProviderInfo, Severity};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::ipc;

fn key_label(state: &KeyState, variable: &str) -> String {
    match state {
        KeyState::NotNeeded => "no key needed".into(),
        KeyState::Set => "key set (in the OS keychain)".into(),
        KeyState::FromEnvironment => format!("key from ${variable}"),
        KeyState::NotSet => "no key".into(),
        KeyState::Unavailable { reason } => format!("keychain unavailable: {reason}"),
    }
}

/// One provider's row.
#[component]
fn ProviderRow(info: ProviderInfo) -> impl IntoView {
    let name = StoredValue::new(info.name.clone());
    let key_state = RwSignal::new(info.key.clone());
    let draft = RwSignal::new(String::new());
    // How the last action went: a short note when it worked, the failure when not.
    let note = RwSignal::new(None::<Result<String, IpcError>>);
    let doctor = RwSignal::new(None::<DoctorReport>);
    let variable = info.key_variable.clone();
    // Answers may arrive after the page was left (a slow provider): signals are only
    // touched with `try_` from async work, which does nothing once they are gone.
    let show = move |result: Result<KeyState, IpcError>| match result {
        Ok(state) => {
            key_state.try_set(state);
            draft.try_set(String::new());
            note.try_set(None);
        }
        Err(e) => {
            note.try_set(Some(Err(e)));
        }
    };
    let save = move |_| {
        let key = draft.get_untracked();
        let provider = name.get_value();
        spawn_local(async move {
            show(ipc::call(&cmd::SetApiKey { provider, key }).await);
        });
    };
    let delete = move |_| {
        let provider = name.get_value();
        spawn_local(async move {
            show(ipc::call(&cmd::DeleteApiKey { provider }).await);
        });
    };
    let test = move |_| {
        note.set(Some(Ok("Testing…".into())));
        let provider = name.get_value();
        spawn_local(async move {
            let args = cmd::ListModels {
                provider: provider.clone(),
                base_url: None,
            };
            let result = ipc::call(&args).await;
            note.try_set(Some(
                result.map(|models| format!("Works: {} models available.", models.len())),
            ));
            if provider == "ollama"
                && let Ok(report) = ipc::call(&cmd::OllamaDoctor::default()).await
            {
                doctor.try_set(Some(report));
            }
        });
    };
    let needs_key = !info.is_local;
    view! {
        <section class="card provider" data-provider=info.name.clone()>
            <header class="card-title">
                <strong>{info.name.clone()}</strong>
                <span class="muted small">{info.base_url.clone()}</span>
                <span class="key-state muted small">{move || key_label(&key_state.get(), &variable)}</span>
            </header>
            {needs_key.then(|| view! {
                <div class="key-row">
                    <input type="password" class="key-input" autocomplete="off" placeholder="Paste an API key"
                        prop:value=move || draft.get() on:input=move |ev| draft.set(event_target_value(&ev)) />
                    <button class="primary small save-key" on:click=save>"Save key"</button>
                    <Show when=move || key_state.get() == KeyState::Set>
                        <button class="ghost small delete-key" on:click=delete>"Delete key"</button>
                    </Show>
                </div>
            })}
            <div class="key-row">
                <button class="ghost small test-provider" on:click=test>"Test"</button>
                {move || note.get().and_then(Result::ok).map(|text| view! { <span class="note ok">{text}</span> })}
            </div>
            {move || note.get().and_then(Result::err).map(|error| view! { <ErrorCard error /> })}
            {move || doctor.get().map(|report| view! {
                <ul class="doctor">
                    {report.findings.into_iter().map(|f| {
                        let class = match f.severity { Severity::Ok => "ok", Severity::Warning => "warning", Severity::Error => "error" };
                        view! { <li class=class data-code=f.code.clone()>{f.message}{f.fix.map(|fix| view! { <span class="fix">" " {fix}</span> })}</li> }
                    }).collect_view()}
                </ul>
            })}
        </section>
    }
}

/// The providers page.
#[component]
pub fn Providers() -> impl IntoView {
    let providers = LocalResource::new(|| ipc::call(&cmd::ListProviders {}));
    view! {
        <section class="pane providers" id="providers">
            <h1>"Providers"</h1>
            <p class="muted">"API keys are stored in the OS keychain only. A key is never shown again once saved."</p>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || providers.get().map(|r| match r {
                    Ok(list) => list.into_iter().map(|info| view! { <ProviderRow info=info /> }).collect_view().into_any(),
                    Err(error) => view! { <ErrorCard error /> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
