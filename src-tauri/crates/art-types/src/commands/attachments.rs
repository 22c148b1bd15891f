//! The commands that attach files to the next question and show attachments. Files
//! come from the system's picker or a drop on the window, both read by the backend
//! (the page never names a path it could read); pasted bytes come from the page.

use serde::{Deserialize, Serialize};

use crate::Attachment;

/// Attach bytes the page holds (an image pasted from the clipboard, a pasted file),
/// base64-encoded. Returns what the composer's chip shows; a refusal is an
/// `ATTACHMENT` error whose details are the [`AttachmentProblem`](crate::AttachmentProblem).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachBytes {
    /// The name to show (a pasted image has none: `pasted image.png`).
    pub name: String,
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
}

/// What an attachment holds, to show it: an image as a data URL, a document as its
/// extracted text (page markers included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadAttachment {
    /// The attachment, as a message or the composer holds it.
    pub attachment: Attachment,
    /// For an image: the original bytes, at full size (else the copy sent, lighter).
    #[serde(default)]
    pub original: bool,
}

/// The content of an attachment, as [`ReadAttachment`] returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AttachmentContent {
    /// An image, as `data:<mime>;base64,…`.
    Image(String),
    /// A document's text.
    Text(String),
}

/// Choose files in the system's file picker (several at once) and attach each; returns
/// what was attached and what was refused, and why. Nothing when the picker is closed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PickAttachments {}

/// What [`PickAttachments`] attached and refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Picked {
    /// The files attached, in the order chosen.
    pub attached: Vec<Attachment>,
    /// The files refused, each with its reason.
    pub refused: Vec<crate::AttachmentProblem>,
}
