//! The first run: with no thread yet, the welcome page checks in order whether Ollama
//! answers (at the Models page's address), whether it has a model, and whether a remote
//! provider has a key, then offers the one next step that gets the user chatting —
//! start with the model there is, pull a small one (with its progress), add a key, or
//! install and start Ollama (said for this OS). When a step succeeds its model becomes
//! the default for new threads and a thread opens on it, ready to be asked.

use art_types::attachment::human_size;
use art_types::commands as cmd;
use art_types::models::{PullPhase, PullState, SUGGESTED, same_model};
use art_types::{IpcError, KeyState, ThreadSummary};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::ipc;
use crate::shell::{Pane, Shell};
use crate::store::Store;
use crate::views::models::{phase_name, pull_line};

/// The model offered for a first pull.
const FIRST: &str = "llama3.2:3b";
/// How often a first pull's progress is asked for.
const POLL: std::time::Duration = std::time::Duration::from_millis(400);

/// What the checks found.
#[derive(Clone)]
struct Found {
    /// The Ollama server asked (the Models page's).
    ollama: String,
    /// The name of the provider entry that speaks to Ollama.
    ollama_provider: String,
    /// Ollama answered.
    answered: bool,
    /// Its installed models.
    models: Vec<String>,
    /// The first remote provider with a key.
    remote: Option<String>,
}

async fn check() -> Result<Found, IpcError> {
    let ollama = ipc::call(&cmd::OllamaAddress { base_url: None }).await?;
    let report = ipc::call(&cmd::OllamaDoctor {
        base_url: Some(ollama.clone()),
        model: None,
    })
    .await?;
    let providers = ipc::call(&cmd::ListProviders {}).await?;
    let ollama_provider = providers
        .iter()
        .find(|p| p.kind == art_types::AdapterKind::Ollama)
        .map(|p| p.name.clone())
        .unwrap_or_default();
    let remote = providers
        .iter()
        .find(|p| !p.is_local && matches!(p.key, KeyState::Set | KeyState::FromEnvironment))
        .map(|p| p.name.clone());
    Ok(Found {
        ollama,
        ollama_provider,
        answered: report.version.is_some(),
        models: report.models.into_iter().map(|m| m.id).collect(),
        remote,
    })
}

/// Open a new thread on `provider`'s `model`, and make that model what new threads
/// start with (the picker's choice: an Ollama model is asked at the Models page's
/// server).
async fn start(provider: String, model: String) -> Result<ThreadSummary, IpcError> {
    let thread = ipc::call(&cmd::CreateThread::default()).await?;
    let chosen = cmd::ChooseModel {
        thread_id: thread.thread_id.clone(),
        provider,
        model,
        make_default: true,
    };
    ipc::call(&chosen).await?;
    Ok(thread)
}

/// How to get Ollama running on `platform` (`linux-x86_64`, `macos-aarch64`, …).
fn install_steps(platform: &str) -> &'static str {
    if platform.starts_with("macos") {
        "Download Ollama for macOS from ollama.com/download, move it to Applications and open it: it runs in the menu bar."
    } else if platform.starts_with("windows") {
        "Download OllamaSetup.exe from ollama.com/download and run it: Ollama starts with Windows and runs in the tray."
    } else {
        "Install it with “curl -fsSL https://ollama.com/install.sh | sh” (it then runs as a service), or start an installed one with “ollama serve”."
    }
}

