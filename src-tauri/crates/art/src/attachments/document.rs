//! Documents' text, extracted in process: PDF (`pdf_oxide`), Word (`office_oxide`, whose
//! zip reader bounds what a package may inflate to), HTML (`html2text`), and text as it
//! is. PDF pages are marked (`--- page 3 ---`) so the model, and a citation, can say
//! where something is. A reader's panic on a hostile file becomes a refusal, never a
//! crash.

use std::io::Cursor;

use art_types::AttachmentProblem;

use super::sniff::{Format, as_text};

/// The most one part of a Word package may inflate to.
const MAX_PART_BYTES: u64 = 64 << 20;

/// A document's text as the model gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The text, with page markers for paged formats.
    pub text: String,
    /// Pages, for paged formats.
    pub pages: Option<u32>,
}

/// The marker before page `n` (from 1).
pub fn page_marker(n: usize) -> String {
    format!("--- page {n} ---")
}

/// Extract the text of document `name` (its `format` sniffed, not an image).
pub fn extract(name: &str, format: Format, bytes: &[u8]) -> Result<Extracted, AttachmentProblem> {
    let run = || match format {
        Format::Pdf => pdf(name, bytes),
        Format::Docx => docx(name, bytes),
        Format::Html => html(name, bytes),
        _ => text(name, bytes),
    };
    match crate::panics::catch(run) {
        Ok(result) => result,
        Err(_) => Err(AttachmentProblem::Malformed {
            name: name.to_owned(),
            detail: "its reader failed on it (the file is damaged or unusual)".into(),
        }),
    }
}

fn malformed(name: &str, detail: impl ToString) -> AttachmentProblem {
    AttachmentProblem::Malformed {
        name: name.to_owned(),
        detail: detail.to_string(),
    }
}

fn text(name: &str, bytes: &[u8]) -> Result<Extracted, AttachmentProblem> {
    let text = as_text(bytes).ok_or_else(|| AttachmentProblem::Mismatch {
        name: name.to_owned(),
        claimed: "text".into(),
        found: "binary data".into(),
    })?;
    Ok(Extracted {
        text: text.to_owned(),
        pages: None,
    })
}

fn html(name: &str, bytes: &[u8]) -> Result<Extracted, AttachmentProblem> {
    // Wide lines: the model reads paragraphs, not a terminal.
    let text = html2text::from_read(bytes, 200).map_err(|e| malformed(name, e))?;
    Ok(Extracted {
        text: text.trim_end().to_owned(),
        pages: None,
    })
}

fn docx(name: &str, bytes: &[u8]) -> Result<Extracted, AttachmentProblem> {
    use office_oxide::{Document, DocumentFormat, options::ParseOptions};
    let mut options = ParseOptions::default();
    // A zip bomb inflates to at most this before it is refused (a real document.xml of
    // 64 MiB is some 20,000 pages of text).
    options.limits.part_bytes = MAX_PART_BYTES;
    options.limits.package_bytes = 4 * MAX_PART_BYTES;
    let document =
        Document::from_reader_with(Cursor::new(bytes.to_vec()), DocumentFormat::Docx, &options)
            .map_err(|e| malformed(name, e))?;
    // Markdown keeps headings, lists and tables, which plain text flattens.
    let text = document.to_markdown();
    Ok(Extracted {
        text: text.trim_end().to_owned(),
        pages: None,
    })
}

fn pdf(name: &str, bytes: &[u8]) -> Result<Extracted, AttachmentProblem> {
    use pdf_oxide::{Error, PdfDocument};
    let refused = |e: Error| match e {
        Error::EncryptedPdf => AttachmentProblem::Encrypted {
            name: name.to_owned(),
        },
        other => malformed(name, other),
    };
    let document = PdfDocument::from_bytes(bytes.to_vec()).map_err(refused)?;
    // Readable without a password when only an owner password is set (the empty user
    // password opens it); otherwise its pages would read as empty.
    if document.is_encrypted() && !matches!(document.authenticate(b""), Ok(true)) {
        return Err(AttachmentProblem::Encrypted {
            name: name.to_owned(),
        });
    }
    let pages = document.page_count().map_err(refused)?;
    if pages == 0 {
        return Err(malformed(name, "it has no pages"));
    }
    let mut text = String::new();
    let mut with_text = 0;
    for page in 0..pages {
        let content = document.extract_text(page).map_err(refused)?;
        let content = content.trim();
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&page_marker(page + 1));
        text.push('\n');
        if content.is_empty() {
            text.push_str("(no text on this page)");
        } else {
            with_text += 1;
            text.push_str(content);
        }
    }
    let pages = u32::try_from(pages).unwrap_or(u32::MAX);
    if with_text == 0 {
        return Err(AttachmentProblem::NoText {
            name: name.to_owned(),
            pages,
        });
    }
    Ok(Extracted {
        text,
        pages: Some(pages),
    })
}

#[cfg(test)]
mod tests;
