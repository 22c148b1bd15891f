//! MCP prompts in the composer: typing `/` lists the prompts of the running servers
//! (narrowed as the name is typed; the arrow keys move through it, Enter or a click
//! picks one, Escape closes it);
//! a prompt with arguments asks them in a small form; the server's messages then fill
//! the composer — text in the box, images and embedded files in the tray — for the user
//! to read, change and send.

use std::collections::BTreeMap;

use art_types::commands::{ListMcpPrompts, Picked, UseMcpPrompt};
use art_types::mcp::catalog::McpPrompt;
use art_types::{Attachment, IpcError};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::attachments;
use crate::components::error_card::ErrorCard;
use crate::ipc;

/// The composer's `/` list and the form of the prompt picked.
#[derive(Clone, Copy)]
pub struct Slash {
    draft: RwSignal<String>,
    tray: RwSignal<Vec<Attachment>>,
    problem: RwSignal<Option<IpcError>>,
    /// The running servers' prompts, once listed for this `/`.
    prompts: RwSignal<Option<Vec<McpPrompt>>>,
    /// The prompt whose arguments are being given.
    chosen: RwSignal<Option<McpPrompt>>,
    values: RwSignal<BTreeMap<String, String>>,
    error: RwSignal<Option<IpcError>>,
    busy: RwSignal<bool>,
    /// Escape closed the list (until the text no longer starts with `/`).
    dismissed: RwSignal<bool>,
    /// The prompts were asked for, for this `/`.
    asked: StoredValue<bool>,
    /// The prompt Enter picks (arrow keys move it).
    selected: RwSignal<usize>,
}

impl Slash {
    /// The menu of the composer holding `draft` and `tray`.
    pub fn new(
        draft: RwSignal<String>,
        tray: RwSignal<Vec<Attachment>>,
        problem: RwSignal<Option<IpcError>>,
    ) -> Self {
        let slash = Self {
            draft,
            tray,
            problem,
            prompts: RwSignal::new(None),
            chosen: RwSignal::new(None),
            values: RwSignal::new(BTreeMap::new()),
            error: RwSignal::new(None),
            busy: RwSignal::new(false),
            dismissed: RwSignal::new(false),
            asked: StoredValue::new(false),
            selected: RwSignal::new(0),
        };
        // Listed afresh each time a `/` starts the text (servers come and go).
        Effect::new(move |_| {
            let typed = query(&draft.get()).is_some();
            // Typing narrows the list: its first prompt is marked again.
            slash.selected.set(0);
            if !typed {
                slash.asked.set_value(false);
                slash.prompts.set(None);
                slash.dismissed.set(false);
            } else if !slash.asked.get_value() {
                slash.load();
            }
        });
        slash
    }

    fn load(self) {
        self.asked.set_value(true);
        spawn_local(async move {
            let listed = ipc::call(&ListMcpPrompts {}).await;
            match listed {
                Ok(prompts) => {
                    self.prompts.try_set(Some(prompts));
                }
                Err(e) => {
                    self.problem.try_set(Some(e));
                }
            }
        });
    }

    /// The prompts the text so far names.
    fn matches(self) -> Vec<McpPrompt> {
        let draft = self.draft.get();
        let Some(typed) = query(&draft) else {
            return Vec::new();
        };
        self.prompts.with(|all| {
            all.iter()
                .flatten()
                .filter(|p| p.name.to_lowercase().contains(&typed.to_lowercase()))
                .cloned()
                .collect()
        })
    }

    /// Whether the list shows.
    fn open(self) -> bool {
        query(&self.draft.get()).is_some() && !self.dismissed.get() && self.chosen.get().is_none()
    }

    /// A key pressed in the box: the arrows move through the list, Enter picks the
    /// prompt marked (the first unless moved), Escape closes the list. Returns whether
    /// the key was taken (Enter then does not send, the arrows do not move the caret).
    pub fn key(self, key: &str) -> bool {
        if !self.open() {
            return false;
        }
        let found = self.matches();
        match key {
            "ArrowDown" if !found.is_empty() => {
                self.selected.update(|i| *i = (*i + 1).min(found.len() - 1));
                true
            }
            "ArrowUp" if !found.is_empty() => {
                self.selected.update(|i| *i = i.saturating_sub(1));
                true
            }
            "Enter" => {
                let at = self
                    .selected
                    .get_untracked()
                    .min(found.len().saturating_sub(1));
                match found.into_iter().nth(at) {
                    Some(prompt) => {
                        self.choose(prompt);
                        true
                    }
                    None => false,
                }
            }
            "Escape" => {
                self.dismissed.set(true);
                true
            }
            _ => false,
        }
    }

    fn choose(self, prompt: McpPrompt) {
        self.error.set(None);
        self.values.set(BTreeMap::new());
        if prompt.arguments.is_empty() {
            self.fill(prompt);
        } else {
            self.chosen.set(Some(prompt));
        }
    }

