//! A collection's embedding model on the Knowledge page: which model its passages are
//! searched by meaning with, a change under way (the passages embedded again so far, and
//! the model answering meanwhile), and a form to choose another — the built-in model or
//! one of a configured provider's.

use art_types::commands as cmd;
use art_types::knowledge::{BUILTIN_EMBEDDER, Collection, embedder_label, provider_embedder};
use art_types::{IpcError, ProviderInfo};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::problem_at;
use crate::ipc;
use crate::views::usage::compact;

/// The value the provider choice has for the built-in model.
const BUILT_IN: &str = "";

/// What the model line says of a change under way, if one is: `Embedding again with
/// nomic-embed-text (ollama): 340 of 1.2k passages; all-MiniLM-L6-v2 (built-in) answers
/// meanwhile`.
pub fn change_line(c: &Collection) -> Option<String> {
    let change = c.changing.as_ref()?;
    Some(format!(
        "Embedding again with {}: {} of {} passages; {} answers meanwhile",
        embedder_label(&c.embedder),
        compact(change.embedded),
        compact(c.chunks),
        embedder_label(&change.from),
    ))
}

/// Providers that can embed, each with the model suggested for it.
pub fn embedding_providers(all: &[ProviderInfo]) -> Vec<(String, &'static str)> {
    all.iter()
        .filter_map(|p| Some((p.name.clone(), p.kind.suggested_embedding_model()?)))
        .collect()
}

/// The model id the form names: the built-in one, or `provider:model`.
pub fn chosen_model(provider: &str, model: &str) -> String {
    if provider == BUILT_IN {
        BUILTIN_EMBEDDER.to_owned()
    } else {
        provider_embedder(provider, model.trim())
    }
}

/// The model line and its change form, for the collection `current` shows; `changed` is
/// called with the collection once a change is accepted.
#[component]
pub fn CollectionModel(
    current: Memo<Option<Collection>>,
    changed: impl Fn(Collection) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let editing = RwSignal::new(false);
    let providers = RwSignal::new(Vec::<(String, &'static str)>::new());
    let provider = RwSignal::new(BUILT_IN.to_owned());
    let model = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let problem = RwSignal::new(None::<(String, IpcError)>);
    let embedder = Memo::new(move |_| current.with(|c| c.as_ref().map(|c| c.embedder.clone())));

    let edit = move |_| {
        problem.set(None);
        editing.set(true);
        spawn_local(async move {
            match ipc::call(&cmd::ListProviders {}).await {
                Ok(all) => providers.set(embedding_providers(&all)),
                Err(e) => problem.set(Some(("model".into(), e))),
            }
        });
    };
    let pick = move |name: String| {
        let suggested =
            providers.with(|all| all.iter().find(|(p, _)| *p == name).map_or("", |(_, m)| *m));
        model.set(suggested.to_owned());
        provider.set(name);
    };
    let apply = move |_| {
        let Some(id) = current.with_untracked(|c| c.as_ref().map(|c| c.id.clone())) else {
            return;
        };
        let args = cmd::SetCollectionEmbedder {
            id,
            model: chosen_model(&provider.get_untracked(), &model.get_untracked()),
        };
        problem.set(None);
        busy.set(true);
        spawn_local(async move {
            let answer = ipc::call(&args).await;
            busy.set(false);
            match answer {
                Ok(collection) => {
                    editing.set(false);
                    changed(collection);
                }
                Err(e) => problem.set(Some(("model".into(), e))),
            }
        });
    };

    view! {
        <div class="collection-model" id="collection-model">
            <span class="muted">"Searched by meaning with "</span>
            <strong id="collection-embedder">{move || embedder.get().map(|m| embedder_label(&m))}</strong>
            <Show when=move || !editing.get()>
                <button id="change-model" class="ghost small" on:click=edit>"Change…"</button>
            </Show>
            {move || current.with(|c| c.as_ref().and_then(change_line))
                .map(|line| view! { <p class="muted small" id="model-change">{line}</p> })}
            <Show when=move || editing.get()>
                <div class="model-form" id="model-form">
                    <select id="model-provider" on:change=move |ev| pick(event_target_value(&ev))
                        prop:value=move || provider.get()>
                        <option value=BUILT_IN>"Built-in: all-MiniLM-L6-v2, on this computer"</option>
                        {move || providers.get().into_iter().map(|(name, _)| view! {
                            <option value=name.clone()>{name.clone()}</option>
                        }).collect_view()}
                    </select>
                    <Show when=move || provider.with(|p| p != BUILT_IN)>
                        <input id="model-name" placeholder="embedding model"
                            prop:value=move || model.get()
                            on:input=move |ev| model.set(event_target_value(&ev)) />
                    </Show>
                    <button id="use-model" class="primary small" on:click=apply
                        disabled=move || busy.get() || provider.with(|p| p != BUILT_IN) && model.with(|m| m.trim().is_empty())>
                        {move || if busy.get() { "Trying the model…" } else { "Use this model" }}
                    </button>
                    <button class="ghost small" on:click=move |_| editing.set(false)>"Cancel"</button>
                    <p class="muted small">"Its passages are embedded again in the background; the vectors it has now answer searches until then."</p>
                </div>
            </Show>
            {problem_at(problem, "model")}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::knowledge::{ModelChange, StateCounts};
    use art_types::{AdapterKind, KeyState};

    fn provider(name: &str, kind: AdapterKind) -> ProviderInfo {
        ProviderInfo {
            name: name.into(),
            kind,
            is_local: kind == AdapterKind::Ollama,
            base_url: String::new(),
            key: KeyState::NotNeeded,
            key_variable: String::new(),
        }
    }

    #[test]
    fn only_providers_that_embed_are_offered_each_with_its_suggested_model() {
        let all = [
            provider("ollama", AdapterKind::Ollama),
            provider("anthropic", AdapterKind::Anthropic),
            provider("work-openai", AdapterKind::OpenAi),
            provider("gemini", AdapterKind::Gemini),
        ];
        assert_eq!(
            embedding_providers(&all),
            [
                ("ollama".to_owned(), "nomic-embed-text"),
                ("work-openai".to_owned(), "text-embedding-3-small"),
                ("gemini".to_owned(), "gemini-embedding-001"),
            ]
        );
    }

    #[test]
    fn the_form_names_the_built_in_model_or_a_providers() {
        assert_eq!(chosen_model(BUILT_IN, "ignored"), BUILTIN_EMBEDDER);
        assert_eq!(
            chosen_model("ollama", " nomic-embed-text "),
            "ollama:nomic-embed-text"
        );
    }

    #[test]
    fn a_change_under_way_says_how_far_and_what_answers_meanwhile() {
        let mut c = Collection {
            id: "c".into(),
            name: "Docs".into(),
            created_at: 0,
            counts: StateCounts::default(),
            chunks: 1181,
            folders: Vec::new(),
            embedder: "ollama:nomic-embed-text".into(),
            changing: None,
            embedded: 0,
        };
        assert_eq!(change_line(&c), None);
        c.changing = Some(ModelChange {
            from: BUILTIN_EMBEDDER.into(),
            embedded: 340,
        });
        assert_eq!(
            change_line(&c).unwrap(),
            "Embedding again with nomic-embed-text (ollama): 340 of 1.2k passages; \
             all-MiniLM-L6-v2 (built-in) answers meanwhile"
        );
    }
}
