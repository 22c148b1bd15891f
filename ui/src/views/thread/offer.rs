//! The offer a question refused for being longer than the model's window makes: add its
//! documents to the thread's knowledge (the thread then searches them, cited by page),
//! see them indexed, and ask again without them, the question put back in the composer.

use art_types::commands::{AddAttachedToKnowledge, ListDocuments};
use art_types::knowledge::{AddedAttached, Document, DocumentState};
use art_types::{Attachment, IpcError};
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::web_sys::HtmlElement;
use wasm_bindgen::JsCast;

use super::attachments::Tray;
use crate::ipc;
use crate::store::Store;
use crate::views::knowledge::count;

/// What became of the offer.
#[derive(Clone)]
enum State {
    Offered,
    Adding,
    Added(AddedAttached),
    Failed(IpcError),
}

/// A sentence naming where the documents went and how far their indexing is (`listed`:
/// the collection's documents of those names, once the indexer has been idle).
fn said(added: &AddedAttached, names: &[String], listed: Option<&[Document]>) -> String {
    let what = match names {
        [one] => one.clone(),
        many => format!("{} documents", many.len()),
    };
    let into = &added.collection.name;
    let finished = listed.filter(|docs| {
        !docs.is_empty()
            && docs
                .iter()
                .all(|d| !matches!(d.state, DocumentState::Queued | DocumentState::Indexing))
    });
    let Some(docs) = finished else {
        return format!("Indexing {what} into \u{201c}{into}\u{201d}\u{2026}");
    };
    let failed: Vec<String> = docs
        .iter()
        .filter(|d| d.state != DocumentState::Ready)
        .map(|d| format!("{}: {}", d.name, d.detail.clone().unwrap_or_default()))
        .collect();
    if !failed.is_empty() {
        return format!("Not indexed \u{2014} {}", failed.join("; "));
    }
    let passages = count(docs.iter().map(|d| d.chunks).sum(), "passage");
    format!(
        "{what} is in \u{201c}{into}\u{201d} ({passages}), which this thread searches: the agent finds what a question needs and cites its pages."
    )
}

/// "Add to the thread's knowledge" for the refused question's `attachments`; then "Ask
/// without the file", which puts `question` back in the composer.
#[component]
pub fn KnowledgeOffer(
    thread_id: String,
    question: String,
    attachments: Vec<Attachment>,
) -> impl IntoView {
    let tray = expect_context::<Tray>();
    let store = expect_context::<Store>();
    let state = RwSignal::new(State::Offered);
    let listed = RwSignal::new(None::<Vec<Document>>);
    let documents: Vec<String> = attachments
        .iter()
        .filter(|a| !a.is_image())
        .map(|a| a.name.clone())
        .collect();
    let documents = StoredValue::new(documents);
    let attachments = StoredValue::new(attachments);
    let thread = StoredValue::new(thread_id);
    let add = move |_| {
        state.set(State::Adding);
        spawn_local(async move {
            let args = AddAttachedToKnowledge {
                thread_id: thread.get_value(),
                attachments: attachments.get_value(),
            };
            state.try_set(match ipc::call(&args).await {
                Ok(added) => State::Added(added),
                Err(e) => State::Failed(e),
            });
        });
    };
    // Whenever the indexer goes idle, how the documents ended up.
    Effect::new(move |_| {
        let idle = !store.indexing.get().running;
        let State::Added(added) = state.get() else {
            return;
        };
        if !idle {
            return;
        }
        spawn_local(async move {
            let args = ListDocuments {
                collection: added.collection.id.clone(),
            };
            if let Ok(docs) = ipc::call(&args).await {
                let names = documents.get_value();
                let ours = docs
                    .into_iter()
                    .filter(|d| names.contains(&d.name))
                    .collect();
                listed.try_set(Some(ours));
            }
        });
    });
    let ask_again = move |_| {
        tray.draft.set(question.clone());
        if let Some(input) = document()
            .get_element_by_id("composer-input")
            .and_then(|e| e.dyn_into::<HtmlElement>().ok())
        {
            let _ = input.focus();
        }
    };
    view! {
        <div class="knowledge-offer small">
            {move || match state.get() {
                State::Offered | State::Adding => view! {
                    <button id="add-to-knowledge" class="small" disabled=move || matches!(state.get(), State::Adding)
                        title="Index the documents into a collection this thread searches, instead of sending them whole"
                        on:click=add>"Add to the thread's knowledge"</button>
                }.into_any(),
                State::Added(added) => view! {
                    <p class="added-to-knowledge">
                        {move || said(&added, &documents.get_value(), listed.get().as_deref())}
                    </p>
                }.into_any(),
                State::Failed(e) => view! {
                    <p class="run-error knowledge-offer-problem">{e.message}</p>
                }.into_any(),
            }}
            <Show when=move || matches!(state.get(), State::Added(_))>
                <button id="ask-without-file" class="ghost small" title="Put the question back in the box, without its files"
                    on:click=ask_again.clone()>"Ask without the file"</button>
            </Show>
        </div>
    }
}
