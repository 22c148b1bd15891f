//! The thread settings' "Knowledge" row: which collections this thread's
//! `search_knowledge` tool searches (none ticked: all of them), and whether they are
//! always searched first, before planning. It edits the form's configuration in place,
//! like the other rows.

use art_types::ThreadConfig;
use art_types::commands as cmd;
use art_types::knowledge::Collection;
use leptos::prelude::*;

use crate::ipc;
use crate::views::knowledge::counts_line;

/// The row: a checkbox per collection.
#[component]
pub fn ThreadKnowledge(
    config: RwSignal<Option<ThreadConfig>>,
    edited: Callback<()>,
) -> impl IntoView {
    let collections = LocalResource::new(|| ipc::call(&cmd::ListCollections {}));
    let chosen = move |id: &str| {
        config.with(|c| {
            c.as_ref()
                .is_some_and(|c| c.knowledge.iter().any(|k| k == id))
        })
    };
    let toggle = move |id: String, on: bool| {
        config.update(|c| {
            if let Some(c) = c {
                c.knowledge.retain(|k| *k != id);
                if on {
                    c.knowledge.push(id);
                }
            }
        });
        edited.run(());
    };
    let row = move |c: Collection| {
        let id = c.id.clone();
        let checked = move || chosen(&id);
        let id = c.id.clone();
        view! {
            <label class="thread-collection">
                <input type="checkbox" data-collection=c.name.clone() prop:checked=checked
                    on:change=move |ev| toggle(id.clone(), event_target_checked(&ev)) />
                " " {c.name.clone()} " "
                <span class="muted small">{counts_line(&c)}</span>
            </label>
        }
    };
    view! {
        <span class="label">"Knowledge"</span>
        <div id="thread-knowledge">
            {move || match collections.get() {
                None => view! { <p class="muted small">"Loading collections…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="field-problem">{e.message}</p> }.into_any(),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p class="muted small">"No collections yet: make one on the Knowledge page."</p>
                }.into_any(),
                Some(Ok(list)) => view! {
                    <div class="thread-collections">{list.into_iter().map(row).collect_view()}</div>
                }.into_any(),
            }}
            <p class="muted small">"What the search_knowledge tool searches in this thread; none ticked: every collection."</p>
            <label class="thread-collection">
                <input type="checkbox" id="search-first"
                    prop:checked=move || config.with(|c| c.as_ref().is_some_and(|c| c.search_first))
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        config.update(|c| {
                            if let Some(c) = c {
                                c.search_first = on;
                            }
                        });
                        edited.run(());
                    } />
                " Always search first"
            </label>
            <p class="muted small">"Before planning, the question is searched for in these collections and the model is given what was found (shown as a search_knowledge card)."</p>
        </div>
    }
}
