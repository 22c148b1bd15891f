//! How attachments appear in a prompt: a document's text framed with its name ahead of
//! the question; an image as the provider's own image part ([`PromptImage`]), and, for a
//! model that does not see images, a line saying one was left out — never a silent drop.

use art_types::{Attachment, PromptImage};

/// A document's text as the model reads it: framed, with its name.
pub fn framed(name: &str, text: &str) -> String {
    format!(
        "<document name=\"{}\">\n{text}\n</document>",
        name.replace(['"', '<', '>'], "'")
    )
}

/// The question's text with its documents ahead of it.
pub fn question_with_documents(question: &str, documents: &[(&Attachment, String)]) -> String {
    let mut out = String::new();
    for (attachment, text) in documents {
        out.push_str(&framed(&attachment.name, text));
        out.push_str("\n\n");
    }
    out.push_str(question);
    out
}

/// What stands in the text for an image a model cannot see.
pub fn image_left_out(attachment: &Attachment) -> String {
    format!(
        "[An image, {}, was attached here; this model does not see images.]",
        attachment.name
    )
}

/// An image part for the prompt.
pub fn image_part(attachment: &Attachment, bytes: Vec<u8>, mime: String) -> PromptImage {
    PromptImage::new(attachment.clone(), mime, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use art_types::AttachmentKind;

    #[test]
    fn documents_come_before_the_question_framed_with_their_names() {
        let doc = Attachment {
            id: "a".repeat(64),
            name: "q\"3\".pdf".into(),
            mime: "application/pdf".into(),
            size: 10,
            kind: AttachmentKind::Document {
                text: "b".repeat(64),
                pages: Some(1),
                tokens: 5,
            },
        };
        let text = question_with_documents(
            "What about pears?",
            &[(&doc, "--- page 1 ---\nPears were late.".into())],
        );
        assert_eq!(
            text,
            "<document name=\"q'3'.pdf\">\n--- page 1 ---\nPears were late.\n</document>\n\nWhat about pears?"
        );
    }
}
