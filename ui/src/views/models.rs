//! The Models page: Ollama's installed models with what each can do (chat, tools,
//! vision, thinking, embedding) and whether it is loaded, pulls by name or from a short
//! list of suggested first models with a progress bar each (bytes, speed, time left,
//! cancel), and delete (confirmed, saying what it frees) and unload.

use art_types::IpcError;
use art_types::attachment::human_size;
use art_types::commands as cmd;
use art_types::models::{LocalModel, PullPhase, PullState, SUGGESTED, same_model};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::problem_at;
use crate::ipc;

/// How often the page asks for the pulls' progress while one runs.
const POLL: std::time::Duration = std::time::Duration::from_millis(400);

/// A model's row after its name: `2.0 GB · 3.2B · Q4_K_M · 128k context`.
pub fn model_facts(m: &LocalModel) -> String {
    let mut parts = vec![human_size(m.size_bytes)];
    parts.extend(m.parameters.clone());
    parts.extend(m.quantization.clone());
    if let Some(tokens) = m.context_length {
        parts.push(format!("{}k context", tokens / 1024));
    }
    parts.join(" · ")
}

/// The badges on a model's row; `capabilities unknown` from an Ollama too old to say.
pub fn badges(m: &LocalModel) -> Vec<&'static str> {
    m.capability_labels()
        .unwrap_or_else(|| vec!["capabilities unknown"])
}

/// `38 s`, `4 min`, `1 h 5 min`.
fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s.div_ceil(60)),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// A pull's line: `pulling 6a0746a1ec1a — 1.2 GB of 2.0 GB · 24.0 MB/s · 35 s left`,
/// or how it ended.
pub fn pull_line(p: &PullState) -> String {
    match &p.phase {
        PullPhase::Queued => "waiting for the pull before it".to_owned(),
        PullPhase::Done => format!("installed ({})", human_size(p.progress.total())),
        PullPhase::Cancelled => "cancelled".to_owned(),
        PullPhase::Failed { problem } => problem.to_string(),
        PullPhase::Pulling => {
            let mut line = p.progress.status.clone();
            if p.progress.total() > 0 {
                line.push_str(&format!(
                    " — {} of {}",
                    human_size(p.progress.completed()),
                    human_size(p.progress.total())
                ));
            }
            if let Some(speed) = p.bytes_per_second.filter(|s| *s > 0) {
                line.push_str(&format!(" · {}/s", human_size(speed)));
            }
            if let Some(left) = p.seconds_left() {
                line.push_str(&format!(" · {} left", duration(left)));
            }
            line
        }
    }
}

/// A pull's phase as its row's `data-phase`.
pub fn phase_name(phase: &PullPhase) -> &'static str {
    match phase {
        PullPhase::Queued => "queued",
        PullPhase::Pulling => "pulling",
        PullPhase::Done => "done",
        PullPhase::Failed { .. } => "failed",
        PullPhase::Cancelled => "cancelled",
    }
}

/// The pulls, asked for again while one is active.
fn watch(pulls: RwSignal<Vec<PullState>>, installed: impl Fn() + Copy + 'static) {
    spawn_local(async move {
        let Ok(now) = ipc::call(&cmd::ModelPulls {}).await else {
            return;
        };
        let was_active = pulls
            .try_with_untracked(|p| p.iter().filter(|s| s.is_active()).count())
            .unwrap_or(0);
        let active = now.iter().filter(|s| s.is_active()).count();
        if pulls.try_set(now).is_some() {
            return; // The page was closed.
        }
        if active < was_active {
            installed();
        }
        if active > 0 {
            set_timeout(move || watch(pulls, installed), POLL);
        }
    });
}

