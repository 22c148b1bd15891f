//! Documents attached to a question, added to a collection instead: what the app offers
//! when a document is longer than the model's window. A collection reads its documents
//! by path, and an attachment's bytes are freed with the last message that uses them,
//! so each document is given a file of its own under the data directory's
//! [`FILES_DIR`] — a hard link to the stored bytes where the file system allows (they
//! never change), else a copy — named as it was attached, so its citations name it.
//! [`prepare`] makes the files (and refuses before any collection is touched),
//! [`Prepared::queue_in`] queues them, [`sweep`] removes the files no document reads
//! any more.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use art_types::Attachment;
use art_types::knowledge::{Added, Collection, KnowledgeProblem};

use super::KnowledgeStore;
use crate::attachments::{Attachments, BlobId};

/// The folder, in a data directory, of the files made for attached documents.
pub const FILES_DIR: &str = "knowledge-files";

/// The documents among some attachments, each given its file, ready to be queued.
#[derive(Debug)]
pub struct Prepared {
    /// Path and name of each document's file.
    files: Vec<(String, String)>,
    /// The attachments left out, each with why.
    left_out: Vec<String>,
}

/// Give each document among `attached` its file under `files` (images are left out:
/// they have no text to search). Refused, with nothing queued, when a document's bytes
/// are gone or there is no document at all.
pub fn prepare(
    attachments: &Attachments,
    attached: &[Attachment],
    files: &Path,
) -> Result<Prepared, KnowledgeProblem> {
    let mut prepared = Prepared {
        files: Vec::new(),
        left_out: Vec::new(),
    };
    for attachment in attached {
        if attachment.is_image() {
            prepared.left_out.push(format!(
                "{}: an image has no text to search",
                attachment.name
            ));
            continue;
        }
        let path =
            file_for(attachments, attachment, files).map_err(|e| KnowledgeProblem::Unreadable {
                path: attachment.name.clone(),
                reason: e.to_string(),
            })?;
        let path = path.to_string_lossy().into_owned();
        prepared.files.push((path, attachment.name.clone()));
    }
    if prepared.files.is_empty() {
        return Err(KnowledgeProblem::NoDocuments);
    }
    Ok(prepared)
}

impl Prepared {
    /// Queue the documents in `collection` (the indexer reads them).
    pub fn queue_in(
        self,
        store: &KnowledgeStore,
        collection: &str,
    ) -> Result<Added, KnowledgeProblem> {
        store.find(collection)?;
        Ok(Added {
            queued: store.queue_many(collection, &self.files)?,
            left_out: self.left_out,
        })
    }
}