/// The first-run checks and the step they offer.
#[component]
pub fn FirstRun() -> impl IntoView {
    let store = expect_context::<Store>();
    let shell = expect_context::<Shell>();
    let found = RwSignal::new(None::<Result<Found, IpcError>>);
    let pull = RwSignal::new(None::<PullState>);
    let problem = RwSignal::new(None::<IpcError>);
    let busy = RwSignal::new(false);

    let recheck = move || {
        found.set(None);
        problem.set(None);
        spawn_local(async move {
            found.try_set(Some(check().await));
        });
    };
    recheck();

    let open = move |provider: String, model: String| {
        busy.set(true);
        spawn_local(async move {
            match start(provider, model).await {
                Ok(thread) => {
                    store.threads.update(|ts| ts.insert(0, thread.clone()));
                    store.selected.set(Some(thread.thread_id));
                    shell.pane.set(Pane::Thread);
                }
                Err(e) => {
                    busy.try_set(false);
                    problem.try_set(Some(e));
                }
            }
        });
    };
    let start_remote = move |provider: String| {
        busy.set(true);
        spawn_local(async move {
            let asked = cmd::ListModels {
                provider: provider.clone(),
                base_url: None,
            };
            match ipc::call(&asked).await {
                Ok(models) if !models.is_empty() => open(provider, models[0].id.clone()),
                Ok(_) => {
                    busy.try_set(false);
                    problem.try_set(Some(IpcError::new(
                        art_types::ErrorCode::NotFound,
                        format!("{provider} lists no models for this key"),
                    )));
                }
                Err(e) => {
                    busy.try_set(false);
                    problem.try_set(Some(e));
                }
            }
        });
    };
    // The first pull's progress, asked for until it ends; installed, it opens a thread.
    fn follow(pull: RwSignal<Option<PullState>>, installed: impl Fn() + Copy + 'static) {
        spawn_local(async move {
            let Ok(pulls) = ipc::call(&cmd::ModelPulls {}).await else {
                return;
            };
            let mine = pulls
                .into_iter()
                .find(|p| same_model(&p.progress.model, FIRST));
            let done = mine.as_ref().is_some_and(|p| p.phase == PullPhase::Done);
            let active = mine.as_ref().is_some_and(PullState::is_active);
            if pull.try_set(mine).is_some() {
                return; // The page is gone.
            }
            if done {
                installed();
            } else if active {
                set_timeout(move || follow(pull, installed), POLL);
            }
        });
    }
    let ollama_provider = move || {
        found.with_untracked(|f| {
            f.as_ref()
                .and_then(|f| f.as_ref().ok())
                .map(|f| f.ollama_provider.clone())
                .unwrap_or_default()
        })
    };
    let installed = move || open(ollama_provider(), FIRST.into());
    let pull_first = move || {
        problem.set(None);
        spawn_local(async move {
            match ipc::call(&cmd::PullModel { name: FIRST.into() }).await {
                Ok(_) => follow(pull, installed),
                Err(e) => {
                    problem.try_set(Some(e));
                }
            }
        });
    };
    let platform = move || {
        shell
            .info
            .get()
            .and_then(|i| i.as_ref().ok().map(|i| i.platform.clone()))
            .unwrap_or_default()
    };
    let first_size = StoredValue::new(
        SUGGESTED
            .iter()
            .find(|s| s.name == FIRST)
            .map(|s| human_size(s.size_bytes))
            .unwrap_or_default(),
    );

    let step = move || {
        match found.get() {
        None => view! { <p class="muted" id="first-run-check" data-state="checking">"Looking for Ollama and your API keys…"</p> }.into_any(),
        Some(Err(error)) => view! { <ErrorCard error id="first-run-problem" /> }.into_any(),
        Some(Ok(f)) if f.answered && !f.models.is_empty() => {
            let model = f.models.iter().find(|m| SUGGESTED.iter().any(|s| same_model(m, s.name))).unwrap_or(&f.models[0]).clone();
            let label = format!("Start chatting with {model}");
            view! {
                <p id="first-run-check" data-state="ollama-ready">{format!("Ollama answers at {} with {} model(s) installed.", f.ollama, f.models.len())}</p>
                <button id="start-chatting" class="primary" data-provider=f.ollama_provider.clone() data-model=model.clone() disabled=move || busy.get()
                    on:click=move |_| open(ollama_provider(), model.clone())>{label}</button>
            }.into_any()
        }
        Some(Ok(f)) if f.answered => view! {
            <p id="first-run-check" data-state="ollama-empty">{format!("Ollama answers at {}, but has no model yet.", f.ollama)}</p>
            {move || match pull.get() {
                None => view! {
                    <button id="pull-first" class="primary" data-model=FIRST on:click=move |_| pull_first()>
                        {format!("Pull {FIRST} ({})", first_size.get_value())}
                    </button>
                    <span class="muted small">" a small model that answers and calls tools; others on the Models page"</span>
                }.into_any(),
                Some(p) => view! {
                    <div id="first-pull" class="pull" data-phase=phase_name(&p.phase)>
                        <progress max=p.progress.total().max(1) value=p.progress.completed()></progress>
                        <span class="pull-line">{pull_line(&p)}</span>
                        {matches!(p.phase, PullPhase::Failed { .. } | PullPhase::Cancelled).then(|| view! {
                            <button class="ghost small" id="pull-again" on:click=move |_| pull_first()>"Try again"</button>
                        })}
                    </div>
                }.into_any(),
            }}
        }.into_any(),
        Some(Ok(f)) => {
            let remote = f.remote.clone();
            view! {
                <p id="first-run-check" data-state="no-ollama">{format!("Ollama does not answer at {}.", f.ollama)}</p>
                {remote.map(|provider| {
                    let label = format!("Start chatting with {provider}");
                    view! {
                        <button id="start-chatting" class="primary" data-provider=provider.clone() disabled=move || busy.get()
                            on:click=move |_| start_remote(provider.clone())>{label}</button>
                        <p class="muted small">"Or run models on this machine:"</p>
                    }
                })}
                <p id="install-ollama">{move || install_steps(&platform())}</p>
                <div class="first-run-actions">
                    <button id="check-again" class="ghost" on:click=move |_| recheck()>"Check again"</button>
                    <button id="add-key" class="ghost" on:click=move |_| shell.pane.set(Pane::Providers)>"Add an API key instead"</button>
                </div>
            }.into_any()
        }
    }
    };

    view! {
        <div class="first-run" id="first-run">
            <h2>"Get chatting"</h2>
            {step}
            {move || problem.get().map(|error| view! { <ErrorCard error id="first-run-problem" /> })}
        </div>
    }
}
