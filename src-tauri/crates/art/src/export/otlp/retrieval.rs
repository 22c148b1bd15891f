//! A knowledge search as the GenAI conventions' retrieval span: under the
//! `execute_tool search_knowledge` span of the call, `retrieval {data source}` (CLIENT)
//! with `gen_ai.operation.name` `retrieval`, `gen_ai.data_source.id` (the collection the
//! search named, else `knowledge`: the thread's collections), `gen_ai.retrieval.top_k`
//! and `gen_ai.retrieval.documents` — each passage's id and score, as the conventions'
//! retrieval-documents schema has them. The query text (`gen_ai.retrieval.query.text`,
//! opt-in in the conventions) and the passages' document and place are written only
//! when content is exported. The search's failure is the span's error too.

use std::borrow::Cow;

use art_types::knowledge::{SEARCH_TOOL, SearchOutput};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::light::{Obs, Text, text as text_of};
use super::wire::{KeyValue, SPAN_KIND_CLIENT, Span, hex_id, int, text};
use super::{RunContext, json_text};

/// The data source of a search over the thread's collections (none named).
const THREAD_COLLECTIONS: &str = "knowledge";
/// The most passages a search returns when it does not say (as the tool).
const DEFAULT_K: u64 = 5;

/// What the model asked the search for.
#[derive(Deserialize)]
struct Asked<'a> {
    #[serde(borrow, default, deserialize_with = "text_of")]
    query: Text<'a>,
    #[serde(borrow, default, deserialize_with = "text_of")]
    collection: Text<'a>,
    #[serde(default)]
    k: Option<u64>,
}

/// The retrieval span under `tool_span`, when `tool` is a knowledge search.
pub(super) fn span<'r>(
    tool_span: &Span<'r>,
    tool: &'r Obs<'_>,
    context: &RunContext<'r>,
) -> Option<Span<'r>> {
    let c = &tool.content;
    if c.tool_name.as_deref() != Some(SEARCH_TOOL) {
        return None;
    }
    let asked = c
        .arguments
        .and_then(|a| serde_json::from_str::<Asked<'r>>(a.get()).ok());
    let (query, collection, k) = match asked {
        Some(a) => (a.query, a.collection, a.k),
        None => (None, None, None),
    };
    // The name's variable part borrows: a collection written with escapes (rare) is
    // named by the attribute only.
    let source: &'r str = match &collection {
        Some(Cow::Borrowed(name)) => name,
        _ => THREAD_COLLECTIONS,
    };
    let mut attributes: Vec<KeyValue<'r>> = Vec::with_capacity(8);
    attributes.push(text("gen_ai.operation.name", "retrieval"));
    attributes.push(text("gen_ai.data_source.id", source));
    if let Some(collection) = collection.filter(|c| c.as_ref() != source) {
        attributes.push(text("art.knowledge.collection", collection));
    }
    attributes.push(int("gen_ai.retrieval.top_k", k.unwrap_or(DEFAULT_K)));
    attributes.push(text("openinference.span.kind", "RETRIEVER"));
    let found = c
        .output
        .and_then(|o| serde_json::from_str::<SearchOutput>(&json_text(o)).ok());
    if let Some(found) = &found {
        let documents: Vec<serde_json::Value> = found
            .results
            .iter()
            .map(|r| {
                let mut document = serde_json::json!({
                    "id": r.chunk.to_string(),
                    "score": r.score,
                });
                if context.include_content {
                    document["art.document"] = r.document.clone().into();
                    document["art.place"] = r.place.clone().into();
                }
                document
            })
            .collect();
        attributes.push(int("art.retrieval.results", found.results.len() as u64));
        attributes.push(text(
            "gen_ai.retrieval.documents",
            serde_json::Value::from(documents).to_string(),
        ));
    }
    if context.include_content
        && let Some(query) = query
    {
        attributes.push(text("input.value", query.clone()));
        attributes.push(text("gen_ai.retrieval.query.text", query));
    }
    if c.status.as_deref() == Some("error") {
        let code = tool.meta.error_code.as_deref().unwrap_or("TOOL_ERROR");
        attributes.push(text("error.type", code));
    }
    let mut id = Sha256::new();
    id.update(tool_span.span_id);
    id.update(b":retrieval");
    Some(Span {
        span_id: hex_id(&id.finalize()),
        parent: Some(tool_span.span_id),
        name: ("retrieval ", source),
        kind: SPAN_KIND_CLIENT,
        start_ms: tool_span.start_ms,
        end_ms: tool_span.end_ms,
        attributes,
        events: Vec::new(),
        status_code: tool_span.status_code,
        status_message: tool_span.status_message.clone(),
    })
}
