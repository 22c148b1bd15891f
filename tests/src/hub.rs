//! A local stand-in of the Hugging Face hub's `resolve` API, over real TCP, so that
//! tests run the real download code: `GET /{repo}/resolve/{revision}/{file}` answers a
//! large file with a 302 to a "CDN" path (with `X-Repo-Commit`, `X-Linked-Etag`: the
//! quoted SHA-256, and `X-Linked-Size`), a small one at once; the CDN honours
//! `Range: bytes=N-` with a 206. Faults on demand: the next transfer cut halfway, the
//! next one corrupted, every file corrupted, a stated hash that differs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use crate::fake::{Ending, FakeServer, Recorded, Reply};

/// Files at or above this size are "LFS" files: sent on to the CDN path.
const LFS_FROM: usize = 10 * 1024;

/// The commit the stand-in says it serves.
pub const COMMIT: &str = "c0ffee0000000000000000000000000000000001";

#[derive(Default)]
struct Faults {
    /// Transfers still to cut halfway.
    cut: AtomicUsize,
    /// Transfers still to corrupt (one byte flipped).
    corrupt: AtomicUsize,
    /// Every transfer corrupted.
    always_corrupt: AtomicBool,
    /// State another hash than the file's.
    other_hash: AtomicBool,
}

/// A running stand-in; stops when dropped.
pub struct Hub {
    server: FakeServer,
    faults: Arc<Faults>,
}

impl Hub {
    /// Serve `files` (name → bytes) as the repository `repo`, at any revision.
    pub async fn start(repo: &str, files: Vec<(String, Vec<u8>)>) -> Self {
        let files: Arc<HashMap<String, (Vec<u8>, String)>> = Arc::new(
            files
                .into_iter()
                .map(|(name, bytes)| {
                    let sha: String = Sha256::digest(&bytes)
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    (name, (bytes, sha))
                })
                .collect(),
        );
        let faults = Arc::new(Faults::default());
        let router = {
            let (repo, faults) = (format!("/{repo}/resolve/"), Arc::clone(&faults));
            Box::new(move |request: &Recorded| Some(answer(request, &repo, &files, &faults)))
        };
        let server = FakeServer::start_at(0, Some(router), Vec::new())
            .await
            .expect("bind the hub stand-in");
        Self { server, faults }
    }

    /// Serve the files of a model folder (e.g. [`crate::embedder::weights_dir`]).
    pub async fn serving(repo: &str, dir: &std::path::Path, names: &[&str]) -> Self {
        let files = names
            .iter()
            .map(|name| {
                let bytes = std::fs::read(dir.join(name)).expect("read a file to serve");
                ((*name).to_owned(), bytes)
            })
            .collect();
        Self::start(repo, files).await
    }

    /// Its base URL (what `HF_ENDPOINT` would say).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Cut the next `n` transfers of a large file halfway (the connection closes
    /// mid-body).
    pub fn cut_next(&self, n: usize) {
        self.faults.cut.store(n, Ordering::SeqCst);
    }

    /// Corrupt the next `n` transfers (one byte flipped).
    pub fn corrupt_next(&self, n: usize) {
        self.faults.corrupt.store(n, Ordering::SeqCst);
    }

    /// Corrupt every transfer from now on.
    pub fn corrupt_always(&self) {
        self.faults.always_corrupt.store(true, Ordering::SeqCst);
    }

    /// State another SHA-256 than the files' (as if the file changed upstream).
    pub fn state_other_hashes(&self) {
        self.faults.other_hash.store(true, Ordering::SeqCst);
    }

    /// Requests so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }
}

/// Take one from a counter of faults still to inject.
fn take(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn answer(
    request: &Recorded,
    repo: &str,
    files: &HashMap<String, (Vec<u8>, String)>,
    faults: &Faults,
) -> Reply {
    let path = request
        .request_line
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let not_found = || Reply::error(404, r#"{"error":"Entry not found"}"#);
    if let Some(rest) = path.strip_prefix(repo) {
        let Some((_revision, name)) = rest.split_once('/') else {
            return not_found();
        };
        let Some((bytes, sha)) = files.get(name) else {
            return not_found();
        };
        let sha = if faults.other_hash.load(Ordering::SeqCst) {
            "0".repeat(64)
        } else {
            sha.clone()
        };
        if bytes.len() >= LFS_FROM {
            return Reply::bytes(302, &[], 0)
                .header("Location", &format!("/cdn/{name}"))
                .header("X-Repo-Commit", COMMIT)
                .header("X-Linked-Etag", &format!("\"{sha}\""))
                .header("X-Linked-Size", &bytes.len().to_string());
        }
        return body(request, bytes, faults, false).header("X-Repo-Commit", COMMIT);
    }
    match path.strip_prefix("/cdn/").and_then(|name| files.get(name)) {
        Some((bytes, _)) => body(request, bytes, faults, true),
        None => not_found(),
    }
}

/// The file, or its tail from a `Range: bytes=N-`, with the faults asked for (a cut
/// only in a `large` file's).
fn body(request: &Recorded, bytes: &[u8], faults: &Faults, large: bool) -> Reply {
    let from = request
        .header("range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n < bytes.len());
    let mut content = bytes[from.unwrap_or(0)..].to_vec();
    if (faults.always_corrupt.load(Ordering::SeqCst) || take(&faults.corrupt))
        && !content.is_empty()
    {
        let last = content.len() - 1;
        content[last] ^= 0xff;
    }
    let status = if from.is_some() { 206 } else { 200 };
    let mut reply = Reply::bytes(status, &content, 8);
    if let Some(from) = from {
        reply = reply.header(
            "Content-Range",
            &format!("bytes {from}-{}/{}", bytes.len() - 1, bytes.len()),
        );
    }
    if large && take(&faults.cut) {
        reply = reply.ending(Ending::Disconnect);
    }
    reply.header("Content-Type", "application/octet-stream")
}