/// The collection a thread's attached documents go to: the first of `searched` (the
/// collections the thread searches) that still exists, else a new one named after the
/// thread's `title` ("Files from …", numbered when the name is taken). `true` when it
/// was made.
pub fn collection_for(
    store: &KnowledgeStore,
    searched: &[String],
    title: &str,
) -> Result<(Collection, bool), KnowledgeProblem> {
    for id in searched {
        match store.find(id) {
            Ok(collection) => return Ok((collection, false)),
            Err(KnowledgeProblem::NoCollection { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let title = title.trim();
    let base = match title.is_empty() {
        true => "Attached files".to_owned(),
        false => format!("Files from {}", title.chars().take(60).collect::<String>()),
    };
    for n in 1..=99 {
        let name = match n {
            1 => base.clone(),
            n => format!("{base} ({n})"),
        };
        match store.create(&name) {
            Ok(collection) => return Ok((collection, true)),
            Err(KnowledgeProblem::NameTaken { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Err(KnowledgeProblem::NameTaken { name: base })
}

/// The file of `attachment`'s original bytes under `files` (made if missing).
fn file_for(
    attachments: &Attachments,
    attachment: &Attachment,
    files: &Path,
) -> io::Result<PathBuf> {
    let id = BlobId::parse(&attachment.id).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidData, "its store id is not a SHA-256")
    })?;
    let blob = attachments.store().path(&id);
    if !blob.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "it is no longer in the attachment store",
        ));
    }
    // The attachment's name is cleaned when attached; keep only its last part anyway.
    let name = Path::new(&attachment.name)
        .file_name()
        .map_or_else(|| "document".into(), |n| n.to_os_string());
    let folder = files.join(id.to_string());
    let path = folder.join(name);
    if path.is_file() {
        return Ok(path);
    }
    fs::create_dir_all(&folder)?;
    if fs::hard_link(&blob, &path).is_err() {
        // Another file system, or one without links: a copy, moved into place whole.
        let partial = folder.join(".partial");
        fs::copy(&blob, &partial)?;
        fs::rename(&partial, &path)?;
    }
    Ok(path)
}

/// Remove the folders under `files` that no document of `store` reads any more (its
/// document removed, or its collection deleted). Returns how many were removed.
pub fn sweep(store: &KnowledgeStore, files: &Path) -> Result<u64, KnowledgeProblem> {
    let entries = match fs::read_dir(files) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(KnowledgeProblem::Unreadable {
                path: files.display().to_string(),
                reason: e.to_string(),
            });
        }
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let folder = entry.path();
        if folder.is_dir()
            && !store.reads_under(&folder.to_string_lossy())?
            && fs::remove_dir_all(&folder).is_ok()
        {
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use art_types::knowledge::DocumentState;

    use super::*;
    use crate::attachments::BlobStore;
    use crate::knowledge::{DATABASE_FILE, index_next};

    fn png() -> Vec<u8> {
        let mut out = Vec::new();
        image::DynamicImage::new_rgb8(4, 4)
            .write_to(&mut io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn an_attached_document_is_indexed_under_its_name_and_outlives_its_message() {
        let dir = tempfile::tempdir().unwrap();
        let attachments =
            Attachments::open(dir.path().join("attachments"), BlobStore::DEFAULT_LIMIT).unwrap();
        let store = KnowledgeStore::open(&dir.path().join(DATABASE_FILE)).unwrap();
        let files = dir.path().join(FILES_DIR);
        let (c, made) = collection_for(&store, &["gone".into()], "Orchard").unwrap();
        assert_eq!((c.name.as_str(), made), ("Files from Orchard", true));
        let (again, made) = collection_for(&store, std::slice::from_ref(&c.id), "Orchard").unwrap();
        assert_eq!(
            (again.id.as_str(), made),
            (c.id.as_str(), false),
            "the thread's own"
        );
        let (other, _) = collection_for(&store, &[], "Orchard").unwrap();
        assert_eq!(
            other.name, "Files from Orchard (2)",
            "another thread of that title"
        );
        let ledger = attachments
            .add_bytes("ledger.md", b"# Ledger\n\nThe pear trees gave 40 crates.\n")
            .unwrap();
        let photo = attachments.add_bytes("tree.png", &png()).unwrap();
        let both = [ledger.clone(), photo.clone()];

        let added = prepare(&attachments, &both, &files)
            .unwrap()
            .queue_in(&store, &c.id)
            .unwrap();
        assert_eq!(added.queued, 1);
        assert_eq!(added.left_out, ["tree.png: an image has no text to search"]);
        let done = index_next(&store).unwrap().unwrap();
        assert_eq!(
            (done.name.as_str(), done.state),
            ("ledger.md", DocumentState::Ready)
        );
        let hit = &store.search("pear crates", None, 5).unwrap()[0];
        assert_eq!(hit.name, "ledger.md", "cited by its attached name");

        // Added again: the same file, the same document.
        let again = prepare(&attachments, &both, &files).unwrap();
        again.queue_in(&store, &c.id).unwrap();
        index_next(&store).unwrap().unwrap();
        assert_eq!(store.documents(&c.id).unwrap().len(), 1);
        assert_eq!(fs::read_dir(&files).unwrap().count(), 1);

        // The thread deleted, its bytes freed: the document is still read again whole.
        let id = BlobId::parse(&ledger.id).unwrap();
        assert!(attachments.store().remove(&id).unwrap());
        store.requeue(&c.id).unwrap();
        let again = index_next(&store).unwrap().unwrap();
        assert_eq!(again.state, DocumentState::Ready, "{}", again.detail);

        // Its document removed, the file goes at the next sweep, once.
        assert_eq!(sweep(&store, &files).unwrap(), 0, "still read");
        store.remove(done.id).unwrap();
        assert_eq!(sweep(&store, &files).unwrap(), 1);
        assert_eq!(sweep(&store, &files).unwrap(), 0);
        assert_eq!(fs::read_dir(&files).unwrap().count(), 0);

        // Bytes no longer stored cannot be added: said by name, nothing queued.
        match prepare(&attachments, &[ledger], &files) {
            Err(KnowledgeProblem::Unreadable { path, reason }) => {
                assert_eq!(path, "ledger.md");
                assert!(reason.contains("no longer"), "{reason}");
            }
            other => panic!("expected Unreadable, got {other:?}"),
        }
        assert!(store.documents(&c.id).unwrap().is_empty());
        // Only images: nothing to search, said.
        assert_eq!(
            prepare(&attachments, &[photo], &files).unwrap_err(),
            KnowledgeProblem::NoDocuments
        );
    }
}
