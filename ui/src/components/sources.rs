//! The sources a `search_knowledge` call gave the model, on its tool card: numbered as
//! the answer cites them (`[1] report.pdf, p. 2`). Each opens its document's passages,
//! first to last, with the cited one highlighted and scrolled into view.

use art_types::IpcError;
use art_types::commands::ReadPassages;
use art_types::knowledge::{Cited, Passages, SEARCH_TOOL, SearchOutput};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;

use crate::components::error_card::ErrorCard;
use crate::ipc;

/// The sources in a `search_knowledge` result (none for any other tool, or a result
/// without them).
pub fn sources_of(tool: &str, output: &Value) -> Vec<Cited> {
    if tool != SEARCH_TOOL {
        return Vec::new();
    }
    serde_json::from_value::<SearchOutput>(output.clone())
        .map(|found| found.results)
        .unwrap_or_default()
}

/// The list on the card, and the viewer a source opens.
#[component]
pub fn Sources(sources: Vec<Cited>) -> impl IntoView {
    let open = RwSignal::new(None::<i64>);
    view! {
        <ol class="sources">
            {sources.into_iter().map(|s| {
                let chunk = s.chunk;
                view! {
                    <li>
                        <button class="link source" data-chunk=chunk.to_string()
                            title="Open the document at this passage"
                            on:click=move |_| open.set(Some(chunk))>
                            {format!("[{}] {}, {}", s.number, s.document, s.place)}
                        </button>
                    </li>
                }
            }).collect_view()}
        </ol>
        <SourceViewer open />
    }
}

/// The document of the open source, its passages in order, the cited one highlighted;
/// Escape or a click outside closes it.
#[component]
fn SourceViewer(open: RwSignal<Option<i64>>) -> impl IntoView {
    let content = RwSignal::new(None::<Result<Passages, IpcError>>);
    Effect::new(move |_| {
        content.set(None);
        if let Some(chunk) = open.get() {
            spawn_local(async move {
                let read = ipc::call(&ReadPassages { chunk }).await;
                content.try_set(Some(read));
                // Once drawn, bring the cited passage into view.
                request_animation_frame(|| {
                    if let Ok(Some(cited)) =
                        document().query_selector("#source-viewer .passage.cited")
                    {
                        cited.scroll_into_view();
                    }
                });
            });
        }
    });
    let close = move || open.set(None);
    move || {
        open.get().map(|cited| {
            view! {
                <div class="viewer-backdrop" on:click=move |_| close()>
                    <div id="source-viewer" class="viewer" on:click=|ev| ev.stop_propagation()
                        tabindex="-1" on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { close() }>
                        {move || match content.get() {
                            None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                            Some(Err(error)) => view! {
                                <header class="viewer-header">
                                    <button id="source-close" class="ghost small" on:click=move |_| close()>"Close"</button>
                                </header>
                                <ErrorCard error />
                            }.into_any(),
                            Some(Ok(found)) => view! {
                                <header class="viewer-header">
                                    <strong>{found.document.name.clone()}</strong>
                                    <span class="muted small" title=found.document.path.clone()>{found.document.path.clone()}</span>
                                    <button id="source-close" class="ghost small" on:click=move |_| close()>"Close"</button>
                                </header>
                                <div class="passages">
                                    {found.passages.into_iter().map(|p| view! {
                                        <section class="passage" class:cited=p.chunk == cited data-chunk=p.chunk.to_string()>
                                            <p class="muted small passage-place">{p.place}</p>
                                            <pre class="passage-text">{p.text}</pre>
                                        </section>
                                    }).collect_view()}
                                </div>
                            }.into_any(),
                        }}
                    </div>
                </div>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sources_are_read_from_a_search_result_only() {
        let output = json!({
            "results": [
                { "ref": 1, "document": "report.pdf", "place": "p. 2", "text": "…", "score": 1.9, "chunk": 7 },
                { "ref": 2, "document": "notes.md", "place": "lines 1–4, §Pruning", "text": "…", "score": 0.4, "chunk": 9 }
            ],
            "note": "Cite the passages you use as [ref]; use nothing else as a source."
        });
        let found = sources_of("search_knowledge", &output);
        assert_eq!(found.len(), 2);
        assert_eq!(
            (
                found[0].number,
                found[0].document.as_str(),
                found[0].place.as_str(),
                found[0].chunk
            ),
            (1, "report.pdf", "p. 2", 7)
        );
        assert!(sources_of("calculator", &output).is_empty());
        assert!(
            sources_of(
                "search_knowledge",
                &json!({ "results": [], "note": "Nothing" })
            )
            .is_empty()
        );
    }
}
