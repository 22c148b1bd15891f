//! A thread's settings form: provider and model (the list fetched from the provider),
//! whether the model sees images, system prompt, enabled tools (with descriptions,
//! schemas and their token cost) and generation parameters. Saved per thread; the
//! backend validates and every problem is shown next to its field.

use art_types::approval::ToolPolicy;
use art_types::commands as cmd;
use art_types::models::Capability;
use art_types::{
    IpcError, ModelInfo, ProviderInfo, SavedPrompt, StateSavingStrategy, ThreadConfig, ToolCalling,
    ToolSchema,
};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde::Deserialize;

use crate::components::error_card::ErrorCard;
use crate::ipc;
use crate::views::agent_settings::AgentSettings;
use crate::views::thread::picker::CurrentModel;
use crate::views::thread_knowledge::ThreadKnowledge;
use crate::views::tool_picker::{ToolPicker, token_cost};

use art_types::provider::BASE_URL_OPTION as BASE_URL;

#[derive(Deserialize)]
struct Problem {
    field: String,
    message: String,
}

/// The select value of a saving strategy (`""` = the app's default).
fn strategy_value(strategy: Option<StateSavingStrategy>) -> &'static str {
    match strategy {
        None => "",
        Some(StateSavingStrategy::Explicit) => "explicit",
        Some(StateSavingStrategy::Implicit) => "implicit",
    }
}

fn strategy_from(value: &str) -> Option<StateSavingStrategy> {
    match value {
        "explicit" => Some(StateSavingStrategy::Explicit),
        "implicit" => Some(StateSavingStrategy::Implicit),
        _ => None,
    }
}

fn parse_opt<T: std::str::FromStr>(text: &str) -> Result<Option<T>, ()> {
    match text.trim() {
        "" => Ok(None),
        t => t.parse().map(Some).map_err(drop),
    }
}

