//! Attachment bytes, stored once by content: `<root>/<2 hex>/<62 hex>`, named by the
//! SHA-256 of the bytes, never inside message rows or observations. A file is written to
//! a temporary file beside its place, flushed to disk and renamed into place, so a crash
//! leaves the whole file or none (temporary files a crash left are removed when the
//! store opens). The same bytes put twice are stored once. Blocking file I/O: async callers
//! use `spawn_blocking`.

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File, TryLockError};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// Suffix of a file being written (never a valid id).
const PARTIAL: &str = ".partial";

/// How long a temporary file may go unwritten before an opening store takes it for what
/// a crash left, where the file system cannot say whether a writer holds it (no locks).
const STALE_PARTIAL: Duration = Duration::from_secs(600);

/// Makes temporary names unique within the process, however many stores it opens.
static INCOMING: AtomicU64 = AtomicU64::new(0);

/// A stored blob's name: the lowercase hex SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId(String);

impl BlobId {
    /// The id of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_digest(&Sha256::digest(bytes))
    }

    fn from_digest(digest: &[u8]) -> Self {
        Self(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// An id read back (from a message, an import): 64 lowercase hex digits, else `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let valid = text.len() == 64
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| Self(text.to_owned()))
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a blob was not stored or read.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The file holds nothing.
    #[error("the file is empty")]
    Empty,
    /// Larger than the store takes; refused before it was read whole.
    #[error("the file is {size} bytes; attachments may be at most {limit} bytes")]
    TooLarge {
        /// Its size (as far as it was read).
        size: u64,
        /// The store's limit.
        limit: u64,
    },
    /// The file changed while it was read (its size is not what it was): nothing kept.
    #[error("the file changed while it was read; try again once it is written")]
    Changed,
    /// No blob with that id (deleted, or never stored here).
    #[error("attachment {0} is not in the store")]
    NotFound(BlobId),
    /// The stored bytes no longer match their id (the disk changed them).
    #[error("attachment {0} is damaged: its bytes no longer match their hash")]
    Damaged(BlobId),
    /// The disk refused.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The content-addressed store.
#[derive(Debug)]
pub struct BlobStore {
    root: PathBuf,
    limit: u64,
}

impl BlobStore {
    /// Largest attachment taken by default: 512 MB, in the decimal units every size is
    /// said in ([`art_types::attachment::human_size`]), as the README says it.
    pub const DEFAULT_LIMIT: u64 = 512_000_000;

    /// The store under `root` (created if missing), taking files up to `limit` bytes;
    /// temporary files a crash left are removed — not those another process (the app
    /// and `art` share the store) is writing, which it holds locked.
    pub fn open(root: impl Into<PathBuf>, limit: u64) -> Result<Self, BlobError> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        for entry in fs::read_dir(&root)? {
            let path = entry?.path();
            if path.to_string_lossy().ends_with(PARTIAL) && abandoned(&path) {
                // Gone meanwhile: its writer finished (or removed it) first.
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
                    _ => {}
                }
            }
        }
        Ok(Self { root, limit })
    }

    /// The largest blob taken, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Where blob `id` is kept.
    pub fn path(&self, id: &BlobId) -> PathBuf {
        let (shard, rest) = id.0.split_at(2);
        self.root.join(shard).join(rest)
    }

    /// Whether blob `id` is stored.
    pub fn contains(&self, id: &BlobId) -> bool {
        self.path(id).is_file()
    }

    /// Store `bytes`; returns their id (the same bytes again: the same id, stored once).
    pub fn put(&self, bytes: &[u8]) -> Result<BlobId, BlobError> {
        self.check_size(bytes.len() as u64)?;
        self.write(&mut &bytes[..], bytes.len() as u64)
    }

    /// Store the file at `path` without reading it whole into memory: refused by its size
    /// before reading, and refused if it changed size while read. Returns its id and size.
    pub fn put_file(&self, path: &Path) -> Result<(BlobId, u64), BlobError> {
        let mut file = File::open(path)?;
        let size = file.metadata()?.len();
        self.check_size(size)?;
        let id = self.write(&mut file, size)?;
        Ok((id, size))
    }

    fn check_size(&self, size: u64) -> Result<(), BlobError> {
        match size {
            0 => Err(BlobError::Empty),
            size if size > self.limit => Err(BlobError::TooLarge {
                size,
                limit: self.limit,
            }),
            _ => Ok(()),
        }
    }

    /// Write `bytes` beside the store, flushed to disk and hashed, without storing them
    /// yet: [`Staged::commit`] moves them into place, and dropping it uncommitted removes
    /// them. So the bytes can be written while they are still being checked (an image
    /// decoded, a document read), and a refused file leaves nothing.
    pub fn stage(&self, bytes: &[u8]) -> Result<Staged<'_>, BlobError> {
        self.check_size(bytes.len() as u64)?;
        self.stage_from(&mut &bytes[..], bytes.len() as u64)
    }

    /// Copy `size` bytes of `from` into the store (once: the same bytes are kept once).
    fn write(&self, from: &mut dyn Read, size: u64) -> Result<BlobId, BlobError> {
        self.stage_from(from, size)?.commit()
    }

    /// Copy `size` bytes of `from` into a temporary file while hashing them.
    fn stage_from(&self, from: &mut dyn Read, size: u64) -> Result<Staged<'_>, BlobError> {
        let n = INCOMING.fetch_add(1, Ordering::Relaxed);
        let temp = self
            .root
            .join(format!("incoming-{}-{n}{PARTIAL}", std::process::id()));
        match copy_out(from, size, &temp) {
            Ok((file, id)) => Ok(Staged {
                store: self,
                temp,
                file: Some(file),
                id,
                committed: false,
            }),
            Err(e) => {
                let _ = fs::remove_file(&temp);
                Err(e)
            }
        }
    }

    /// The bytes of blob `id`, checked against it.
    pub fn get(&self, id: &BlobId) -> Result<Vec<u8>, BlobError> {
        let bytes = match fs::read(self.path(id)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(BlobError::NotFound(id.clone()));
            }
            Err(e) => return Err(e.into()),
        };
        if BlobId::of(&bytes) != *id {
            return Err(BlobError::Damaged(id.clone()));
        }
        Ok(bytes)
    }

    /// Remove blob `id`; `false` when it was not there.
    pub fn remove(&self, id: &BlobId) -> Result<bool, BlobError> {
        match fs::remove_file(self.path(id)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Every stored blob.
    pub fn ids(&self) -> Result<Vec<BlobId>, BlobError> {
        let mut ids = Vec::new();
        for shard in fs::read_dir(&self.root)? {
            let shard = shard?;
            if !shard.path().is_dir() {
                continue;
            }
            let prefix = shard.file_name().to_string_lossy().into_owned();
            for file in fs::read_dir(shard.path())? {
                let name = file?.file_name().to_string_lossy().into_owned();
                if let Some(id) = BlobId::parse(&format!("{prefix}{name}")) {
                    ids.push(id);
                }
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Remove every blob not in `used` (what no message refers to any more, once a thread
    /// is deleted) and older than `grace` — a blob is stored before the message that
    /// refers to it is committed, so a fresh one may be about to be used. Returns how
    /// many went.
    pub fn remove_unused(
        &self,
        used: &HashSet<BlobId>,
        grace: Duration,
    ) -> Result<usize, BlobError> {
        let mut removed = 0;
        for id in self.ids()? {
            if used.contains(&id) {
                continue;
            }
            let path = self.path(&id);
            if age(&fs::metadata(&path)?) >= grace {
                fs::remove_file(path)?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// How long ago a file was last written (none when the clock says it is in the future).
fn age(meta: &fs::Metadata) -> Duration {
    meta.modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default()
}

/// Whether the temporary file at `path` was left by a writer that is gone: nobody holds
/// its lock (a killed process's lock goes with it), or, where locks are not supported,
/// it has not been written for [`STALE_PARTIAL`].
fn abandoned(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    match file.try_lock() {
        Ok(()) => true,
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(_)) => file.metadata().is_ok_and(|m| age(&m) >= STALE_PARTIAL),
    }
}

/// Copy `size` bytes of `from` to the new file `temp`, flushed to disk: the file, still
/// open and locked (so that no other process's store takes it for a crash's leftover),
/// and the bytes' id.
fn copy_out(from: &mut dyn Read, size: u64, temp: &Path) -> Result<(File, BlobId), BlobError> {
    let mut out = File::create(temp)?;
    // Where the file system has no locks, a writer is told apart by its file's age.
    let _ = out.try_lock();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut read = 0u64;
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > size {
            return Err(BlobError::Changed);
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])?;
    }
    if read != size {
        return Err(BlobError::Changed);
    }
    out.sync_all()?;
    Ok((out, BlobId::from_digest(&hasher.finalize())))
}

/// Bytes written beside the store and not yet in it ([`BlobStore::stage`]).
#[derive(Debug)]
pub struct Staged<'a> {
    store: &'a BlobStore,
    temp: PathBuf,
    /// The temporary file, open and locked until it is in place or removed.
    file: Option<File>,
    id: BlobId,
    committed: bool,
}

impl Staged<'_> {
    /// Move the bytes into place (or drop them when the same bytes are there already).
    pub fn commit(mut self) -> Result<BlobId, BlobError> {
        let place = self.store.path(&self.id);
        if place.is_file() {
            fs::remove_file(&self.temp)?;
            self.committed = true;
            return Ok(self.id.clone());
        }
        let shard = place.parent().unwrap_or(&self.store.root);
        fs::create_dir_all(shard)?;
        if let Err(e) = fs::rename(&self.temp, &place) {
            // Another writer stored the same bytes meanwhile (Windows refuses to replace).
            if !place.is_file() {
                return Err(e.into());
            }
            fs::remove_file(&self.temp)?;
        }
        self.committed = true;
        // The rename itself must survive a power cut.
        if let Ok(dir) = File::open(shard) {
            let _ = dir.sync_all();
        }
        Ok(self.id.clone())
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.committed {
            let _ = fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests;