/// The Models page.
#[component]
pub fn Models() -> impl IntoView {
    let models = RwSignal::new(None::<Vec<LocalModel>>);
    let pulls = RwSignal::new(Vec::<PullState>::new());
    let name = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<(String, IpcError)>);
    let note = RwSignal::new(None::<String>);
    let confirm = RwSignal::new(None::<String>);
    let address = RwSignal::new(String::new());

    let fail = move |field: &str, e: IpcError| problem.set(Some((field.into(), e)));
    let reload = move || {
        spawn_local(async move {
            match ipc::call(&cmd::ListLocalModels {}).await {
                Ok(list) => {
                    let _ = models.try_set(Some(list));
                }
                Err(e) => {
                    let _ = problem.try_set(Some(("form".into(), e)));
                }
            }
        });
    };
    reload();
    watch(pulls, reload);
    spawn_local(async move {
        if let Ok(now) = ipc::call(&cmd::OllamaAddress { base_url: None }).await {
            let _ = address.try_set(now);
        }
    });
    let use_address = move || {
        problem.set(None);
        let base_url = Some(address.get_untracked());
        spawn_local(async move {
            match ipc::call(&cmd::OllamaAddress { base_url }).await {
                Ok(now) => {
                    address.set(now);
                    models.set(None);
                    note.set(None);
                    reload();
                    watch(pulls, reload);
                }
                Err(e) => fail("address", e),
            }
        });
    };

    let pull = move |model: String| {
        problem.set(None);
        spawn_local(async move {
            match ipc::call(&cmd::PullModel { name: model }).await {
                Ok(now) => {
                    pulls.set(now);
                    name.set(String::new());
                    watch(pulls, reload);
                }
                Err(e) => fail("name", e),
            }
        });
    };
    let cancel = move |model: String| {
        spawn_local(async move {
            if let Ok(now) = ipc::call(&cmd::CancelPull { name: model }).await {
                pulls.set(now);
            }
        });
    };
    let dismiss = move |_| {
        spawn_local(async move {
            if let Ok(now) = ipc::call(&cmd::DismissPulls {}).await {
                pulls.set(now);
            }
        });
    };
    let delete = move |model: String| {
        spawn_local(async move {
            match ipc::call(&cmd::DeleteModel {
                name: model.clone(),
            })
            .await
            {
                Ok(freed) => {
                    confirm.set(None);
                    note.set(Some(format!(
                        "Deleted {model}: up to {} freed",
                        human_size(freed)
                    )));
                    reload();
                }
                Err(e) => fail("form", e),
            }
        });
    };
    let unload = move |model: String| {
        spawn_local(async move {
            match ipc::call(&cmd::UnloadModel {
                name: model.clone(),
            })
            .await
            {
                Ok(()) => {
                    note.set(Some(format!("Unloaded {model}")));
                    reload();
                }
                Err(e) => fail("form", e),
            }
        });
    };
    let installed_names = Memo::new(move |_| {
        models.with(|m| m.iter().flatten().map(|m| m.id.clone()).collect::<Vec<_>>())
    });

    view! {
        <section class="pane models" id="models">
            <h1>"Models"</h1>
            <p class="muted">"Ollama's models on this machine: pull one to chat with it, see what each can do, free memory or disk."</p>
            <div class="pull-form">
                <label for="ollama-address" class="muted">"Ollama at"</label>
                <input id="ollama-address" prop:value=move || address.get()
                    on:input=move |ev| address.set(event_target_value(&ev))
                    on:keydown=move |ev| if ev.key() == "Enter" { use_address() } />
                <button id="use-address" class="ghost small" on:click=move |_| use_address()>"Use"</button>
            </div>
            {problem_at(problem, "address")}
            <div class="pull-form">
                <input id="pull-name" placeholder="A model to pull, e.g. llama3.2:3b or hf.co/user/repo:Q4_K_M"
                    prop:value=move || name.get()
                    on:input=move |ev| name.set(event_target_value(&ev))
                    on:keydown=move |ev| if ev.key() == "Enter" { pull(name.get_untracked().trim().to_owned()) } />
                <button id="pull-model" class="primary small" disabled=move || name.with(|n| n.trim().is_empty())
                    on:click=move |_| pull(name.get_untracked().trim().to_owned())>"Pull"</button>
            </div>
            {problem_at(problem, "name")}
            <Show when=move || !pulls.with(Vec::is_empty)>
                <ul class="pulls" id="pulls">
                    <For each=move || pulls.get() key=|p| (p.progress.model.clone(), format!("{:?}", p.phase), p.progress.completed(), p.progress.status.clone())
                        children=move |p| {
                            let model = p.progress.model.clone();
                            let active = p.is_active();
                            let phase = phase_name(&p.phase);
                            view! {
                                <li class="pull" data-model=model.clone() data-phase=phase>
                                    <strong>{model.clone()}</strong>
                                    <progress max=p.progress.total().max(1) value=p.progress.completed()></progress>
                                    <span class="pull-line">{pull_line(&p)}</span>
                                    {active.then(|| {
                                        let model = model.clone();
                                        view! { <button class="ghost small cancel-pull" on:click=move |_| cancel(model.clone())>"Cancel"</button> }
                                    })}
                                </li>
                            }
                        } />
                    <Show when=move || pulls.with(|p| p.iter().any(|s| !s.is_active()))>
                        <li><button id="dismiss-pulls" class="ghost small" on:click=dismiss>"Clear finished"</button></li>
                    </Show>
                </ul>
            </Show>
            {move || note.get().map(|n| view! { <p class="note" id="models-note">{n}</p> })}
            {problem_at(problem, "form")}
            <h2>"Installed"</h2>
            {move || models.get().map(|list| if list.is_empty() {
                view! { <p class="muted" id="no-models">"No model is installed yet: pull one of the suggestions below."</p> }.into_any()
            } else {
                view! {
                    <table class="local-models" id="installed-models">
                        <tbody>
                            {list.into_iter().map(|m| {
                                let (id, for_unload, for_delete, for_confirm) = (m.id.clone(), m.id.clone(), m.id.clone(), m.id.clone());
                                let asking = move || confirm.get().as_deref() == Some(id.as_str());
                                let size = human_size(m.size_bytes);
                                view! {
                                    <tr class="local-model" data-id=m.id.clone() data-loaded=m.loaded.to_string()>
                                        <td class="model-name">{m.id.clone()}</td>
                                        <td class="muted">{model_facts(&m)}</td>
                                        <td class="badges">{badges(&m).into_iter().map(|b| view! { <span class="badge" data-capability=b>{b}</span> }).collect_view()}</td>
                                        <td class="actions">
                                            {m.loaded.then(|| view! {
                                                <span class="badge loaded">"loaded"</span>
                                                <button class="ghost small unload-model" on:click=move |_| unload(for_unload.clone())>"Unload"</button>
                                            })}
                                            <Show when=asking.clone()
                                                fallback=move || {
                                                    let name = for_confirm.clone();
                                                    view! { <button class="ghost small delete-model" on:click=move |_| confirm.set(Some(name.clone()))>"Delete"</button> }
                                                }>
                                                {
                                                    let name = for_delete.clone();
                                                    let size = size.clone();
                                                    view! {
                                                        <button class="danger small confirm-delete-model" on:click=move |_| delete(name.clone())>{format!("Delete ({size})")}</button>
                                                        <button class="ghost small" on:click=move |_| confirm.set(None)>"Keep"</button>
                                                    }
                                                }
                                            </Show>
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            })}
            <h2>"Suggested to start with"</h2>
            <ul class="suggested" id="suggested">
                {SUGGESTED.iter().map(|s| {
                    let model = s.name.to_owned();
                    let there = move || installed_names.with(|names| names.iter().any(|n| same_model(n, s.name)));
                    let caps: Vec<&str> = s.capabilities.iter().map(|c| c.label()).collect();
                    view! {
                        <li class="suggestion" data-name=s.name>
                            <strong>{s.name}</strong>
                            <span class="muted">{format!("{} · {} — {}", human_size(s.size_bytes), caps.join(", "), s.note)}</span>
                            <Show when=there fallback=move || {
                                let model = model.clone();
                                view! { <button class="ghost small pull-suggested" on:click=move |_| pull(model.clone())>"Pull"</button> }
                            }>
                                <span class="muted small">"installed"</span>
                            </Show>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use art_types::models::{Capability, LayerProgress, ModelsProblem, PullProgress};

    use super::*;

    fn model(capabilities: Option<Vec<Capability>>) -> LocalModel {
        LocalModel {
            id: "llama3.2:3b".into(),
            size_bytes: 2_019_393_189,
            family: Some("llama".into()),
            parameters: Some("3.2B".into()),
            quantization: Some("Q4_K_M".into()),
            context_length: Some(131_072),
            capabilities,
            modified_at: None,
            loaded: false,
        }
    }

    #[test]
    fn a_model_row_says_its_size_parameters_quantization_context_and_abilities() {
        let m = model(Some(vec![
            Capability::Completion,
            Capability::Tools,
            Capability::Other,
        ]));
        assert_eq!(model_facts(&m), "2.0 GB · 3.2B · Q4_K_M · 128k context");
        assert_eq!(badges(&m), ["chat", "tools"]);
        assert_eq!(badges(&model(None)), ["capabilities unknown"]);
    }

    #[test]
    fn a_pull_line_says_bytes_speed_and_time_left_or_how_it_ended() {
        let mut state = PullState {
            progress: PullProgress {
                model: "llama3.2:3b".into(),
                status: "pulling dde5aa3fc5ff".into(),
                layers: vec![LayerProgress {
                    digest: "sha256:dde5".into(),
                    total: 2_000_000_000,
                    completed: 800_000_000,
                }],
                done: false,
            },
            phase: PullPhase::Pulling,
            bytes_per_second: Some(20_000_000),
        };
        assert_eq!(
            pull_line(&state),
            "pulling dde5aa3fc5ff — 800.0 MB of 2.0 GB · 20.0 MB/s · 1 min left"
        );
        state.phase = PullPhase::Failed {
            problem: ModelsProblem::Interrupted {
                name: "llama3.2:3b".into(),
            },
        };
        assert!(pull_line(&state).contains("pull again to resume"));
        state.phase = PullPhase::Queued;
        assert_eq!(pull_line(&state), "waiting for the pull before it");
        assert_eq!(duration(3_900), "1 h 5 min");
    }
}
