//! The attachments of a run's history, loaded once when the run starts: each
//! document's text and each image's bytes (the copy made for providers), read from the
//! store off the async workers. The question's own attachments are checked against the
//! model first — an image for a model that does not see images, a document longer than
//! the room in its window — and refused before anything is sent.

use std::collections::HashMap;
use std::sync::Arc;

use art_types::{
    Attachment, AttachmentKind, AttachmentProblem, ConversationMessage, PromptImage, PromptMessage,
    PromptRole,
};

use crate::attachments::{Attachments, prompt};

/// What a user message brings to a prompt besides its text.
#[derive(Debug, Default)]
struct Loaded {
    documents: Vec<(Attachment, String)>,
    images: Vec<PromptImage>,
    /// Images of an earlier question that this model cannot see.
    left_out: Vec<Attachment>,
}

/// The loaded attachments of a history, by message id.
#[derive(Debug, Default)]
pub struct Attached {
    by_message: HashMap<String, Loaded>,
}

/// What the model is known to take.
#[derive(Debug, Clone, Copy)]
pub struct ModelReach<'a> {
    /// The model's name, for messages.
    pub model: &'a str,
    /// Whether it sees images (`None`: unknown, so it is tried).
    pub sees_images: Option<bool>,
    /// Tokens the question may take: the window less the system text and the answer's
    /// share (`None`: unknown, no limit of ours).
    pub room: Option<u64>,
    /// The model's whole window, for messages.
    pub window: Option<u64>,
    /// The window is assumed ([`art_types::attachment::ASSUMED_WINDOW`]), not the
    /// model's own.
    pub assumed: bool,
}

/// Refuse the question's attachments that cannot reach the model: an image for a model
/// known not to see images, documents that together do not fit the room in its window.
pub fn check(question: &[Attachment], reach: ModelReach<'_>) -> Result<(), AttachmentProblem> {
    if reach.sees_images == Some(false)
        && let Some(image) = question.iter().find(|a| a.is_image())
    {
        return Err(AttachmentProblem::NoVision {
            name: image.name.clone(),
            model: reach.model.to_owned(),
        });
    }
    if let (Some(room), Some(window)) = (reach.room, reach.window) {
        let documents: Vec<&Attachment> = question.iter().filter(|a| !a.is_image()).collect();
        let tokens: u64 = documents.iter().map(|a| a.tokens()).sum();
        if tokens > room
            && let Some(largest) = documents.iter().max_by_key(|a| a.tokens())
        {
            let name = match documents.len() {
                1 => largest.name.clone(),
                n => format!(
                    "{} (with {} other document{})",
                    largest.name,
                    n - 1,
                    if n == 2 { "" } else { "s" }
                ),
            };
            return Err(AttachmentProblem::TooLongForModel {
                name,
                tokens,
                window,
                assumed: reach.assumed,
            });
        }
    }
    Ok(())
}

impl Attached {
    /// Load what `history`'s messages attach from `store`. Images go only to a model
    /// that may see them; for one that does not, a line in the text says an image was
    /// there. `Err` when an attachment's bytes are gone (the question cannot be asked
    /// as it was).
    pub async fn load(
        store: Option<&Arc<Attachments>>,
        history: &[ConversationMessage],
        sees_images: Option<bool>,
    ) -> Result<Self, AttachmentProblem> {
        let wanted: Vec<(String, Vec<Attachment>)> = history
            .iter()
            .filter(|m| !m.attachments.is_empty())
            .map(|m| (m.message_id.clone(), m.attachments.clone()))
            .collect();
        if wanted.is_empty() {
            return Ok(Self::default());
        }
        let Some(store) = store.cloned() else {
            let first = &wanted[0].1[0];
            return Err(AttachmentProblem::Missing {
                name: first.name.clone(),
            });
        };
        let images = sees_images != Some(false);
        tokio::task::spawn_blocking(move || {
            let mut by_message = HashMap::new();
            for (message_id, attachments) in wanted {
                let mut loaded = Loaded::default();
                for attachment in attachments {
                    match &attachment.kind {
                        AttachmentKind::Document { .. } => {
                            let text = store.text(&attachment)?.unwrap_or_default();
                            loaded.documents.push((attachment, text));
                        }
                        AttachmentKind::Image { .. } if !images => {
                            loaded.left_out.push(attachment);
                        }
                        AttachmentKind::Image { .. } => {
                            if let Some((bytes, mime)) = store.image_to_send(&attachment)? {
                                loaded
                                    .images
                                    .push(prompt::image_part(&attachment, bytes, mime));
                            }
                        }
                    }
                }
                by_message.insert(message_id, loaded);
            }
            Ok(Self { by_message })
        })
        .await
        .unwrap_or_else(|_| {
            Err(AttachmentProblem::Unreadable {
                name: "attachments".into(),
                detail: "reading them stopped".into(),
            })
        })
    }

    /// The prompt message of user message `m`: its documents ahead of its text, its
    /// images as image parts.
    pub fn user_message(&self, m: &ConversationMessage) -> PromptMessage {
        let Some(loaded) = self.by_message.get(&m.message_id) else {
            return PromptMessage::text(PromptRole::User, &m.content);
        };
        let documents: Vec<(&Attachment, String)> = loaded
            .documents
            .iter()
            .map(|(a, text)| (a, text.clone()))
            .collect();
        let mut text = prompt::question_with_documents(&m.content, &documents);
        for image in &loaded.left_out {
            text.push_str("\n\n");
            text.push_str(&prompt::image_left_out(image));
        }
        let mut message = PromptMessage::text(PromptRole::User, text);
        message.images = loaded.images.clone();
        message
    }
}

#[cfg(test)]
mod tests;
