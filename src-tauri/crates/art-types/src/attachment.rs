//! Attachments: images and documents a user gives a message. The bytes live once in the
//! data directory's content-addressed store; a message carries only these facts about
//! them (never base64), and every side — storage, agent, adapters, exports, UI — reads
//! them from here.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One file on a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// The SHA-256 (lowercase hex) of the original bytes: their name in the store.
    pub id: String,
    /// The file's name as the user gave it (no folders).
    pub name: String,
    /// Its media type as read from the bytes (`image/png`, `application/pdf`).
    pub mime: String,
    /// Bytes of the original.
    pub size: u64,
    /// What the model gets of it.
    pub kind: AttachmentKind,
}

/// An attachment as an image or as a document's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttachmentKind {
    /// Sent to the model as an image (PNG, JPEG, WebP; a GIF's first frame).
    Image {
        /// Pixels across.
        width: u32,
        /// Pixels down.
        height: u32,
        /// The store id of the copy sent instead of the original (scaled down, or made
        /// PNG or JPEG), when the original is not sent as it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sent: Option<String>,
    },
    /// Sent to the model as its extracted text, with its name and page markers.
    Document {
        /// The store id of the extracted text (UTF-8, page markers included).
        text: String,
        /// Pages (PDF), when the format has them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pages: Option<u32>,
        /// Estimated tokens of the text as the model gets it.
        tokens: u64,
    },
}

impl Attachment {
    /// Whether the model gets it as an image.
    pub fn is_image(&self) -> bool {
        matches!(self.kind, AttachmentKind::Image { .. })
    }

    /// Estimated tokens it adds to a prompt: a document's text; for an image, what the
    /// providers charge for one scaled to at most 1568 pixels a side (Anthropic's
    /// `width × height / 750`, at most ~1,600; OpenAI and Gemini charge less).
    pub fn tokens(&self) -> u64 {
        match &self.kind {
            AttachmentKind::Document { tokens, .. } => *tokens,
            AttachmentKind::Image { width, height, .. } => {
                let scale = (1568.0 / f64::from((*width).max(*height).max(1))).min(1.0);
                let pixels = f64::from(*width) * f64::from(*height) * scale * scale;
                ((pixels / 750.0).ceil() as u64).clamp(85, 1_600)
            }
        }
    }

    /// A short description for people: `photo.jpg (image, 4032×3024, 3.1 MB)`,
    /// `report.pdf (12 pages, ~8,400 tokens, 3.1 MB)`.
    pub fn describe(&self) -> String {
        let kind = if self.is_image() { "image, " } else { "" };
        format!("{} ({kind}{})", self.name, self.facts(", "))
    }

    /// What it is in numbers, joined by `separator`: `4032×3024 · 3.1 MB`, `12 pages ·
    /// ~8,400 tokens · 3.1 MB` (a chip's second line, and [`Self::describe`]'s).
    pub fn facts(&self, separator: &str) -> String {
        let size = human_size(self.size);
        let facts = match &self.kind {
            AttachmentKind::Image { width, height, .. } => vec![format!("{width}×{height}"), size],
            AttachmentKind::Document { pages, tokens, .. } => {
                let pages = pages.map(|p| format!("{p} page{}", if p == 1 { "" } else { "s" }));
                pages
                    .into_iter()
                    .chain([format!("~{} tokens", grouped(*tokens)), size])
                    .collect()
            }
        };
        facts.join(separator)
    }
}

/// The context window assumed for a model whose own is not known (not set in the
/// thread's settings, not reported by its server): what a question's documents and the
/// history are fitted to, so a huge file is never sent whole to a model that cannot read
/// it. Most current models read at least this much.
pub const ASSUMED_WINDOW: u64 = 131_072;

/// The largest context window of any model offered today (2 M tokens): a document longer
/// than this reaches no model whole, only through a knowledge collection.
pub const LARGEST_WINDOW: u64 = 2_097_152;