/// The form. `on_close` hides it.
#[component]
pub fn ThreadSettings(thread_id: String, on_close: Callback<()>) -> impl IntoView {
    let id = StoredValue::new(thread_id);
    let config = RwSignal::new(None::<ThreadConfig>);
    let providers = RwSignal::new(Vec::<ProviderInfo>::new());
    let tools = RwSignal::new(Vec::<ToolSchema>::new());
    let library = RwSignal::new(Vec::<SavedPrompt>::new());
    let models = RwSignal::new(Vec::<ModelInfo>::new());
    let model_note = RwSignal::new(None::<String>);
    let problems = RwSignal::new(Vec::<(String, String)>::new());
    // A failure that is no field's (loading, or saving refused as a whole).
    let failure = RwSignal::new(None::<IpcError>);
    let saved = RwSignal::new(false);
    // Free-text numeric fields, parsed on save.
    let temperature = RwSignal::new(String::new());
    let max_tokens = RwSignal::new(String::new());
    let history = RwSignal::new(String::new());
    let window = RwSignal::new(String::new());

    // Only the latest request's answer counts (an older, slower one must not win).
    let fetches = StoredValue::new(0u32);
    // Called from async tasks too: the form may be gone by then (closed), so nothing here
    // may touch a disposed value.
    let fetch_models = move |provider: String| {
        let Some(mine) = fetches.try_update_value(|n| {
            *n += 1;
            *n
        }) else {
            return;
        };
        models.set(Vec::new());
        model_note.set(Some("Loading models…".into()));
        let base = config
            .try_with_untracked(|c| {
                c.as_ref()
                    .and_then(|c| c.provider_config.adapter_options.get(BASE_URL))
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            })
            .flatten();
        spawn_local(async move {
            let args = cmd::ListModels {
                provider,
                base_url: base,
            };
            let answer = ipc::call(&args).await;
            if fetches.try_get_value() != Some(mine) {
                return;
            }
            match answer {
                Ok(list) => {
                    model_note.set(
                        list.is_empty()
                            .then(|| "The provider lists no models.".into()),
                    );
                    models.set(list);
                }
                Err(e) => model_note.set(Some(format!("Could not list models: {}", e.message))),
            }
        });
    };
    spawn_local(async move {
        let loaded: Result<_, IpcError> = async {
            let thread_id = id.get_value();
            let c = ipc::call(&cmd::GetThreadConfig { thread_id }).await?;
            let p = ipc::call(&cmd::ListProviders {}).await?;
            let t = ipc::call(&cmd::ListTools {}).await?;
            let l = ipc::call(&cmd::ListPrompts {}).await?;
            Ok((c, p, t, l))
        }
        .await;
        match loaded {
            Ok((c, p, t, l)) => {
                library.set(l);
                temperature.set(
                    c.generation
                        .temperature
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                );
                max_tokens.set(
                    c.generation
                        .max_tokens
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                );
                history.set(c.history_limit.to_string());
                window.set(c.context_window.map(|n| n.to_string()).unwrap_or_default());
                let provider = c.provider_config.provider_name.clone();
                config.set(Some(c));
                if !provider.is_empty() {
                    fetch_models(provider);
                }
                providers.set(p);
                tools.set(t);
            }
            Err(e) => failure.set(Some(e)),
        }
    });

    // Said at once: tools enabled, natively, for a model Ollama says cannot call them.
    let model = use_context::<CurrentModel>();
    let no_native_tools = move || {
        let native_with_tools = config.with(|c| {
            c.as_ref().is_some_and(|c| {
                !c.enabled_tools.is_empty() && c.tool_calling == ToolCalling::Native
            })
        });
        native_with_tools && model.is_some_and(|m| m.can(Capability::Tools) == Some(false))
    };
    let problem_for = move |field: &'static str| {
        move || {
            problems.with(|ps| {
                ps.iter()
                    .filter(|(f, _)| f.starts_with(field))
                    .map(|(_, m)| view! { <p class="field-problem" data-field=field>{m.clone()}</p> })
                    .collect_view()
            })
        }
    };
    let edit = move |change: &dyn Fn(&mut ThreadConfig)| {
        saved.set(false);
        config.update(|c| {
            if let Some(c) = c {
                change(c);
            }
        });
    };
    // The form's settings with its free-text fields parsed; `None` (each problem shown
    // at its field) when one does not parse.
    let collect = move || {
        let mut c = config.get_untracked()?;
        let mut local = Vec::new();
        match parse_opt::<f64>(&temperature.get_untracked()) {
            Ok(t) => c.generation.temperature = t,
            Err(()) => local.push((
                "generation.temperature".to_owned(),
                "temperature must be a number".to_owned(),
            )),
        }
        match parse_opt::<u32>(&max_tokens.get_untracked()) {
            Ok(n) => c.generation.max_tokens = n,
            Err(()) => local.push((
                "generation.maxTokens".to_owned(),
                "max tokens must be a whole number".to_owned(),
            )),
        }
        match parse_opt::<u32>(&window.get_untracked()) {
            Ok(n) => c.context_window = n,
            Err(()) => local.push((
                "contextWindow".to_owned(),
                "the context window must be a whole number of tokens".to_owned(),
            )),
        }
        match parse_opt::<u32>(&history.get_untracked()) {
            Ok(n) => c.history_limit = n.unwrap_or(art_types::thread::DEFAULT_HISTORY_LIMIT),
            Err(()) => local.push((
                "historyLimit".to_owned(),
                "the history limit must be a whole number".to_owned(),
            )),
        }
        if !local.is_empty() {
            problems.set(local);
            return None;
        }
        Some(c)
    };
    let refused = move |e: IpcError| {
        let listed: Vec<Problem> = e
            .details
            .get("problems")
            .and_then(|p| serde_json::from_value(p.clone()).ok())
            .unwrap_or_default();
        if listed.is_empty() {
            failure.set(Some(e));
        } else {
            failure.set(None);
            problems.set(listed.into_iter().map(|p| (p.field, p.message)).collect());
        }
    };
    let save = move |_| {
        let Some(c) = collect() else {
            return;
        };
        spawn_local(async move {
            let args = cmd::SetThreadConfig {
                thread_id: id.get_value(),
                config: c,
            };
            match ipc::call(&args).await {
                Ok(stored) => {
                    problems.set(Vec::new());
                    failure.set(None);
                    config.set(Some(stored));
                    saved.set(true);
                }
                Err(e) => refused(e),
            }
        });
    };
    // These settings (as the form shows them, saved or not) for every new thread.
    let defaults_saved = RwSignal::new(false);
    let save_defaults = move |_| {
        let Some(c) = collect() else {
            return;
        };
        defaults_saved.set(false);
        spawn_local(async move {
            match ipc::call(&cmd::SetNewThreadDefaults { config: c }).await {
                Ok(_) => {
                    problems.set(Vec::new());
                    failure.set(None);
                    defaults_saved.set(true);
                }
                Err(e) => refused(e),
            }
        });
    };

    let provider_name = move || {
        config.with(|c| {
            c.as_ref()
                .map(|c| c.provider_config.provider_name.clone())
                .unwrap_or_default()
        })
    };
    let model_id = move || {
        config.with(|c| {
            c.as_ref()
                .map(|c| c.provider_config.model_id.clone())
                .unwrap_or_default()
        })
    };
    let enabled = move |name: &str| {
        config.with(|c| {
            c.as_ref()
                .is_some_and(|c| c.enabled_tools.iter().any(|t| t == name))
        })
    };
    // A memo: only a change of the enabled tools reaches the tool list.
    let enabled_list = Signal::from(Memo::new(move |_| {
        config.with(|c| {
            c.as_ref()
                .map(|c| c.enabled_tools.clone())
                .unwrap_or_default()
        })
    }));
    let policies = Signal::from(Memo::new(move |_| {
        config.with(|c| {
            c.as_ref()
                .map(|c| c.tool_policies.clone())
                .unwrap_or_default()
        })
    }));
    let cost = move || {
        tools.with(|ts| {
            ts.iter()
                .filter(|t| enabled(&t.name))
                .map(token_cost)
                .sum::<usize>()
        })
    };

    view! {
        <section class="settings card" id="thread-settings">
            <header class="card-title">
                <strong>"Thread settings"</strong>
                <button class="ghost small" on:click=move |_| on_close.run(())>"Close"</button>
            </header>
            {move || failure.get().map(|error| view! { <ErrorCard error /> })}
            <Show when=move || config.with(Option::is_some) fallback=|| view! { <p class="muted">"Loading…"</p> }>
                <div class="settings-body"><div class="form-grid">
                    <label for="provider-select">"Provider"</label>
                    <div>
                        <select id="provider-select" prop:value=provider_name
                            on:change=move |ev| {
                                let name = event_target_value(&ev);
                                edit(&|c| c.provider_config.provider_name = name.clone());
                                if !name.is_empty() { fetch_models(name); }
                            }>
                            <option value="">"Choose…"</option>
                            {move || providers.get().into_iter().map(|p| {
                                let label = if p.is_local { format!("{} (local)", p.name) } else { p.name.clone() };
                                view! { <option value=p.name.clone() selected=p.name == provider_name()>{label}</option> }
                            }).collect_view()}
                        </select>
                        {problem_for("providerConfig.providerName")}
                    </div>
                    <label for="base-url-input">"Base URL"</label>
                    <div>
                        <input id="base-url-input" placeholder="provider default"
                            prop:value=move || config.with(|c| c.as_ref()
                                .and_then(|c| c.provider_config.adapter_options.get(BASE_URL))
                                .and_then(|v| v.as_str()).unwrap_or_default().to_owned())
                            on:input=move |ev| {
                                let url = event_target_value(&ev);
                                edit(&|c| {
                                    let options = &mut c.provider_config.adapter_options;
                                    match url.trim() {
                                        "" => { options.remove(BASE_URL); }
                                        u => { options.insert(BASE_URL.into(), u.into()); }
                                    }
                                });
                            }
                            on:change=move |_| { let p = provider_name(); if !p.is_empty() { fetch_models(p); } } />
                        {problem_for("providerConfig.adapterOptions")}
                    </div>
                    <label for="model-input">"Model"</label>
                    <div>
                        <input id="model-input" list="model-options" placeholder="e.g. llama3.2"
                            prop:value=model_id
                            on:input=move |ev| { let m = event_target_value(&ev); edit(&|c| c.provider_config.model_id = m.clone()); }
                            on:change=move |ev| { let m = event_target_value(&ev); edit(&|c| c.provider_config.model_id = m.clone()); } />
                        <datalist id="model-options">
                            {move || models.get().into_iter().map(|m| {
                                let label = m.display_name.clone().unwrap_or_default();
                                view! { <option value=m.id.clone()>{label}</option> }
                            }).collect_view()}
                        </datalist>
                        // Its line is kept while empty: a note coming and going would move the form
                        // under the pointer (the tool list below it most of all).
                        <p class="muted small model-note" id="model-note">{move || model_note.get().unwrap_or_default()}</p>
                        {problem_for("providerConfig.modelId")}
                    </div>
                    <label for="images-select">"Images"</label>
                    <div>
                        <select id="images-select"
                            prop:value=move || config.with(|c| match c.as_ref()
                                .and_then(|c| c.provider_config.sees_images()) {
                                Some(true) => "yes",
                                Some(false) => "no",
                                None => "",
                            })
                            on:change=move |ev| {
                                let sees = match event_target_value(&ev).as_str() {
                                    "yes" => Some(true),
                                    "no" => Some(false),
                                    _ => None,
                                };
                                edit(&|c| c.provider_config.set_sees_images(sees));
                            }>
                            <option value="">"As the model says"</option>
                            <option value="yes">"The model sees images"</option>
                            <option value="no">"The model does not see images"</option>
                        </select>
                        <p class="muted small">
                            "Ollama says which of its models see images. Other providers are trusted to: "
                            "for a text-only model, choose “does not” and a question with an image is "
                            "refused before it is sent, instead of failing at the provider."
                        </p>
                        {problem_for("providerConfig.adapterOptions.vision")}
                    </div>
                    <label for="library-prompt">"Library prompt"</label>
                    <div>
                        <select id="library-prompt"
                            prop:value=move || config.with(|c| c.as_ref().and_then(|c| c.prompt_id.clone()).unwrap_or_default())
                            on:change=move |ev| {
                                let id = event_target_value(&ev);
                                edit(&|c| c.prompt_id = (!id.is_empty()).then(|| id.clone()));
                            }>
                            <option value="">"None (the app's default)"</option>
                            {move || library.get().into_iter().map(|p| view! {
                                <option value=p.prompt_id.clone()>{p.name.clone()}</option>
                            }).collect_view()}
                        </select>
                        <p class="muted small">"Named prompts are kept in the prompt library (in the sidebar)."</p>
                        {problem_for("promptId")}
                    </div>
                    <label for="system-prompt">"Thread prompt"</label>
                    <div>
                        <textarea id="system-prompt" rows="4"
                            placeholder="Optional. Written here, it replaces the library prompt for this thread."
                            prop:value=move || config.with(|c| c.as_ref().and_then(|c| c.system_prompt.clone()).unwrap_or_default())
                            on:input=move |ev| {
                                let text = event_target_value(&ev);
                                edit(&|c| c.system_prompt = (!text.trim().is_empty()).then(|| text.clone()));
                            }></textarea>
                        <p class="muted small">
                            "Order of precedence: a prompt given with one message, then this thread's prompt, "
                            "then the library prompt it picked, then the app's default — always on top of "
                            "the agent's own instructions (always kept)."
                        </p>
                        {problem_for("systemPrompt")}
                    </div>
                    <span class="label">"Tools"</span>
                    <div class="tools" id="tool-list">
                        <ToolPicker tools=tools enabled_list=enabled_list toggle=Callback::new(move |(tool, on): (String, bool)| {
                            edit(&|c| {
                                c.enabled_tools.retain(|t| *t != tool);
                                if on { c.enabled_tools.push(tool.clone()); }
                            });
                        }) policies=policies set_policy=Callback::new(move |(tool, policy): (String, Option<ToolPolicy>)| {
                            edit(&|c| match policy {
                                Some(p) => { c.tool_policies.insert(tool.clone(), p); }
                                None => { c.tool_policies.remove(&tool); }
                            });
                        }) />
                        {move || no_native_tools().then(|| view! {
                            <p class="warning small" id="tools-note">
                                {format!("{} does not call tools natively: ", model.and_then(|m| m.choice()).map(|c| c.model).unwrap_or_default())}
                                <button id="offer-text-tools" class="link small" on:click=move |_| edit(&|c| c.tool_calling = ToolCalling::Text)>
                                    "describe them in the prompt instead"
                                </button>
                            </p>
                        })}
                        <p class="muted small" id="tool-cost">{move || format!("Enabled schemas add about {} tokens to each planning call.", cost())}</p>
                        {problem_for("enabledTools")}
                    </div>
                    <ThreadKnowledge config=config edited=Callback::new(move |()| saved.set(false)) />
                    <AgentSettings config=config edited=Callback::new(move |()| saved.set(false))
                        problem_for=Callback::new(move |field: &'static str| problem_for(field).into_any()) />
                    <label for="temperature">"Temperature"</label>
                    <div>
                        <input id="temperature" inputmode="decimal" placeholder="provider default (0–2)"
                            prop:value=move || temperature.get() on:input=move |ev| { saved.set(false); temperature.set(event_target_value(&ev)) }
                            on:change=move |ev| { saved.set(false); temperature.set(event_target_value(&ev)) } />
                        {problem_for("generation.temperature")}
                    </div>
                    <label for="max-tokens">"Max tokens"</label>
                    <div>
                        <input id="max-tokens" inputmode="numeric" placeholder="provider default"
                            prop:value=move || max_tokens.get() on:input=move |ev| { saved.set(false); max_tokens.set(event_target_value(&ev)) }
                            on:change=move |ev| { saved.set(false); max_tokens.set(event_target_value(&ev)) } />
                        {problem_for("generation.maxTokens")}
                    </div>
                    <label for="history-limit">"History limit"</label>
                    <div>
                        <input id="history-limit" inputmode="numeric"
                            prop:value=move || history.get() on:input=move |ev| { saved.set(false); history.set(event_target_value(&ev)) }
                            on:change=move |ev| { saved.set(false); history.set(event_target_value(&ev)) } />
                        <p class="muted small">"How many past messages go with each question."</p>
                        {problem_for("historyLimit")}
                    </div>
                    <label for="context-window">"Context window"</label>
                    <div>
                        <input id="context-window" inputmode="numeric" placeholder="tokens (Ollama: asked of the server)"
                            prop:value=move || window.get() on:input=move |ev| { saved.set(false); window.set(event_target_value(&ev)) }
                            on:change=move |ev| { saved.set(false); window.set(event_target_value(&ev)) } />
                        <p class="muted small">"The model's context size: older messages that would not fit are left out, and the answer says so. Empty: Ollama's num_ctx, else what the Ollama server reports; no limit for other providers."</p>
                        {problem_for("contextWindow")}
                    </div>
                    <label for="state-saving">"Agent state"</label>
                    <div>
                        <select id="state-saving"
                            prop:value=move || config.with(|c| strategy_value(c.as_ref().and_then(|c| c.state_saving)))
                            on:change=move |ev| {
                                let chosen = strategy_from(&event_target_value(&ev));
                                edit(&|c| c.state_saving = chosen);
                            }>
                            <option value="">"App default (saved when a tool saves it)"</option>
                            <option value="explicit">"Saved when a tool saves it"</option>
                            <option value="implicit">"Saved after every run that changed it"</option>
                        </select>
                        <p class="muted small">"What the agent keeps between runs, such as the calculator's "<code>"ans"</code>"."</p>
                        {problem_for("stateSaving")}
                    </div>
                </div></div>
                <footer class="form-actions">
                    <button id="save-settings" class="primary" on:click=save>"Save"</button>
                    {move || saved.get().then(|| view! { <span class="saved" id="settings-saved">"Saved"</span> })}
                    <button id="save-defaults" class="ghost" title="Every new thread starts with these settings (its provider and model, tools, prompt…); threads made before keep their own"
                        on:click=save_defaults>"Use for new threads"</button>
                    {move || defaults_saved.get().then(|| view! { <span class="saved" id="defaults-saved">"New threads start with these"</span> })}
                </footer>
            </Show>
        </section>
    }
}
