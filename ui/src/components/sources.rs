//! The sources a `search_knowledge` call gave the model, on its tool card instead of its
//! raw result: numbered as the answer cites them (`[1] report.pdf, p. 2`), each with the
//! start of its passage. Each opens its document's passages, first to last, with the
//! cited one highlighted and scrolled into view.

use art_types::IpcError;
use art_types::commands::ReadPassages;
use art_types::knowledge::{Cited, Passages, SearchOutput};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;

use crate::components::error_card::ErrorCard;
use crate::ipc;

/// A `search_knowledge` result as the tool wrote it (`None` for any other tool).
pub fn search_of(tool: &str, output: &Value) -> Option<SearchOutput> {
    SearchOutput::of_tool(tool, output)
}

/// The start of a passage, on one line.
fn snippet(text: &str) -> String {
    const CHARS: usize = 160;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(CHARS) {
        Some((at, _)) => format!("{}\u{2026}", &line[..at]),
        None => line,
    }
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
                        <span class="source-snippet muted small">{snippet(&s.text)}</span>
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
        let found = search_of("search_knowledge", &output).unwrap().results;
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
        assert!(search_of("calculator", &output).is_none());
        let none = search_of(
            "search_knowledge",
            &json!({ "results": [], "note": "Nothing" }),
        );
        assert!(
            none.unwrap().results.is_empty(),
            "nothing found is still a search"
        );
        assert!(search_of("search_knowledge", &json!("not one")).is_none());
    }

    #[test]
    fn a_snippet_is_one_line_cut_at_a_character() {
        assert_eq!(
            snippet("Irrigation\n  cost 310 euros."),
            "Irrigation cost 310 euros."
        );
        let long = "é".repeat(200);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), 161, "160 and the ellipsis");
        assert!(cut.ends_with('\u{2026}'));
    }
}
