//! The thread header's model picker: the thread's model with what it can do, and a
//! searchable list of every provider's models (the ones chosen lately first; Ollama's
//! with their capabilities; a remote provider without a key says so) that switches the
//! thread's model at once, and can make it the default for new threads. A thread whose
//! Ollama model is no longer installed says so and offers the list.

use art_types::commands as cmd;
use art_types::models::{Capability, LocalModel, same_model};
use art_types::provider::BASE_URL_OPTION;
use art_types::{
    AdapterKind, AppSettings, IpcError, KeyState, ModelChoice, ProviderConfig, ProviderInfo,
    ThreadConfig,
};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::ipc;

/// What the open thread's model is and can do, shared by its header and its composer.
#[derive(Clone, Copy)]
pub struct CurrentModel {
    /// The thread's settings, as last read or saved.
    pub config: RwSignal<Option<ThreadConfig>>,
    /// The model as Ollama lists it, when the thread uses Ollama and has it installed.
    pub local: RwSignal<Option<LocalModel>>,
    /// The thread's Ollama model is not installed (deleted since it was chosen).
    pub missing: RwSignal<bool>,
}

impl CurrentModel {
    /// Nothing known yet.
    pub fn new() -> Self {
        Self {
            config: RwSignal::new(None),
            local: RwSignal::new(None),
            missing: RwSignal::new(false),
        }
    }

    /// The thread's model, when it has one.
    pub fn choice(&self) -> Option<ModelChoice> {
        self.config
            .with(|c| c.as_ref().and_then(|c| ModelChoice::of(&c.provider_config)))
    }

    /// Whether the model is known to have `capability`: the thread's own word on images
    /// first, else what Ollama says; `None` when nobody says (remote models, older
    /// Ollama).
    pub fn can(&self, capability: Capability) -> Option<bool> {
        let said = self.config.with(|c| {
            c.as_ref()
                .and_then(|c| c.provider_config.sees_images())
                .filter(|_| capability == Capability::Vision)
        });
        said.or_else(|| {
            self.local
                .with(|m| m.as_ref().and_then(|m| m.can(capability)))
        })
    }

    /// Read thread `thread_id`'s settings and, for an Ollama model, what Ollama says of
    /// it.
    pub fn load(self, thread_id: String) {
        spawn_local(async move {
            if let Ok(config) = ipc::call(&cmd::GetThreadConfig { thread_id }).await {
                self.show(config).await;
            }
        });
    }

    /// Take `config` as the thread's, and ask Ollama about its model.
    async fn show(self, config: ThreadConfig) {
        let ollama = is_ollama(&config.provider_config.provider_name).await;
        let model = config.provider_config.model_id.clone();
        let _ = self.config.try_set(Some(config));
        let (local, missing) = match ollama {
            true if !model.is_empty() => match ipc::call(&cmd::ListLocalModels {}).await {
                Ok(list) => {
                    let found = list.into_iter().find(|m| same_model(&m.id, &model));
                    let missing = found.is_none();
                    (found, missing)
                }
                // Not answering is not "deleted": the run will say what is wrong.
                Err(_) => (None, false),
            },
            _ => (None, false),
        };
        let _ = self.local.try_set(local);
        let _ = self.missing.try_set(missing);
    }
}

/// Whether the provider entry `name` speaks Ollama's protocol.
async fn is_ollama(name: &str) -> bool {
    ipc::call(&cmd::ListProviders {}).await.is_ok_and(|ps| {
        ps.iter()
            .any(|p| p.name == name && p.kind == AdapterKind::Ollama)
    })
}

/// One model in the list.
#[derive(Clone, PartialEq)]
pub(super) struct Entry {
    pub(super) choice: ModelChoice,
    /// What it can do, where known.
    pub(super) badges: Vec<&'static str>,
}

/// A group of the list: the recent models, or one provider's; `None` while it loads,
/// `Err` saying why it lists none (no key, not answering).
#[derive(Clone)]
pub(super) struct Group {
    pub(super) title: String,
    pub(super) id: String,
    pub(super) entries: Option<Result<Vec<Entry>, String>>,
}

/// What a model can do beyond chat, as its badges (none when Ollama does not say).
fn badges(m: &LocalModel) -> Vec<&'static str> {
    m.capability_labels()
        .unwrap_or_default()
        .into_iter()
        .filter(|b| *b != Capability::Completion.label())
        .collect()
}

fn local_entry(provider: &str, m: &LocalModel) -> Entry {
    Entry {
        choice: ModelChoice {
            provider: provider.to_owned(),
            model: m.id.clone(),
        },
        badges: badges(m),
    }
}

