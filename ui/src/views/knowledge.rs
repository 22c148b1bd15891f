//! The Knowledge page: collections of the user's documents, each document with its
//! state (queued, being read, ready with its pages and passages, failed or skipped and
//! why), the background indexer's progress with cancel, and a search to try what the
//! agent's `search_knowledge` tool would find.

use art_types::IpcError;
use art_types::commands as cmd;
use art_types::knowledge::{
    Added, Collection, Document, DocumentState, EmbedderState, IndexProgress, Matched, Searched,
};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::problem_at;
use crate::ipc;
use crate::store::Store;
use crate::tickets::{Tickets, shows};
use crate::views::collection_model::CollectionModel;
use crate::views::usage::compact;

/// `1 page`, `3 pages`.
pub(crate) fn count(n: u64, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}

/// A collection's documents by state, in a line: `12 ready · 2 queued · 1 failed`.
pub fn counts_line(c: &Collection) -> String {
    let mut parts = c.counts.parts();
    parts.push(match c.chunks {
        1 => "1 passage".to_owned(),
        n => format!("{} passages", compact(n)),
    });
    parts.join(" · ")
}

/// What a document's row says after its name.
pub fn document_facts(d: &Document) -> String {
    match d.state {
        DocumentState::Ready => {
            let mut parts = Vec::new();
            if let Some(pages) = d.pages {
                parts.push(count(u64::from(pages), "page"));
            }
            parts.push(count(d.chunks, "passage"));
            parts.push(format!("~{} tokens", compact(d.tokens)));
            if let Some(detail) = &d.detail {
                parts.push(detail.clone());
            }
            parts.join(" · ")
        }
        DocumentState::Queued => "waiting to be read".into(),
        DocumentState::Indexing => "being read".into(),
        DocumentState::Failed | DocumentState::Skipped => d.detail.clone().unwrap_or_default(),
    }
}

/// The progress line: `Reading report.pdf — 3 of 10`, the search model's download, or
/// the passages being embedded.
pub fn progress_line(p: &IndexProgress) -> String {
    let megabytes = |bytes: u64| bytes.div_ceil(1_000_000);
    match (&p.current, &p.embedder) {
        (Some(name), _) => format!("Reading {name} — {} of {}", p.done + 1, p.total.max(1)),
        (None, EmbedderState::Downloading { done, total }) => format!(
            "Downloading the search model — {} of {} MB",
            megabytes(*done),
            megabytes(*total)
        ),
        _ if p.running && p.to_embed > 0 => format!(
            "Embedding passages to search by meaning — {} of {}",
            p.embedded, p.to_embed
        ),
        _ if p.running => format!("{} of {}", p.done, p.total),
        _ => format!("Read {}", count(p.done, "document")),
    }
}

/// What the progress bar shows (value, of): documents read, the search model's bytes, or
/// passages embedded — whichever the line speaks of.
pub fn progress_bar(p: &IndexProgress) -> (u64, u64) {
    match &p.embedder {
        _ if p.current.is_some() => (p.done, p.total.max(1)),
        EmbedderState::Downloading { done, total } => (*done, (*total).max(1)),
        _ if p.running && p.to_embed > 0 => (p.embedded, p.to_embed),
        _ => (p.done, p.total.max(1)),
    }
}

/// Why searches use words only, when the built-in embedder cannot be used.
pub fn words_only_line(p: &IndexProgress) -> Option<String> {
    match &p.embedder {
        EmbedderState::Unavailable { reason } => Some(format!("Searching by words only: {reason}")),
        _ => None,
    }
}

/// How a search found a passage, as its badges say: `words #2`, `meaning 0.61`.
pub fn match_badges(m: &Matched) -> Vec<(&'static str, String)> {
    let mut badges = Vec::new();
    if let Some(place) = m.words {
        badges.push(("words", format!("words #{place}")));
    }
    if let Some(cosine) = m.meaning {
        badges.push(("meaning", format!("meaning {cosine:.2}")));
    }
    badges
}

/// Said under a search's results when some passages could only be searched by their
/// words (not embedded yet, or the model is not there).
pub fn searched_by_words_line(s: &Searched) -> Option<String> {
    (s.words_only > 0).then(|| {
        format!(
            "{} searched by words only (not embedded yet, or the search model is missing)",
            count(s.words_only, "passage")
        )
    })
}

