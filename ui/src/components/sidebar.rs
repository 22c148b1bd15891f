//! The left column: brand, "New thread", search, the thread list (most recent first,
//! with rename and delete), and the footer with Providers, About and the backend status.

use art_types::commands as cmd;
use art_types::{SearchResult, ThreadSummary};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::ipc;
use crate::shell::{Connection, Pane, Shell};
use crate::store::Store;

/// One entry of the thread list: click to open; rename in place; delete with confirm.
#[component]
fn ThreadItem(thread: ThreadSummary) -> impl IntoView {
    let shell = expect_context::<Shell>();
    let store = expect_context::<Store>();
    let id = StoredValue::new(thread.thread_id.clone());
    let editing = RwSignal::new(false);
    let confirming = RwSignal::new(false);
    let title = RwSignal::new(thread.title.clone());
    let open = move |_| {
        store.selected.set(Some(id.get_value()));
        shell.pane.set(Pane::Thread);
    };
    let rename = move || {
        editing.set(false);
        let text = title.get_untracked();
        spawn_local(async move {
            let args = cmd::RenameThread {
                thread_id: id.get_value(),
                title: text,
            };
            if let Err(e) = ipc::call(&args).await {
                store.banner.set(Some(e));
                store.reload_threads();
            }
        });
    };
    let delete = move |_| {
        spawn_local(async move {
            let args = cmd::DeleteThread {
                thread_id: id.get_value(),
            };
            if let Err(e) = ipc::call(&args).await {
                store.banner.set(Some(e));
            }
        });
    };
    let selected = move || store.selected.get().as_deref() == Some(id.get_value().as_str());
    view! {
        <div class="thread-item" class:selected=selected data-thread-id=thread.thread_id.clone()>
            {move || if editing.get() {
                view! {
                    <input class="rename-input" prop:value=move || title.get()
                        on:input=move |ev| title.set(event_target_value(&ev))
                        on:keydown=move |ev| match ev.key().as_str() {
                            "Enter" => rename(),
                            "Escape" => editing.set(false),
                            _ => {}
                        } />
                    <button class="ghost small rename-save" title="Save the title" on:click=move |_| rename()>"✓"</button>
                }.into_any()
            } else {
                view! { <button class="thread-title" on:click=open>{move || title.get()}</button> }.into_any()
            }}
            {move || if confirming.get() {
                view! {
                    <span class="confirm">
                        <button class="danger small confirm-delete" on:click=delete>"Delete"</button>
                        <button class="ghost small" on:click=move |_| confirming.set(false)>"Keep"</button>
                    </span>
                }.into_any()
            } else {
                view! {
                    <span class="item-actions">
                        <button class="ghost small rename" title="Rename" on:click=move |_| editing.set(true)>"✎"</button>
                        <button class="ghost small delete" title="Delete" on:click=move |_| confirming.set(true)>"✕"</button>
                    </span>
                }.into_any()
            }}
        </div>
    }
}