    /// Ask the server for the prompt's messages and put them in the composer.
    fn fill(self, prompt: McpPrompt) {
        let arguments = self.values.get_untracked();
        self.busy.set(true);
        spawn_local(async move {
            let asked = UseMcpPrompt {
                server: prompt.server.clone(),
                name: prompt.name.clone(),
                arguments,
            };
            match ipc::call(&asked).await {
                Ok(filled) => {
                    self.chosen.try_set(None);
                    self.draft.try_set(filled.text);
                    let picked = Picked {
                        attached: filled.attached,
                        refused: filled.refused,
                    };
                    attachments::take(picked, self.tray, self.problem);
                }
                // Said on the form (the values stay), or over the composer.
                Err(e) if self.chosen.get_untracked().is_some() => {
                    self.error.try_set(Some(e));
                }
                Err(e) => {
                    self.problem.try_set(Some(e));
                }
            }
            self.busy.try_set(false);
        });
    }
}

/// What follows a leading `/` while it is one word.
fn query(draft: &str) -> Option<&str> {
    let rest = draft.strip_prefix('/')?;
    (!rest.contains(char::is_whitespace)).then_some(rest)
}

/// The list of prompts, or the form of the one picked.
#[component]
pub fn PromptMenu(slash: Slash) -> impl IntoView {
    let list = move || {
        slash.open().then(|| {
            let items = match slash.prompts.get() {
                None => view! { <p class="muted small">"Listing the MCP servers' prompts…"</p> }.into_any(),
                Some(all) if all.is_empty() => view! {
                    <p class="muted small">"No running MCP server offers prompts (servers are added on the Tools page)."</p>
                }.into_any(),
                Some(_) => {
                    let found = slash.matches();
                    if found.is_empty() {
                        view! { <p class="muted small">"No prompt by that name."</p> }.into_any()
                    } else {
                        let selected = slash.selected.get().min(found.len() - 1);
                        found.into_iter().enumerate().map(|(i, p)| {
                            let title = p.title.clone().filter(|t| *t != p.name);
                            let name = p.name.clone();
                            let shown = format!("/{name}");
                            let server = p.server.clone();
                            let about = p.description.clone();
                            view! {
                                <button class="model-choice prompt-option" class:current=i == selected data-prompt=name
                                    on:click=move |_| slash.choose(p.clone())>
                                    <strong>{shown}</strong>
                                    {title.map(|t| view! { <span class="small">{t}</span> })}
                                    <span class="badge server-badge">{server}</span>
                                    <span class="muted small model-choice-name">{about}</span>
                                </button>
                            }
                        }).collect_view().into_any()
                    }
                }
            };
            view! { <div id="prompt-menu" class="prompt-menu card">{items}</div> }
        })
    };
    let form = move || {
        slash
            .chosen
            .get()
            .map(|prompt| view! { <PromptForm slash prompt /> })
    };
    view! { {list} {form} }
}

/// The arguments of `prompt`, each a text box (required ones marked), with Insert.
#[component]
fn PromptForm(slash: Slash, prompt: McpPrompt) -> impl IntoView {
    // What is wrong with the values, said before the server is asked.
    let local = RwSignal::new(None::<String>);
    let fields = prompt
        .arguments
        .iter()
        .map(|a| {
            let name = a.name.clone();
            let label = a.title.clone().unwrap_or_else(|| a.name.clone());
            let set = {
                let name = name.clone();
                move |ev| {
                    let value = event_target_value(&ev);
                    slash.error.set(None);
                    local.set(None);
                    slash.values.update(|v| {
                        v.insert(name.clone(), value);
                    });
                }
            };
            view! {
                <label class="field">
                    <span>{label}{a.required.then_some(" *")}</span>
                    <input type="text" data-argument=name placeholder=a.description.clone() on:input=set />
                </label>
            }
        })
        .collect_view();
    let insert = {
        let prompt = prompt.clone();
        move |_| match slash.values.with_untracked(|v| prompt.check(v)) {
            Ok(()) => slash.fill(prompt.clone()),
            Err(why) => local.set(Some(why)),
        }
    };
    view! {
        <div id="prompt-form" class="prompt-form card" data-prompt=prompt.name.clone()>
            <p><strong>"/"{prompt.name.clone()}</strong>" "<span class="badge server-badge">{prompt.server.clone()}</span></p>
            {(!prompt.description.is_empty()).then(|| view! { <p class="muted small">{prompt.description.clone()}</p> })}
            {fields}
            {move || local.get().map(|why| view! { <p class="field-problem" id="prompt-problem">{why}</p> })}
            {move || slash.error.get().map(|error| view! { <ErrorCard error id="prompt-problem" /> })}
            <div class="form-actions">
                <button id="prompt-insert" class="primary" disabled=move || slash.busy.get() on:click=insert>"Insert"</button>
                <button class="ghost" on:click=move |_| { slash.chosen.set(None); slash.draft.set(String::new()); }>"Cancel"</button>
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_slash_and_one_word_name_a_prompt() {
        assert_eq!(query("/"), Some(""));
        assert_eq!(query("/args"), Some("args"));
        assert_eq!(
            query("/args city"),
            None,
            "a space: a message that starts with /"
        );
        assert_eq!(query("hello /args"), None);
        assert_eq!(query(""), None);
    }
}
