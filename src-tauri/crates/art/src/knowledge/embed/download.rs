//! Fetching a model's files from Hugging Face once, into the data directory, as a user
//! on a slow or broken connection needs it: progress, resume where it stopped (`Range`),
//! and each file checked against the SHA-256 the app was built with (the hub's LFS
//! object id, which its `X-Linked-Etag` also states) before it is used. A file that does
//! not match is deleted and fetched again once; a file is only ever in place complete.
//!
//! A file `f` is written to `f.part`, beside `f.part.url` holding the URL it comes from:
//! a later attempt resumes the part only from the same URL.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Where the hub is: `HF_ENDPOINT` when set (a mirror, or the tests' stand-in), as the
/// hub's own clients read it; else huggingface.co.
pub fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
}

/// One file of a model.
#[derive(Debug, Clone, Copy)]
pub struct File {
    /// Its path in the repository.
    pub name: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, lowercase hex.
    pub sha256: &'static str,
}

/// A model on the hub: a repository, a revision and the files to take from it.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// `owner/name`.
    pub repo: &'static str,
    /// A branch or commit.
    pub revision: &'static str,
    /// The files, the largest last.
    pub files: &'static [File],
}

impl Model {
    /// The bytes to fetch in all.
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Whether every file is in `dir` (their sizes checked; their contents were checked
    /// before they were put there).
    pub fn is_in(&self, dir: &Path) -> bool {
        self.files
            .iter()
            .all(|f| std::fs::metadata(dir.join(f.name)).is_ok_and(|m| m.len() == f.size))
    }
}

/// all-MiniLM-L6-v2 as sentence-transformers publishes it (the built-in embedder).
pub const MINILM: Model = Model {
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "main",
    files: &[
        File {
            name: "config.json",
            size: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        File {
            name: "tokenizer.json",
            size: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        File {
            name: "model.safetensors",
            size: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
};

/// Why a model could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DownloadError {
    /// The hub could not be reached, or the connection broke, attempt after attempt.
    #[error(
        "cannot download the embedding model from {endpoint}: {reason}. Searches use words \
         only until it is downloaded; it is tried again when documents are added, or at the \
         next start. Where huggingface.co cannot be reached, set HF_ENDPOINT to a mirror of \
         it (HF_ENDPOINT=https://hf-mirror.example) before starting the app or `art`"
    )]
    Unreachable {
        /// The hub's address.
        endpoint: String,
        /// What failed last.
        reason: String,
    },
    /// The hub answered with an error.
    #[error("the hub answered {status} for {file} ({url})")]
    Refused {
        /// The file asked for.
        file: String,
        /// The URL that answered.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// A file's contents are not what the app was built for, twice in a row.
    #[error(
        "{file} did not match its SHA-256 after two downloads (expected {expected}, got \
         {found}); it was deleted"
    )]
    Corrupt {
        /// The file.
        file: String,
        /// What it should hash to.
        expected: String,
        /// What it hashed to.
        found: String,
    },
    /// The hub says the file is another one than the app was built for.
    #[error("the hub serves another {file} than this version reads (its hash is {stated})")]
    Changed {
        /// The file.
        file: String,
        /// The hash the hub states.
        stated: String,
    },
    /// Writing to the data directory failed.
    #[error("cannot write {path}: {reason}")]
    Disk {
        /// The file.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
    /// Stopped on request; what was fetched is kept for next time.
    #[error("the download was stopped")]
    Stopped,
}

/// How a download is going: bytes in place so far (resumed parts included) of all.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// How often a broken transfer is resumed before giving up.
const ATTEMPTS: u32 = 4;

/// Fetch `model`'s files from `endpoint` into `dir`, skipping those already there;
/// `progress` hears of every chunk, `stop` is asked between chunks.
pub async fn fetch(
    model: &Model,
    endpoint: &str,
    dir: &Path,
    progress: Progress<'_>,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(), DownloadError> {
    let disk = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| DownloadError::Disk {
            path,
            reason: e.to_string(),
        }
    };
    std::fs::create_dir_all(dir).map_err(disk(dir))?;
    let client = crate::net::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| unreachable(endpoint, &e))?;
    let total = model.size();
    let mut before = 0;
    for file in model.files {
        let target = dir.join(file.name);
        if std::fs::metadata(&target).is_ok_and(|m| m.len() == file.size) {
            before += file.size;
            progress(before, total);
            continue;
        }
        let url = format!(
            "{}/{}/resolve/{}/{}",
            endpoint.trim_end_matches('/'),
            model.repo,
            model.revision,
            file.name
        );
        let fetched = |done: u64| progress(before + done, total);
        let mut result = Fetch::new(&client, endpoint, &url, file, &target)
            .run(&fetched, stop)
            .await;
        if let Err(DownloadError::Corrupt { .. }) = result {
            // Deleted already: once more from the start.
            result = Fetch::new(&client, endpoint, &url, file, &target)
                .run(&fetched, stop)
                .await;
        }
        result?;
        before += file.size;
    }
    Ok(())
}

fn unreachable(endpoint: &str, e: &reqwest::Error) -> DownloadError {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        reason = format!("{reason}: {inner}");
        source = inner.source();
    }
    DownloadError::Unreachable {
        endpoint: endpoint.into(),
        reason,
    }
}

/// One file's transfer.
struct Fetch<'a> {
    client: &'a reqwest::Client,
    endpoint: &'a str,
    url: &'a str,
    file: &'a File,
    target: &'a Path,
    part: PathBuf,
    source: PathBuf,
}