/// The sidebar.
#[component]
pub fn Sidebar() -> impl IntoView {
    let shell = expect_context::<Shell>();
    let store = expect_context::<Store>();
    let pane = shell.pane;
    let query = RwSignal::new(String::new());
    let hits = RwSignal::new(None::<Vec<SearchResult>>);
    let status = move || match shell.connection.get() {
        Connection::Connecting => ("connecting", "Connecting to backend…".to_owned()),
        Connection::Ready(ev) => ("ready", format!("Backend {} connected", ev.version)),
        Connection::Failed(e) => ("failed", format!("Backend unreachable: {}", e.message)),
    };
    let new_thread = move |_| {
        spawn_local(async move {
            match ipc::call(&cmd::CreateThread::default()).await {
                Ok(thread) => {
                    store.threads.update(|ts| ts.insert(0, thread.clone()));
                    store.selected.set(Some(thread.thread_id));
                    pane.set(Pane::Thread);
                }
                Err(e) => store.banner.set(Some(e)),
            }
        });
    };
    let search = move || {
        let text = query.get_untracked();
        if text.trim().is_empty() {
            hits.set(None);
            return;
        }
        spawn_local(async move {
            match ipc::call(&cmd::Search { query: text }).await {
                Ok(found) => hits.set(Some(found)),
                Err(e) => store.banner.set(Some(e)),
            }
        });
    };
    // A hit on another branch opens that branch.
    let jump = move |hit: SearchResult| {
        store.show_message(hit.thread_id, hit.record_id);
        pane.set(Pane::Thread);
        hits.set(None);
        query.set(String::new());
    };
    view! {
        <aside class="sidebar">
            <header class="brand" on:click=move |_| pane.set(Pane::Home)>
                <img class="brand-mark" src="./icon.png" alt="" />
                <span class="brand-name">"ART Workbench"</span>
            </header>
            <button id="new-thread" class="primary wide" on:click=new_thread>"+ New thread"</button>
            <input id="search-input" class="search" type="search" placeholder="Search messages and tool calls"
                prop:value=move || query.get()
                on:input=move |ev| query.set(event_target_value(&ev))
                on:keydown=move |ev| if ev.key() == "Enter" { search() } />
            {move || hits.get().map(|found| view! {
                <div class="search-results" id="search-results">
                    {if found.is_empty() { Some(view! { <p class="muted small">"No matches."</p> }) } else { None }}
                    {found.into_iter().map(|hit| {
                        let snippet = hit.snippet.clone();
                        let target = hit.clone();
                        view! { <button class="search-hit" on:click=move |_| jump(target.clone())>{snippet}</button> }
                    }).collect_view()}
                </div>
            })}
            <nav class="thread-list" id="thread-list" aria-label="Threads">
                <Show when=move || store.threads.with(Vec::is_empty)>
                    <p class="muted small">"No threads yet. Start one with “New thread”."</p>
                </Show>
                <For each=move || store.threads.get() key=|t| (t.thread_id.clone(), t.title.clone())
                    children=|thread| view! { <ThreadItem thread=thread /> } />
            </nav>
            <footer class="sidebar-footer">
                <button id="prompts-button" class="ghost wide" class:active=move || pane.get() == Pane::Prompts
                    on:click=move |_| pane.set(Pane::Prompts)>"Prompt library"</button>
                <button id="tools-button" class="ghost wide" class:active=move || pane.get() == Pane::Tools
                    on:click=move |_| pane.set(Pane::Tools)>"Tools"</button>
                <button id="knowledge-button" class="ghost wide" class:active=move || pane.get() == Pane::Knowledge
                    on:click=move |_| pane.set(Pane::Knowledge)>
                    "Knowledge"
                    {move || store.indexing.with(|p| p.running.then(|| format!(" · {}/{}", p.done, p.total)))
                        .map(|text| view! { <span class="muted small" id="knowledge-busy">{text}</span> })}
                </button>
                <button id="models-button" class="ghost wide" class:active=move || pane.get() == Pane::Models
                    on:click=move |_| pane.set(Pane::Models)>"Models"</button>
                <button id="usage-button" class="ghost wide" class:active=move || pane.get() == Pane::Usage
                    on:click=move |_| pane.set(Pane::Usage)>"Usage"</button>
                <button id="send-traces-button" class="ghost wide" class:active=move || pane.get() == Pane::SendTraces
                    on:click=move |_| pane.set(Pane::SendTraces)>"Send traces"</button>
                <button id="providers-button" class="ghost wide" class:active=move || pane.get() == Pane::Providers
                    on:click=move |_| pane.set(Pane::Providers)>"Providers"</button>
                <button id="about-button" class="ghost wide" class:active=move || pane.get() == Pane::About
                    on:click=move |_| pane.set(Pane::About)>"About"</button>
                <div id="backend-status" class=move || format!("status {}", status().0)>
                    <span class="dot"></span>
                    <span>{move || status().1}</span>
                </div>
            </footer>
        </aside>
    }
}