/// Why a document does not fit, with the numbers and what to do.
fn too_long(name: &str, tokens: u64, window: u64, assumed: bool) -> String {
    let instead = "add it to the thread's knowledge instead (the agent then searches it)";
    if tokens > LARGEST_WINDOW {
        format!(
            "{name} is ~{} tokens, longer than any model reads (the largest take ~{}): {instead}",
            grouped(tokens),
            grouped(LARGEST_WINDOW)
        )
    } else if assumed {
        format!(
            "{name} is ~{} tokens, more than the {} a model is assumed to read (the model's \
             own window is not known: set it in the thread's settings if it reads more): \
             {instead}",
            grouped(tokens),
            grouped(window)
        )
    } else {
        format!(
            "{name} is ~{} tokens, the model reads {}: {instead}, or choose a model with a \
             larger window",
            grouped(tokens),
            grouped(window)
        )
    }
}

/// `3.1 MB`, `840 KB`, `12 bytes`.
pub fn human_size(bytes: u64) -> String {
    const KB: f64 = 1_000.0;
    let b = bytes as f64;
    if b >= KB * KB * KB {
        format!("{:.1} GB", b / (KB * KB * KB))
    } else if b >= KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else if b >= KB {
        format!("{:.0} KB", b / KB)
    } else {
        format!("{bytes} bytes")
    }
}

/// `182,000`: a count with thousands separated.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Why a file was not attached, or a message with attachments not sent. Every variant
/// is a plain sentence for people (its `Display`) and structured facts for code
/// (`{"problem": "too_large", …}` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum AttachmentProblem {
    /// The file holds nothing.
    #[error("{name} is empty")]
    Empty {
        /// The file's name.
        name: String,
    },
    /// Larger than attachments may be; refused before it was read.
    #[error("{name} is {}; attachments may be at most {}", human_size(*size), human_size(*limit))]
    TooLarge {
        /// The file's name.
        name: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// Not a kind of file the model can be given.
    #[error(
        "{name} is {found}, which cannot be attached (images: PNG, JPEG, WebP, GIF; documents: text, Markdown, source code, HTML, PDF, DOCX)"
    )]
    Unsupported {
        /// The file's name.
        name: String,
        /// What it is, as far as can be told.
        found: String,
    },
    /// Its bytes are not what its name says.
    #[error("{name} is named like {claimed} but holds {found}")]
    Mismatch {
        /// The file's name.
        name: String,
        /// What the extension says.
        claimed: String,
        /// What the bytes are.
        found: String,
    },
    /// A PDF or DOCX locked with a password.
    #[error("{name} is encrypted; remove its password and attach it again")]
    Encrypted {
        /// The file's name.
        name: String,
    },
    /// The file is damaged or not a valid file of its kind.
    #[error("{name} could not be read: {detail}")]
    Malformed {
        /// The file's name.
        name: String,
        /// What the reader said.
        detail: String,
    },
    /// A PDF whose pages are pictures only.
    #[error("{name} has no text layer ({pages} scanned page{}): OCR is not supported", if *pages == 1 { "" } else { "s" })]
    NoText {
        /// The file's name.
        name: String,
        /// Its pages.
        pages: u32,
    },
    /// An image too large to decode safely.
    #[error("{name} is {width}×{height} pixels; images may have at most {limit} pixels")]
    ImageTooLarge {
        /// The file's name.
        name: String,
        /// Pixels across.
        width: u32,
        /// Pixels down.
        height: u32,
        /// Largest pixel count taken.
        limit: u64,
    },
    /// The file could not be opened or read.
    #[error("{name} could not be read: {detail}")]
    Unreadable {
        /// The file's name (or path).
        name: String,
        /// What the system said.
        detail: String,
    },
    /// The file changed while it was read.
    #[error("{name} changed while it was read; attach it again once it is written")]
    Changed {
        /// The file's name.
        name: String,
    },
    /// A document longer than the model's context window (or than
    /// [`ASSUMED_WINDOW`] when the model's is not known).
    #[error("{}", too_long(name, *tokens, *window, *assumed))]
    TooLongForModel {
        /// The file's name.
        name: String,
        /// Its estimated tokens.
        tokens: u64,
        /// The model's context window.
        window: u64,
        /// The window is not the model's own (unknown: [`ASSUMED_WINDOW`]).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        assumed: bool,
    },
    /// An image for a model known not to see images.
    #[error(
        "{model} does not see images, so {name} would not reach it: choose a model with vision, or remove the image"
    )]
    NoVision {
        /// The image's name.
        name: String,
        /// The model.
        model: String,
    },
    /// The attachment's bytes are gone from the store (or damaged).
    #[error("{name} is no longer in the attachment store")]
    Missing {
        /// The file's name.
        name: String,
    },
}

