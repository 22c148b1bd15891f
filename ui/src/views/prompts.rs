//! The prompt library: named system prompts (create, edit, duplicate, delete) that a
//! thread's settings can pick and then override.

use art_types::commands as cmd;
use art_types::{IpcError, SavedPrompt};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::{field_of, problem_at};
use crate::ipc;

/// A name for a copy of `name` that no prompt has yet.
fn copy_name(name: &str, taken: &[SavedPrompt]) -> String {
    let free = |candidate: &str| {
        !taken
            .iter()
            .any(|p| p.name.to_lowercase() == candidate.to_lowercase())
    };
    (1..)
        .map(|n| match n {
            1 => format!("{name} (copy)"),
            n => format!("{name} (copy {n})"),
        })
        .find(|c| free(c))
        .unwrap_or_default()
}

/// The prompt library page: the list on the left, the open prompt's form on the right.
#[component]
pub fn Prompts() -> impl IntoView {
    let prompts = RwSignal::new(Vec::<SavedPrompt>::new());
    // The open prompt (`None` with a name typed: a new one).
    let open = RwSignal::new(None::<String>);
    let name = RwSignal::new(String::new());
    let content = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<(String, IpcError)>);
    let saved = RwSignal::new(false);
    let confirm = RwSignal::new(false);

    let reload = move |select: Option<String>| {
        spawn_local(async move {
            match ipc::call(&cmd::ListPrompts {}).await {
                Ok(list) => {
                    prompts.set(list);
                    if select.is_some() {
                        open.set(select);
                    }
                }
                Err(e) => problem.set(Some(("form".into(), e))),
            }
        });
    };
    reload(None);
    let show = move |p: Option<SavedPrompt>| {
        problem.set(None);
        saved.set(false);
        confirm.set(false);
        open.set(p.as_ref().map(|p| p.prompt_id.clone()));
        name.set(p.as_ref().map(|p| p.name.clone()).unwrap_or_default());
        content.set(p.map(|p| p.content).unwrap_or_default());
    };
    let save = move |as_new: bool| {
        let id = if as_new { None } else { open.get_untracked() };
        let (n, c) = (name.get_untracked(), content.get_untracked());
        spawn_local(async move {
            let args = cmd::SavePrompt {
                prompt_id: id,
                name: n,
                content: c,
            };
            match ipc::call(&args).await {
                Ok(p) => {
                    show(Some(p.clone()));
                    saved.set(true);
                    reload(Some(p.prompt_id));
                }
                Err(e) => problem.set(Some((field_of(&e), e))),
            }
        });
    };
    let duplicate = move |_| {
        let copy = prompts.with_untracked(|all| copy_name(&name.get_untracked(), all));
        name.set(copy);
        save(true);
    };
    let delete = move |_| {
        let Some(id) = open.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::DeletePrompt { prompt_id: id }).await {
                Ok(()) => {
                    show(None);
                    reload(None);
                }
                Err(e) => problem.set(Some(("form".into(), e))),
            }
        });
    };
    view! {
        <section class="pane prompts" id="prompts">
            <h1>"Prompt library"</h1>
            <p class="muted">"Named system prompts. A thread picks one in its settings and can still write its own on top."</p>
            <div class="library">
                <nav class="library-list" id="prompt-list">
                    <button id="new-prompt" class="primary wide" on:click=move |_| show(None)>"+ New prompt"</button>
                    <Show when=move || prompts.with(Vec::is_empty)>
                        <p class="muted small">"No prompts yet."</p>
                    </Show>
                    <For each=move || prompts.get() key=|p| (p.prompt_id.clone(), p.name.clone(), p.updated_at)
                        children=move |p| {
                            let id = p.prompt_id.clone();
                            let is_open = move || open.get().as_deref() == Some(id.as_str());
                            let label = p.name.clone();
                            view! {
                                <button class="library-item" class:active=is_open data-name=label.clone()
                                    on:click=move |_| show(Some(p.clone()))>{label.clone()}</button>
                            }
                        } />
                </nav>
                <div class="library-form form-grid">
                    <label for="prompt-name">"Name"</label>
                    <div>
                        <input id="prompt-name" prop:value=move || name.get()
                            on:input=move |ev| { saved.set(false); name.set(event_target_value(&ev)) }
                            on:change=move |ev| { saved.set(false); name.set(event_target_value(&ev)) } />
                        {problem_at(problem, "name")}
                    </div>
                    <label for="prompt-content">"Prompt"</label>
                    <div>
                        <textarea id="prompt-content" rows="12" prop:value=move || content.get()
                            on:input=move |ev| { saved.set(false); content.set(event_target_value(&ev)) }
                            on:change=move |ev| { saved.set(false); content.set(event_target_value(&ev)) }></textarea>
                        {problem_at(problem, "content")}
                    </div>
                    <span></span>
                    <div class="form-actions">
                        <button id="save-prompt" class="primary" on:click=move |_| save(false)>
                            {move || if open.get().is_some() { "Save" } else { "Create" }}
                        </button>
                        <Show when=move || open.get().is_some()>
                            <button id="duplicate-prompt" class="ghost" on:click=duplicate>"Duplicate"</button>
                            <Show when=move || confirm.get()
                                fallback=move || view! { <button id="delete-prompt" class="ghost" on:click=move |_| confirm.set(true)>"Delete"</button> }>
                                <button id="confirm-delete-prompt" class="danger" on:click=delete>"Delete for good"</button>
                                <button class="ghost" on:click=move |_| confirm.set(false)>"Keep"</button>
                            </Show>
                        </Show>
                        {move || saved.get().then(|| view! { <span class="saved" id="prompt-saved">"Saved"</span> })}
                    </div>
                    {problem_at(problem, "form")}
                    {problem_at(problem, "promptId")}
                </div>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> SavedPrompt {
        SavedPrompt {
            prompt_id: name.into(),
            name: name.into(),
            content: "x".into(),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn a_copy_gets_the_first_free_name() {
        let taken = [
            named("Terse"),
            named("terse (COPY)"),
            named("Terse (copy 2)"),
        ];
        assert_eq!(copy_name("Terse", &taken), "Terse (copy 3)");
        assert_eq!(copy_name("Pirate", &taken), "Pirate (copy)");
    }
}
