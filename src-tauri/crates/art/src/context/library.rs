//! The prompt library: named system prompts stored with the threads, which a thread's
//! configuration can pick (`promptId`) and override with its own text.

use std::sync::Arc;

use art_types::SavedPrompt;

use super::ContextError;
use super::validate::MAX_SYSTEM_PROMPT;
use crate::clock;
use crate::storage::{self, Collection, Query, Record, StorageAdapter};

/// Longest prompt name, in characters.
pub const MAX_PROMPT_NAME: usize = 80;

/// Named system prompts.
pub struct PromptLibrary {
    storage: Arc<dyn StorageAdapter>,
}

fn record(p: &SavedPrompt) -> Result<Record, ContextError> {
    Ok(Record {
        id: p.prompt_id.clone(),
        thread_id: None,
        trace_id: None,
        kind: None,
        timestamp: p.updated_at,
        search_text: None,
        body: storage::encode(p)?,
        parent: None,
    })
}

fn invalid(field: &'static str, message: impl Into<String>) -> ContextError {
    ContextError::InvalidField {
        field,
        message: message.into(),
    }
}

impl PromptLibrary {
    /// A library over `storage`.
    pub fn new(storage: Arc<dyn StorageAdapter>) -> Self {
        Self { storage }
    }

    /// Every prompt, by name (case-insensitive).
    pub async fn list(&self) -> Result<Vec<SavedPrompt>, ContextError> {
        let mut all = self
            .storage
            .query(Collection::Prompts, &Query::default())
            .await?
            .iter()
            .map(|r| r.decode(Collection::Prompts))
            .collect::<Result<Vec<SavedPrompt>, _>>()?;
        all.sort_by_cached_key(|p| p.name.to_lowercase());
        Ok(all)
    }

    /// One prompt, if it exists.
    pub async fn get(&self, prompt_id: &str) -> Result<Option<SavedPrompt>, ContextError> {
        match self.storage.get(Collection::Prompts, prompt_id).await? {
            Some(r) => Ok(Some(r.decode(Collection::Prompts)?)),
            None => Ok(None),
        }
    }

    /// Create (`prompt_id` = `None`) or update a prompt. Names are trimmed, required,
    /// at most [`MAX_PROMPT_NAME`] characters and unique regardless of case; the text is
    /// required and at most [`MAX_SYSTEM_PROMPT`] characters.
    pub async fn save(
        &self,
        prompt_id: Option<&str>,
        name: &str,
        content: &str,
    ) -> Result<SavedPrompt, ContextError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(invalid("name", "give the prompt a name"));
        }
        if name.chars().count() > MAX_PROMPT_NAME {
            return Err(invalid(
                "name",
                format!("a prompt name has at most {MAX_PROMPT_NAME} characters"),
            ));
        }
        if content.trim().is_empty() {
            return Err(invalid("content", "write the prompt's text"));
        }
        if content.chars().count() > MAX_SYSTEM_PROMPT {
            return Err(invalid(
                "content",
                format!("a prompt has at most {MAX_SYSTEM_PROMPT} characters"),
            ));
        }
        let all = self.list().await?;
        let taken = all.iter().any(|p| {
            p.name.to_lowercase() == name.to_lowercase() && Some(p.prompt_id.as_str()) != prompt_id
        });
        if taken {
            return Err(invalid(
                "name",
                format!("a prompt named “{name}” exists already"),
            ));
        }
        let now = clock::now_ms();
        let prompt = match prompt_id {
            Some(id) => {
                let old = all
                    .into_iter()
                    .find(|p| p.prompt_id == id)
                    .ok_or_else(|| invalid("promptId", "that prompt no longer exists"))?;
                SavedPrompt {
                    name: name.to_owned(),
                    content: content.to_owned(),
                    updated_at: now.max(old.updated_at),
                    ..old
                }
            }
            None => SavedPrompt {
                prompt_id: clock::new_id(),
                name: name.to_owned(),
                content: content.to_owned(),
                created_at: now,
                updated_at: now,
            },
        };
        self.storage
            .set(Collection::Prompts, vec![record(&prompt)?])
            .await?;
        Ok(prompt)
    }

    /// Delete a prompt; `false` if it did not exist. Threads that picked it fall back
    /// to the app's default prompt.
    pub async fn delete(&self, prompt_id: &str) -> Result<bool, ContextError> {
        Ok(self.storage.delete(Collection::Prompts, prompt_id).await?)
    }
}