/// Where provider `provider`'s models are listed from for a thread on `thread`: the
/// thread's own address when it reaches that provider somewhere else than the provider's
/// default (an OpenAI-compatible server on this machine, say); `None`, the provider's.
pub fn listed_at(provider: &str, thread: Option<&ProviderConfig>) -> Option<String> {
    let thread = thread.filter(|t| t.provider_name == provider)?;
    thread
        .adapter_options
        .get(BASE_URL_OPTION)
        .and_then(|v| v.as_str())
        .filter(|url| !url.trim().is_empty())
        .map(str::to_owned)
}

/// What provider `provider` lists (Ollama's installed models with their capabilities;
/// another provider's from `base_url` when given).
async fn provider_models(
    provider: &ProviderInfo,
    base_url: Option<String>,
) -> Result<Vec<Entry>, String> {
    let name = provider.name.clone();
    if provider.kind == AdapterKind::Ollama {
        return match ipc::call(&cmd::ListLocalModels {}).await {
            Ok(list) if list.is_empty() => {
                Err("No model installed: pull one on the Models page.".to_owned())
            }
            Ok(list) => Ok(list.iter().map(|m| local_entry(&name, m)).collect()),
            Err(e) => Err(format!("Not answering: {}", e.message)),
        };
    }
    if matches!(
        provider.key,
        KeyState::NotSet | KeyState::Unavailable { .. }
    ) {
        return Err("No API key: add one under Providers.".to_owned());
    }
    let asked = cmd::ListModels {
        provider: name.clone(),
        base_url,
    };
    match ipc::call(&asked).await {
        Ok(list) => Ok(list
            .into_iter()
            .map(|m| Entry {
                choice: ModelChoice {
                    provider: name.clone(),
                    model: m.id,
                },
                badges: Vec::new(),
            })
            .collect()),
        Err(e) => Err(format!("Could not list models: {}", e.message)),
    }
}

/// Fill the groups: the recent models and a group per provider at once, each
/// provider's models as its answer arrives (they are asked all at once: a slow remote
/// API holds up only its own group). A recent model takes the badges its provider's
/// list gives it.
pub(super) async fn fill(
    groups: RwSignal<Vec<Group>>,
    settings: &AppSettings,
    thread: Option<ProviderConfig>,
) -> Result<(), IpcError> {
    let providers = ipc::call(&cmd::ListProviders {}).await?;
    let recent: Vec<Entry> = settings
        .recent_models
        .iter()
        .map(|choice| Entry {
            choice: choice.clone(),
            badges: Vec::new(),
        })
        .collect();
    let mut initial = Vec::new();
    if !recent.is_empty() {
        initial.push(Group {
            title: "Recent".to_owned(),
            id: "recent".to_owned(),
            entries: Some(Ok(recent)),
        });
    }
    initial.extend(providers.iter().map(|p| Group {
        title: p.name.clone(),
        id: p.name.clone(),
        entries: None,
    }));
    groups.try_set(initial);
    for provider in providers {
        let base_url = listed_at(&provider.name, thread.as_ref());
        spawn_local(async move {
            let listed = provider_models(&provider, base_url).await;
            groups.try_update(|groups| {
                if let (Ok(found), Some(recent)) =
                    (&listed, groups.iter_mut().find(|g| g.id == "recent"))
                    && let Some(Ok(entries)) = &mut recent.entries
                {
                    for entry in entries.iter_mut() {
                        if let Some(known) = found.iter().find(|f| f.choice == entry.choice) {
                            entry.badges = known.badges.clone();
                        }
                    }
                }
                if let Some(group) = groups.iter_mut().find(|g| g.id == provider.name) {
                    group.entries = Some(listed);
                }
            });
        });
    }
    Ok(())
}

