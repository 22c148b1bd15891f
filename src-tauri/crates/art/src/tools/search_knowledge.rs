//! `search_knowledge`: the agent looks something up in the user's knowledge collections
//! (a tool like any other, so the search is visible, approvable, traced and exported).
//! Each passage found comes numbered with its document and place, for the answer to cite
//! as `[1]`; when nothing matches the tool says so, and that no source may be invented.

use std::sync::Arc;

use art_types::knowledge::{Cited, KnowledgeProblem, SearchOutput};
use art_types::{ToolExample, ToolSchema};
use serde_json::{Value, json};

use super::{ExecutionContext, ToolError, ToolExecutor};
use crate::knowledge::KnowledgeStore;

/// Name the model calls it by.
pub const NAME: &str = art_types::knowledge::SEARCH_TOOL;

/// Passages returned when the call does not say.
const DEFAULT_K: usize = 5;

/// What the model is told when nothing matches.
pub const NOTHING_FOUND: &str = "Nothing in the knowledge collections matches this search. \
    Say so plainly; do not cite or invent sources.";

/// The tool, over the data directory's knowledge database.
pub struct SearchKnowledgeTool {
    schema: ToolSchema,
    store: Arc<KnowledgeStore>,
}

impl SearchKnowledgeTool {
    /// The tool searching `store`.
    pub fn new(store: Arc<KnowledgeStore>) -> Self {
        Self {
            schema: ToolSchema {
                name: NAME.into(),
                description: "Search the user's documents (their knowledge collections) for \
                    passages about something. Returns numbered passages with their document \
                    and page or section: cite them in the answer as [1], [2]."
                    .into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 500,
                            "description": "What to look for, in words likely to be in the documents."
                        },
                        "collection": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 80,
                            "description": "Only this collection (its name); default: all the thread's collections."
                        },
                        "k": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": 20,
                            "description": "How many passages (default 5)."
                        }
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }),
                output_schema: None,
                examples: vec![ToolExample {
                    input: json!({ "query": "irrigation cost per hectare", "k": 3 }),
                    output: None,
                    description: Some("three passages about irrigation costs".into()),
                }],
            },
            store,
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for SearchKnowledgeTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn execute(
        &self,
        arguments: &Value,
        context: &ExecutionContext,
    ) -> Result<Value, ToolError> {
        let query = arguments["query"].as_str().unwrap_or_default().to_owned();
        let collection = arguments["collection"].as_str().map(str::to_owned);
        let k = arguments["k"]
            .as_u64()
            .and_then(|k| usize::try_from(k).ok())
            .unwrap_or(DEFAULT_K);
        let (store, scope) = (Arc::clone(&self.store), context.knowledge.clone());
        // SQLite work, off the async workers.
        let found = tokio::task::spawn_blocking(move || {
            store.search_scoped(&query, &scope, collection.as_deref(), k)
        })
        .await
        .map_err(|e| ToolError::new("KNOWLEDGE_FAILED", format!("the search stopped: {e}")))?;
        let found = found.map_err(|e| match e {
            KnowledgeProblem::NoCollection { .. } => ToolError::new("NO_COLLECTION", e.to_string()),
            KnowledgeProblem::EmptyQuery => ToolError::new("EMPTY_QUERY", e.to_string()),
            other => ToolError::new("KNOWLEDGE_FAILED", other.to_string()),
        })?;
        let hits = found.hits;
        let output = if hits.is_empty() {
            SearchOutput {
                results: Vec::new(),
                note: NOTHING_FOUND.into(),
            }
        } else {
            SearchOutput {
                results: hits
                    .into_iter()
                    .zip(1..)
                    .map(|(h, number)| Cited {
                        number,
                        document: h.name,
                        place: h.place,
                        text: h.text,
                        score: h.score,
                        chunk: h.chunk,
                    })
                    .collect(),
                note: cite_note(found.words_only),
            }
        };
        serde_json::to_value(output).map_err(|e| ToolError::new("KNOWLEDGE_FAILED", e.to_string()))
    }
}

/// What the model is told with the passages: how to cite, and (for the record) how many
/// passages could only be matched by their words.
fn cite_note(words_only: u64) -> String {
    let cite = "Cite the passages you use as [ref]; use nothing else as a source.";
    match words_only {
        0 => cite.into(),
        1 => format!("{cite} (1 passage is not embedded yet: it was matched by its words only.)"),
        n => format!(
            "{cite} ({n} passages are not embedded yet: they were matched by their words only.)"
        ),
    }
}