/// What an add did, in a sentence.
fn added_line(a: &Added) -> String {
    let mut line = format!("{} queued", count(a.queued, "file"));
    if !a.left_out.is_empty() {
        line.push_str(&format!(
            "; left out {}: {}",
            a.left_out.len(),
            a.left_out.join("; ")
        ));
    }
    line
}

/// The Knowledge page: collections on the left, the open one's documents and search on
/// the right, the indexer's progress above.
#[component]
pub fn Knowledge() -> impl IntoView {
    let store = expect_context::<Store>();
    let collections = RwSignal::new(Vec::<Collection>::new());
    let open = RwSignal::new(None::<String>);
    let documents = RwSignal::new(Vec::<Document>::new());
    let new_name = RwSignal::new(String::new());
    let rename_to = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<(String, IpcError)>);
    let note = RwSignal::new(None::<String>);
    let confirm = RwSignal::new(false);
    let query = RwSignal::new(String::new());
    let hits = RwSignal::new(None::<Searched>);
    // Answers may come back out of order: an older search's or list's answer never
    // replaces a newer one, and a search of the collection left never lands on the one
    // opened since.
    let searches = StoredValue::new(Tickets::default());
    let collection_lists = StoredValue::new(Tickets::default());
    let document_lists = StoredValue::new(Tickets::default());
    let keep_in_sync = RwSignal::new(true);

    let fail = move |e: IpcError| problem.set(Some(("form".into(), e)));
    let fail_at = move |field: &str, e: IpcError| problem.set(Some((field.into(), e)));
    let reload = move || {
        let listed = collection_lists.try_update_value(Tickets::ask);
        let documents_listed = document_lists.try_update_value(Tickets::ask);
        let (Some(listed), Some(documents_listed)) = (listed, documents_listed) else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::ListCollections {}).await {
                Ok(_) if !shows(collection_lists, listed) => {}
                Ok(list) => {
                    if open.get_untracked().is_none()
                        && let Some(first) = list.first()
                    {
                        rename_to.set(first.name.clone());
                        open.set(Some(first.id.clone()));
                    }
                    collections.set(list);
                }
                Err(e) => fail(e),
            }
            let Some(id) = open.get_untracked() else {
                documents.set(Vec::new());
                return;
            };
            match ipc::call(&cmd::ListDocuments { collection: id }).await {
                Ok(list) if shows(document_lists, documents_listed) => documents.set(list),
                Ok(_) => {}
                Err(e) => fail(e),
            }
        });
    };
    // What the indexer does changes the lists: reload on each of its events.
    Effect::new(move |_| {
        store.indexing.track();
        open.track();
        reload();
    });
    spawn_local(async move {
        if let Ok(now) = ipc::call(&cmd::IndexingStatus {}).await {
            store.indexing.set(now);
        }
    });
    let current = Memo::new(move |_| {
        let id = open.get()?;
        collections.with(|all| all.iter().find(|c| c.id == id).cloned())
    });
    // Memos, so that reloading the list (on every indexer event) redraws only what
    // changed: a button being clicked is not replaced under the pointer.
    let shown = Memo::new(move |_| current.with(Option::is_some));
    let folders = Memo::new(move |_| {
        current.with(|c| c.as_ref().map(|c| c.folders.clone()).unwrap_or_default())
    });
    let choose = move |id: String, name: String| {
        problem.set(None);
        note.set(None);
        confirm.set(false);
        searches.update_value(Tickets::forget);
        hits.set(None);
        rename_to.set(name);
        open.set(Some(id));
    };
    let create = move |_| {
        let name = new_name.get_untracked();
        spawn_local(async move {
            match ipc::call(&cmd::CreateCollection { name }).await {
                Ok(c) => {
                    new_name.set(String::new());
                    choose(c.id, c.name);
                    reload();
                }
                Err(e) => fail_at("name", e),
            }
        });
    };
    let rename = move |_| {
        let (Some(id), name) = (open.get_untracked(), rename_to.get_untracked()) else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::RenameCollection { id, name }).await {
                Ok(c) => {
                    note.set(Some(format!("Renamed to {}", c.name)));
                    reload();
                }
                Err(e) => fail_at("rename", e),
            }
        });
    };
    let delete = move |_| {
        let Some(id) = open.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::DeleteCollection { id }).await {
                Ok(()) => {
                    confirm.set(false);
                    open.set(None);
                    reload();
                }
                Err(e) => fail(e),
            }
        });
    };
    let add = move |folder: bool| {
        let Some(collection) = open.get_untracked() else {
            return;
        };
        problem.set(None);
        spawn_local(async move {
            let args = cmd::AddToCollection {
                collection,
                folder,
                keep_in_sync: keep_in_sync.get_untracked(),
            };
            match ipc::call(&args).await {
                Ok(added) if added.queued == 0 && added.left_out.is_empty() => {}
                Ok(added) => {
                    note.set(Some(added_line(&added)));
                    reload();
                }
                Err(e) => fail(e),
            }
        });
    };
    let reindex = move |_| {
        let Some(id) = open.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::ReindexCollection { id }).await {
                Ok(()) => reload(),
                Err(e) => fail(e),
            }
        });
    };
    let remove = move |id: i64| {
        spawn_local(async move {
            match ipc::call(&cmd::RemoveDocument { id }).await {
                Ok(()) => reload(),
                Err(e) => fail(e),
            }
        });
    };
    let search = move || {
        let args = cmd::SearchKnowledge {
            query: query.get_untracked(),
            collection: open.get_untracked(),
            k: Some(5),
        };
        let Some(ticket) = searches.try_update_value(Tickets::ask) else {
            return;
        };
        spawn_local(async move {
            let answer = ipc::call(&args).await;
            if !shows(searches, ticket) {
                return;
            }
            match answer {
                Ok(found) => hits.set(Some(found)),
                Err(e) => fail(e),
            }
        });
    };
    let stop_syncing = move |folder: String| {
        let Some(collection) = open.get_untracked() else {
            return;
        };
        spawn_local(async move {
            match ipc::call(&cmd::StopSyncing { collection, folder }).await {
                Ok(()) => reload(),
                Err(e) => fail(e),
            }
        });
    };
    let sync_now = move |_| {
        spawn_local(async move {
            match ipc::call(&cmd::SyncFolders {}).await {
                Ok(()) => note.set(Some("Looking for changes in the synced folders…".into())),
                Err(e) => fail(e),
            }
        });
    };
    let cancel = move |_| {
        spawn_local(async move {
            if let Err(e) = ipc::call(&cmd::CancelIndexing {}).await {
                fail(e);
            }
        });
    };

    view! {
        <section class="pane knowledge" id="knowledge">
            <h1>"Knowledge"</h1>
            <p class="muted">"Your documents, cut into passages the agent can search: enable the "
                <code>"search_knowledge"</code>" tool in a thread, and its answers cite what they used. "
                "Files stay where they are; PDFs, Word documents, HTML, Markdown, text and code are read."</p>
            {move || {
                let p = store.indexing.get();
                let words_only = words_only_line(&p);
                let (value, max) = progress_bar(&p);
                (p.running || p.stopped.is_some() || p.done > 0 || words_only.is_some()).then(|| view! {
                    <div class="indexing" id="indexing" data-running=p.running.to_string()>
                        <progress max=max value=value></progress>
                        <span id="indexing-line">{progress_line(&p)}</span>
                        {p.stopped.clone().map(|why| view! { <span class="muted" id="indexing-stopped">{why}</span> })}
                        {words_only.map(|why| view! { <span class="muted" id="embedder-unavailable">{why}</span> })}
                        <Show when=move || store.indexing.with(|p| p.running)>
                            <button id="cancel-indexing" class="ghost small" on:click=cancel>"Cancel"</button>
                        </Show>
                    </div>
                })
            }}
            <div class="library">
                <nav class="library-list" id="collection-list">
                    <div class="new-collection">
                        <input id="new-collection-name" placeholder="New collection"
                            prop:value=move || new_name.get()
                            on:input=move |ev| new_name.set(event_target_value(&ev))
                            on:keydown=move |ev| if ev.key() == "Enter" { create(()) } />
                        <button id="create-collection" class="primary small" on:click=move |_| create(())>"Create"</button>
                    </div>
                    {problem_at(problem, "name")}
                    <Show when=move || collections.with(Vec::is_empty)>
                        <p class="muted small">"No collections yet: name one above, then add files or a folder."</p>
                    </Show>
                    <For each=move || collections.get() key=|c| (c.id.clone(), c.name.clone(), c.counts, c.chunks)
                        children=move |c| {
                            let id = c.id.clone();
                            let is_open = move || open.get().as_deref() == Some(id.as_str());
                            let (id, name) = (c.id.clone(), c.name.clone());
                            view! {
                                <button class="library-item collection" class:active=is_open data-name=c.name.clone()
                                    on:click=move |_| choose(id.clone(), name.clone())>
                                    <span class="collection-name">{c.name.clone()}</span>
                                    <span class="muted small">{counts_line(&c)}</span>
                                </button>
                            }
                        } />
                </nav>
                <div class="library-form">
                    {move || shown.get().then(|| view! {
                        <div class="collection-head">
                            <input id="collection-name" prop:value=move || rename_to.get()
                                on:input=move |ev| rename_to.set(event_target_value(&ev)) />
                            <button id="rename-collection" class="ghost small" on:click=rename
                                disabled=move || rename_to.with(|n| n.trim().is_empty() || current.with(|c| c.as_ref().is_some_and(|c| c.name == *n)))>"Rename"</button>
                            <Show when=move || confirm.get()
                                fallback=move || view! { <button id="delete-collection" class="ghost small" on:click=move |_| confirm.set(true)>"Delete"</button> }>
                                <button id="confirm-delete-collection" class="danger small" on:click=delete>"Delete collection and its passages"</button>
                                <button class="ghost small" on:click=move |_| confirm.set(false)>"Keep"</button>
                            </Show>
                        </div>
                        {problem_at(problem, "rename")}
                        <p class="muted" id="collection-counts">{move || current.with(|c| c.as_ref().map(counts_line))}</p>
                        <CollectionModel current changed=move |_| reload() />
                        <div class="form-actions">
                            <button id="add-files" class="primary" on:click=move |_| add(false)>"Add files…"</button>
                            <button id="add-folder" class="ghost" on:click=move |_| add(true)>"Add a folder…"</button>
                            <label class="inline" title="Files added, changed or deleted in the folder later are read again or taken out, in the background">
                                <input type="checkbox" id="keep-in-sync" prop:checked=move || keep_in_sync.get()
                                    on:change=move |ev| keep_in_sync.set(event_target_checked(&ev)) />
                                "keep folders in sync"
                            </label>
                            <button id="reindex-collection" class="ghost" on:click=reindex>"Read all again"</button>
                        </div>
                        {move || (!folders.with(Vec::is_empty)).then(|| view! {
                            <ul class="synced-folders" id="synced-folders">
                                {folders.get().into_iter().map(|folder| {
                                    let stop = folder.clone();
                                    view! {
                                        <li class="synced-folder" data-path=folder.clone()>
                                            <span class="muted">"Kept in sync: "</span><code>{folder.clone()}</code>
                                            <button class="ghost small stop-syncing" on:click=move |_| stop_syncing(stop.clone())>"Stop syncing"</button>
                                        </li>
                                    }
                                }).collect_view()}
                                <li><button id="sync-now" class="ghost small" on:click=sync_now>"Look for changes now"</button></li>
                            </ul>
                        })}
                    })}
                    {move || note.get().map(|n| view! { <p class="note" id="knowledge-note">{n}</p> })}
                    {problem_at(problem, "form")}
                    <Show when=move || open.get().is_some()>
                        <table class="documents" id="documents">
                            <tbody>
                                <For each=move || documents.get() key=|d| (d.id, d.state, d.chunks, d.detail.clone())
                                    children=move |d| {
                                        let id = d.id;
                                        view! {
                                            <tr class="document" data-name=d.name.clone() data-state=d.state.as_str()>
                                                <td class="doc-name" title=d.path.clone()>{d.name.clone()}</td>
                                                <td><span class=format!("state {}", d.state.as_str())>{d.state.as_str()}</span></td>
                                                <td class="doc-facts muted">{document_facts(&d)}</td>
                                                <td><button class="ghost small remove-document" title="Take it out of the collection"
                                                    on:click=move |_| remove(id)>"Remove"</button></td>
                                            </tr>
                                        }
                                    } />
                            </tbody>
                        </table>
                        <div class="knowledge-search">
                            <input id="knowledge-query" placeholder="Try a search, as the agent would"
                                prop:value=move || query.get()
                                on:input=move |ev| query.set(event_target_value(&ev))
                                on:keydown=move |ev| if ev.key() == "Enter" { search() } />
                            <button id="knowledge-search" class="ghost" on:click=move |_| search()>"Search"</button>
                        </div>
                        {move || hits.get().map(|found| {
                            let words_only = searched_by_words_line(&found)
                                .map(|line| view! { <p class="muted" id="knowledge-words-only">{line}</p> });
                            let list = if found.hits.is_empty() {
                                view! { <p class="muted" id="knowledge-hits">"Nothing in this collection matches."</p> }.into_any()
                            } else {
                                view! {
                                    <ol class="hits" id="knowledge-hits">
                                        {found.hits.into_iter().map(|h| view! {
                                            <li class="hit" data-name=h.name.clone()>
                                                <div class="hit-source"><strong>{h.name.clone()}</strong>
                                                    <span class="muted">{format!(", {}", h.place)}</span>
                                                    {match_badges(&h.matched).into_iter().map(|(kind, label)| view! {
                                                        <span class=format!("badge match-{kind}")>{label}</span>
                                                    }).collect_view()}</div>
                                                <pre class="hit-text">{h.text.clone()}</pre>
                                            </li>
                                        }).collect_view()}
                                    </ol>
                                }.into_any()
                            };
                            view! { {list} {words_only} }
                        })}
                    </Show>
                </div>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use art_types::knowledge::StateCounts;

    use super::*;

    #[test]
    fn a_collection_reads_as_its_states_and_passages() {
        let c = Collection {
            id: "c".into(),
            name: "Manuals".into(),
            created_at: 0,
            counts: StateCounts {
                ready: 12,
                queued: 2,
                failed: 1,
                ..StateCounts::default()
            },
            chunks: 1_234,
            folders: Vec::new(),
            embedder: art_types::knowledge::BUILTIN_EMBEDDER.into(),
            changing: None,
            embedded: 0,
        };
        assert_eq!(
            counts_line(&c),
            "12 ready · 2 queued · 1 failed · 1.2k passages"
        );
    }

    #[test]
    fn progress_names_the_file_being_read() {
        let p = IndexProgress {
            done: 2,
            total: 10,
            current: Some("report.pdf".into()),
            running: true,
            ..IndexProgress::default()
        };
        assert_eq!(progress_line(&p), "Reading report.pdf — 3 of 10");
        let idle = IndexProgress {
            done: 10,
            total: 10,
            ..IndexProgress::default()
        };
        assert_eq!(progress_line(&idle), "Read 10 documents");
    }

    #[test]
    fn progress_speaks_of_the_search_model_and_the_embedding() {
        let mut p = IndexProgress {
            running: true,
            embedder: EmbedderState::Downloading {
                done: 45_400_000,
                total: 91_335_235,
            },
            ..IndexProgress::default()
        };
        assert_eq!(
            progress_line(&p),
            "Downloading the search model — 46 of 92 MB"
        );
        assert_eq!(progress_bar(&p), (45_400_000, 91_335_235));
        p.embedder = EmbedderState::Ready;
        p.embedded = 120;
        p.to_embed = 3_400;
        assert_eq!(
            progress_line(&p),
            "Embedding passages to search by meaning — 120 of 3400"
        );
        assert_eq!(progress_bar(&p), (120, 3_400));
        assert_eq!(words_only_line(&p), None);
        p.running = false;
        p.embedder = EmbedderState::Unavailable {
            reason: "offline".into(),
        };
        assert_eq!(
            words_only_line(&p).as_deref(),
            Some("Searching by words only: offline")
        );
    }

    #[test]
    fn a_document_says_its_facts_or_why_not() {
        let mut d = Document {
            id: 1,
            collection: "c".into(),
            path: "/a/report.pdf".into(),
            name: "report.pdf".into(),
            size: 10,
            state: DocumentState::Ready,
            detail: None,
            pages: Some(12),
            chunks: 30,
            tokens: 7_400,
        };
        assert_eq!(document_facts(&d), "12 pages · 30 passages · ~7.4k tokens");
        d.state = DocumentState::Failed;
        d.detail = Some("scanned, no text — OCR is not supported".into());
        assert_eq!(
            document_facts(&d),
            "scanned, no text — OCR is not supported"
        );
    }

    #[test]
    fn a_hit_says_how_it_was_found_and_a_search_what_it_searched_by_words_only() {
        let both = Matched {
            words: Some(2),
            meaning: Some(0.614),
        };
        assert_eq!(
            match_badges(&both),
            vec![
                ("words", "words #2".to_owned()),
                ("meaning", "meaning 0.61".to_owned())
            ]
        );
        assert!(match_badges(&Matched::default()).is_empty());
        let mut searched = Searched::default();
        assert_eq!(searched_by_words_line(&searched), None);
        searched.words_only = 1;
        assert_eq!(
            searched_by_words_line(&searched).as_deref(),
            Some(
                "1 passage searched by words only (not embedded yet, or the search model is missing)"
            )
        );
    }
}