/// The button with the thread's model, and the list it opens.
#[component]
pub fn ModelPicker(thread_id: String) -> impl IntoView {
    let current = expect_context::<CurrentModel>();
    let id = StoredValue::new(thread_id);
    let open = RwSignal::new(false);
    let search = RwSignal::new(String::new());
    let make_default = RwSignal::new(false);
    let listed = RwSignal::new(Vec::<Group>::new());
    let failed = RwSignal::new(None::<IpcError>);
    let settings = RwSignal::new(AppSettings::default());
    let problem = RwSignal::new(None::<String>);
    let search_box = NodeRef::<leptos::html::Input>::new();

    let show_list = move || {
        open.set(true);
        search.set(String::new());
        problem.set(None);
        failed.set(None);
        listed.set(Vec::new());
        spawn_local(async move {
            let loaded = async {
                let s = ipc::call(&cmd::GetAppSettings {}).await?;
                settings.try_set(s.clone());
                let thread = current
                    .config
                    .try_with_untracked(|c| c.as_ref().map(|c| c.provider_config.clone()))
                    .flatten();
                fill(listed, &s, thread).await
            }
            .await;
            if let Err(e) = loaded {
                failed.try_set(Some(e));
            }
        });
    };
    Effect::new(move |_| {
        if let Some(input) = search_box.get() {
            let _ = input.focus();
        }
    });
    let choose = move |choice: ModelChoice| {
        let asked = cmd::ChooseModel {
            thread_id: id.get_value(),
            provider: choice.provider,
            model: choice.model,
            make_default: make_default.get_untracked(),
        };
        spawn_local(async move {
            match ipc::call(&asked).await {
                Ok(config) => {
                    open.try_set(false);
                    current.show(config).await;
                }
                Err(e) => {
                    problem.try_set(Some(e.message));
                }
            }
        });
    };
    let label = move || {
        current
            .choice()
            .map(|c| c.model)
            .unwrap_or_else(|| "Choose a model".to_owned())
    };
    let current_badges = move || {
        current
            .local
            .with(|m| m.as_ref().map(badges).unwrap_or_default())
    };
    let matches = move |entry: &Entry| {
        let wanted = search.with(|s| s.trim().to_lowercase());
        wanted.is_empty()
            || entry.choice.model.to_lowercase().contains(&wanted)
            || entry.choice.provider.to_lowercase().contains(&wanted)
    };
    let group_view = move |group: Group| {
        let entries = match group.entries {
            None => view! { <p class="muted small group-note">"Loading…"</p> }.into_any(),
            Some(Err(note)) => view! { <p class="muted small group-note">{note}</p> }.into_any(),
            Some(Ok(entries)) => {
                let shown: Vec<Entry> = entries.into_iter().filter(|e| matches(e)).collect();
                if shown.is_empty() && !search.with(String::is_empty) {
                    return ().into_any();
                }
                shown
                    .into_iter()
                    .map(|entry| {
                        let is_current = current.choice().as_ref() == Some(&entry.choice);
                        let is_default =
                            settings.with(|s| s.default_model().as_ref() == Some(&entry.choice));
                        let choice = entry.choice.clone();
                        view! {
                            <button class="model-choice" class:current=is_current
                                data-provider=entry.choice.provider.clone() data-model=entry.choice.model.clone()
                                on:click=move |_| choose(choice.clone())>
                                <span class="model-choice-name">{entry.choice.model.clone()}</span>
                                {(group.id == "recent").then(|| view! { <span class="muted small">{entry.choice.provider.clone()}</span> })}
                                {entry.badges.iter().map(|b| view! { <span class="badge" data-capability=*b>{*b}</span> }).collect_view()}
                                {is_default.then(|| view! { <span class="badge default">"default"</span> })}
                            </button>
                        }
                    })
                    .collect_view()
                    .into_any()
            }
        };
        view! {
            <div class="model-group" data-provider=group.id.clone()>
                <h4>{group.title}</h4>
                {entries}
            </div>
        }
        .into_any()
    };

    view! {
        <div class="model-picker">
            <button id="model-picker" class="ghost model-button" class:active=move || open.get()
                title="The model this thread asks; click to choose another"
                on:click=move |_| if open.get_untracked() { open.set(false) } else { show_list() }>
                <span id="model-name">{label}</span>
                {move || current_badges().into_iter().map(|b| view! { <span class="badge" data-capability=b>{b}</span> }).collect_view()}
            </button>
            {move || current.missing.get().then(|| view! {
                <span id="model-missing" class="warning small">
                    {format!("{} is not installed: choose another model, or pull it on the Models page.", label())}
                </span>
            })}
            <Show when=move || open.get()>
                <div id="model-menu" class="model-menu"
                    on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { open.set(false) }>
                    <input id="model-search" node_ref=search_box placeholder="Search models"
                        prop:value=move || search.get() on:input=move |ev| search.set(event_target_value(&ev)) />
                    <label class="small muted">
                        <input id="make-default" type="checkbox" prop:checked=move || make_default.get()
                            on:change=move |ev| make_default.set(event_target_checked(&ev)) />
                        " Also for new threads"
                    </label>
                    {move || problem.get().map(|p| view! { <p class="field-problem" id="model-problem">{p}</p> })}
                    <div class="model-groups">
                        {move || match failed.get() {
                            Some(e) => view! { <p class="field-problem">{e.message}</p> }.into_any(),
                            None => listed.get().into_iter().map(group_view).collect_view().into_any(),
                        }}
                    </div>
                </div>
            </Show>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_own_address_lists_its_providers_models() {
        let mut thread = ProviderConfig {
            provider_name: "openai".into(),
            model_id: "local-model".into(),
            ..ProviderConfig::default()
        };
        assert_eq!(
            listed_at("openai", Some(&thread)),
            None,
            "the provider's own"
        );
        thread
            .adapter_options
            .insert(BASE_URL_OPTION.into(), "http://127.0.0.1:1234/v1".into());
        assert_eq!(
            listed_at("openai", Some(&thread)).as_deref(),
            Some("http://127.0.0.1:1234/v1")
        );
        assert_eq!(
            listed_at("anthropic", Some(&thread)),
            None,
            "another provider"
        );
        assert_eq!(listed_at("openai", None), None);
    }
}
