//! Attachments: files and images a user gives a message. [`Attachments`] reads a file
//! (refused by its size before it is read, and if it changes while read), tells what it
//! is from its bytes ([`sniff`]), checks an image and makes the copy providers take
//! ([`image`]) or extracts a document's text ([`document`]), and only then keeps the
//! bytes — the original, the copy sent, the extracted text — in the content-addressed
//! [`store`]. A refused file leaves nothing behind. Messages carry the resulting
//! [`Attachment`] (facts and store ids), never the bytes.

pub mod document;
pub mod image;
pub mod prompt;
pub mod sniff;
pub mod store;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use art_types::{Attachment, AttachmentKind, AttachmentProblem};

pub use store::{BlobError, BlobId, BlobStore};

use crate::agent::history::estimated_tokens;

/// The attachment store and what reads files into it. Blocking: async callers use
/// `spawn_blocking`.
#[derive(Debug)]
pub struct Attachments {
    store: BlobStore,
}

impl Attachments {
    /// Attachments kept under `root`, taking files up to `limit` bytes.
    pub fn open(root: impl Into<std::path::PathBuf>, limit: u64) -> Result<Self, BlobError> {
        Ok(Self {
            store: BlobStore::open(root, limit)?,
        })
    }

    /// The bytes' store.
    pub fn store(&self) -> &BlobStore {
        &self.store
    }

    /// The largest file taken, in bytes.
    pub fn limit(&self) -> u64 {
        self.store.limit()
    }

    /// Attach the file at `path`, named by its file name.
    pub fn add_file(&self, path: &Path) -> Result<Attachment, AttachmentProblem> {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let bytes = self.read(path, &name)?;
        self.add_bytes(&name, &bytes)
    }

    /// Attach `bytes` named `name` (a pasted image, a dropped file already read).
    pub fn add_bytes(&self, name: &str, bytes: &[u8]) -> Result<Attachment, AttachmentProblem> {
        let name = clean_name(name);
        if bytes.is_empty() {
            return Err(AttachmentProblem::Empty { name });
        }
        let size = bytes.len() as u64;
        if size > self.limit() {
            return Err(AttachmentProblem::TooLarge {
                name,
                size,
                limit: self.limit(),
            });
        }
        let format = sniff::sniff(&name, bytes)?;
        // The original is written and hashed on the other core while it is checked, and
        // kept only once the check has passed (a refused file leaves nothing).
        let (staged, kind) = std::thread::scope(|scope| {
            let staging = scope.spawn(|| self.store.stage(bytes));
            let kind = self.kind(&name, format, bytes);
            let staged = staging
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the write stopped").into()));
            (staged, kind)
        });
        let kind = kind?;
        let id = staged
            .and_then(store::Staged::commit)
            .map_err(|e| refused_by_store(&name, e))?;
        Ok(Attachment {
            id: id.to_string(),
            name,
            mime: format.mime().to_owned(),
            size,
            kind,
        })
    }