impl<'a> Fetch<'a> {
    fn new(
        client: &'a reqwest::Client,
        endpoint: &'a str,
        url: &'a str,
        file: &'a File,
        target: &'a Path,
    ) -> Self {
        let with = |suffix: &str| {
            let mut name = target.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        };
        Self {
            client,
            endpoint,
            url,
            file,
            target,
            part: with(".part"),
            source: with(".part.url"),
        }
    }

    fn disk(&self, path: &Path, e: &std::io::Error) -> DownloadError {
        DownloadError::Disk {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }

    /// Transfer (resuming a part from the same URL), check, put in place.
    async fn run(
        &self,
        progress: &(dyn Fn(u64) + Sync),
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), DownloadError> {
        if std::fs::read_to_string(&self.source).ok().as_deref() != Some(self.url) {
            let _ = std::fs::remove_file(&self.part);
            std::fs::write(&self.source, self.url).map_err(|e| self.disk(&self.source, &e))?;
        }
        let mut last = None;
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(250 << attempt)).await;
            }
            match self.attempt(progress, stop).await {
                Ok(()) => return self.check(),
                Err(Broken(e)) => last = Some(e),
                Err(Final(e)) => return Err(e),
            }
        }
        Err(last.unwrap_or(DownloadError::Stopped))
    }

    /// One request: `Ok` once the part holds the whole file.
    async fn attempt(
        &self,
        progress: &(dyn Fn(u64) + Sync),
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), Attempt> {
        let have = std::fs::metadata(&self.part).map_or(0, |m| m.len());
        if have >= self.file.size {
            return Ok(());
        }
        progress(have);
        let broken = |e: reqwest::Error| Broken(unreachable(self.endpoint, &e));
        let mut url = self.url.to_owned();
        let mut response;
        // The hub sends large files on to a CDN: follow by hand, reading its headers.
        let mut hops = 0;
        loop {
            let mut request = self.client.get(&url);
            if have > 0 {
                request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
            }
            response = request.send().await.map_err(broken)?;
            self.check_stated(&response).map_err(Final)?;
            if !response.status().is_redirection() || hops == 5 {
                break;
            }
            let Some(next) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| response.url().join(l).ok())
            else {
                break;
            };
            url = next.to_string();
            hops += 1;
        }
        let status = response.status().as_u16();
        let mut out = match status {
            206 => std::fs::OpenOptions::new().append(true).open(&self.part),
            200 => std::fs::File::create(&self.part),
            _ => {
                let refused = DownloadError::Refused {
                    file: self.file.name.into(),
                    url,
                    status,
                };
                // A server error may pass; a 404 or 401 will not.
                return Err(if status >= 500 {
                    Broken(refused)
                } else {
                    Final(refused)
                });
            }
        }
        .map_err(|e| Final(self.disk(&self.part, &e)))?;
        let mut done = if status == 206 { have } else { 0 };
        while let Some(bytes) = response.chunk().await.map_err(broken)? {
            if stop() {
                return Err(Final(DownloadError::Stopped));
            }
            out.write_all(&bytes)
                .map_err(|e| Final(self.disk(&self.part, &e)))?;
            done += bytes.len() as u64;
            progress(done.min(self.file.size));
        }
        out.sync_all()
            .map_err(|e| Final(self.disk(&self.part, &e)))?;
        if done < self.file.size {
            return Err(Broken(DownloadError::Unreachable {
                endpoint: self.endpoint.into(),
                reason: format!("the transfer of {} ended early", self.file.name),
            }));
        }
        Ok(())
    }

    /// The hub states an LFS file's SHA-256 (`X-Linked-Etag`): another one than ours
    /// means the file changed upstream, and downloading it would only fail the check.
    fn check_stated(&self, response: &reqwest::Response) -> Result<(), DownloadError> {
        let stated = response
            .headers()
            .get("x-linked-etag")
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.trim_start_matches("W/")
                    .trim_matches('"')
                    .to_ascii_lowercase()
            });
        match stated {
            Some(stated) if stated.len() == 64 && stated != self.file.sha256 => {
                Err(DownloadError::Changed {
                    file: self.file.name.into(),
                    stated,
                })
            }
            _ => Ok(()),
        }
    }

    /// Hash the part; put it in place if it is the file, else delete it.
    fn check(&self) -> Result<(), DownloadError> {
        let mut hasher = Sha256::new();
        let mut part = std::fs::File::open(&self.part).map_err(|e| self.disk(&self.part, &e))?;
        let mut buffer = vec![0; 1 << 20];
        loop {
            let n = part
                .read(&mut buffer)
                .map_err(|e| self.disk(&self.part, &e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
        let found: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if found != self.file.sha256 {
            let _ = std::fs::remove_file(&self.part);
            let _ = std::fs::remove_file(&self.source);
            return Err(DownloadError::Corrupt {
                file: self.file.name.into(),
                expected: self.file.sha256.into(),
                found,
            });
        }
        std::fs::rename(&self.part, self.target).map_err(|e| self.disk(self.target, &e))?;
        let _ = std::fs::remove_file(&self.source);
        Ok(())
    }
}

/// How an attempt ended badly: worth resuming, or not.
enum Attempt {
    Broken(DownloadError),
    Final(DownloadError),
}
use Attempt::{Broken, Final};

#[cfg(test)]
mod tests;