impl fmt::Display for AttachmentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Image { .. } => "image",
            Self::Document { .. } => "document",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(tokens: u64, pages: Option<u32>) -> Attachment {
        Attachment {
            id: "a".repeat(64),
            name: "report.pdf".into(),
            mime: "application/pdf".into(),
            size: 3_100_000,
            kind: AttachmentKind::Document {
                text: "b".repeat(64),
                pages,
                tokens,
            },
        }
    }

    #[test]
    fn an_attachment_is_stored_as_facts_with_a_tagged_kind() {
        let image = Attachment {
            id: "c".repeat(64),
            name: "photo.jpg".into(),
            mime: "image/jpeg".into(),
            size: 4_000_000,
            kind: AttachmentKind::Image {
                width: 4032,
                height: 3024,
                sent: Some("d".repeat(64)),
            },
        };
        let wire = serde_json::to_value(&image).unwrap();
        assert_eq!(wire["kind"]["type"], "image");
        assert_eq!(wire["kind"]["width"], 4032);
        assert_eq!(serde_json::from_value::<Attachment>(wire).unwrap(), image);
        assert_eq!(image.describe(), "photo.jpg (image, 4032×3024, 4.0 MB)");
        // Scaled to 1568 a side: 1568 × 1176 / 750 → the ~1,600 providers charge at most.
        assert_eq!(image.tokens(), 1_600);
        let doc = document(182_000, Some(12));
        assert_eq!(
            doc.describe(),
            "report.pdf (12 pages, ~182,000 tokens, 3.1 MB)"
        );
        assert_eq!(doc.tokens(), 182_000);
        assert_eq!(
            document(5, Some(1)).describe(),
            "report.pdf (1 page, ~5 tokens, 3.1 MB)"
        );
    }

    #[test]
    fn problems_say_what_and_carry_their_numbers() {
        let long = AttachmentProblem::TooLongForModel {
            name: "report.pdf".into(),
            tokens: 180_000,
            window: 32_768,
            assumed: false,
        };
        assert_eq!(
            long.to_string(),
            "report.pdf is ~180,000 tokens, the model reads 32,768: add it to the thread's \
             knowledge instead (the agent then searches it), or choose a model with a larger \
             window"
        );
        let unknown = AttachmentProblem::TooLongForModel {
            name: "log.txt".into(),
            tokens: 200_000,
            window: ASSUMED_WINDOW,
            assumed: true,
        };
        assert!(
            unknown
                .to_string()
                .contains("more than the 131,072 a model is assumed to read"),
            "{unknown}"
        );
        let huge = AttachmentProblem::TooLongForModel {
            name: "dump.txt".into(),
            tokens: 21_000_000,
            window: ASSUMED_WINDOW,
            assumed: true,
        };
        assert!(
            huge.to_string().starts_with(
                "dump.txt is ~21,000,000 tokens, longer than any model reads (the largest take \
                 ~2,097,152): add it to the thread's knowledge"
            ),
            "{huge}"
        );
        let wire = serde_json::to_value(&long).unwrap();
        assert_eq!(wire["problem"], "too_long_for_model");
        assert_eq!(wire["window"], 32_768);
        let scanned = AttachmentProblem::NoText {
            name: "scan.pdf".into(),
            pages: 3,
        };
        assert_eq!(
            scanned.to_string(),
            "scan.pdf has no text layer (3 scanned pages): OCR is not supported"
        );
        let big = AttachmentProblem::TooLarge {
            name: "disk.img".into(),
            size: 2 << 30,
            limit: 512_000_000,
        };
        assert_eq!(
            big.to_string(),
            "disk.img is 2.1 GB; attachments may be at most 512.0 MB"
        );
    }
}