    /// What `bytes` are: an image checked (and its copy to send stored), or a
    /// document's text extracted (and stored).
    fn kind(
        &self,
        name: &str,
        format: sniff::Format,
        bytes: &[u8],
    ) -> Result<AttachmentKind, AttachmentProblem> {
        if format.is_image() {
            let shown = image::inspect(name, format, bytes)?;
            let sent = match shown.to_send {
                Some((copy, _)) => Some(self.put(name, &copy)?.to_string()),
                None => None,
            };
            return Ok(AttachmentKind::Image {
                width: shown.width,
                height: shown.height,
                sent,
            });
        }
        let extracted = document::extract(name, format, bytes)?;
        let tokens = estimated_tokens(&prompt::framed(name, &extracted.text));
        let text = self.put(name, extracted.text.as_bytes())?;
        Ok(AttachmentKind::Document {
            text: text.to_string(),
            pages: extracted.pages,
            tokens,
        })
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<BlobId, AttachmentProblem> {
        self.store.put(bytes).map_err(|e| refused_by_store(name, e))
    }

    /// Read `path` whole: refused by its size before reading, and if it changes size
    /// while it is read.
    fn read(&self, path: &Path, name: &str) -> Result<Vec<u8>, AttachmentProblem> {
        let unreadable = |e: io::Error| AttachmentProblem::Unreadable {
            name: name.to_owned(),
            detail: e.to_string(),
        };
        let mut file = File::open(path).map_err(unreadable)?;
        let meta = file.metadata().map_err(unreadable)?;
        if meta.is_dir() {
            return Err(AttachmentProblem::Unreadable {
                name: name.to_owned(),
                detail: "it is a folder".into(),
            });
        }
        let size = meta.len();
        if size == 0 {
            return Err(AttachmentProblem::Empty {
                name: name.to_owned(),
            });
        }
        if size > self.limit() {
            return Err(AttachmentProblem::TooLarge {
                name: name.to_owned(),
                size,
                limit: self.limit(),
            });
        }
        read_sized(&mut file, size, name)
    }

    /// The bytes of blob `id` of attachment `of` (its original, copy or text).
    fn get(&self, of: &Attachment, id: &str) -> Result<Vec<u8>, AttachmentProblem> {
        let missing = || AttachmentProblem::Missing {
            name: of.name.clone(),
        };
        let id = BlobId::parse(id).ok_or_else(missing)?;
        self.store.get(&id).map_err(|_| missing())
    }

    /// The original bytes of `attachment`.
    pub fn original(&self, attachment: &Attachment) -> Result<Vec<u8>, AttachmentProblem> {
        self.get(attachment, &attachment.id)
    }

    /// A document's extracted text (page markers included); `None` for an image.
    pub fn text(&self, attachment: &Attachment) -> Result<Option<String>, AttachmentProblem> {
        let AttachmentKind::Document { text, .. } = &attachment.kind else {
            return Ok(None);
        };
        let bytes = self.get(attachment, text)?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// An image as it is sent to a model: its bytes and media type (the copy made when
    /// it was attached, else the original); `None` for a document.
    pub fn image_to_send(
        &self,
        attachment: &Attachment,
    ) -> Result<Option<(Vec<u8>, String)>, AttachmentProblem> {
        let AttachmentKind::Image { sent, .. } = &attachment.kind else {
            return Ok(None);
        };
        let Some(sent) = sent else {
            return Ok(Some((self.original(attachment)?, attachment.mime.clone())));
        };
        let bytes = self.get(attachment, sent)?;
        let mime = if bytes.starts_with(b"\x89PNG") {
            "image/png"
        } else {
            "image/jpeg"
        };
        Ok(Some((bytes, mime.to_owned())))
    }

    /// Every store id `attachment` uses (original, copy, text): what a thread's deletion
    /// must keep while another message refers to it.
    pub fn blob_ids(attachment: &Attachment) -> impl Iterator<Item = BlobId> + '_ {
        let extra = match &attachment.kind {
            AttachmentKind::Image { sent, .. } => sent.as_deref(),
            AttachmentKind::Document { text, .. } => Some(text.as_str()),
        };
        std::iter::once(attachment.id.as_str())
            .chain(extra)
            .filter_map(BlobId::parse)
    }
}

/// Exactly `size` bytes of `from`: more or fewer means the file changed while read.
fn read_sized(from: &mut dyn Read, size: u64, name: &str) -> Result<Vec<u8>, AttachmentProblem> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    from.take(size + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AttachmentProblem::Unreadable {
            name: name.to_owned(),
            detail: e.to_string(),
        })?;
    if bytes.len() as u64 != size {
        return Err(AttachmentProblem::Changed {
            name: name.to_owned(),
        });
    }
    Ok(bytes)
}

/// A file name without folders or control characters, at most 200 characters; never
/// empty.
fn clean_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = base.chars().filter(|c| !c.is_control()).take(200).collect();
    let clean = clean.trim();
    if clean.is_empty() {
        "attachment".to_owned()
    } else {
        clean.to_owned()
    }
}

/// The store's refusal of `name`'s bytes, as an attachment problem.
fn refused_by_store(name: &str, e: BlobError) -> AttachmentProblem {
    AttachmentProblem::Unreadable {
        name: name.to_owned(),
        detail: format!("the attachment store refused it: {e}"),
    }
}

#[cfg(test)]
mod tests;
