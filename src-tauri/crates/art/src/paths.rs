//! Where the app keeps its data: one directory holding the database and the logs.
//!
//! The directory is the OS app-data directory (`~/.local/share/<identifier>` on Linux,
//! `~/Library/Application Support/<identifier>` on macOS, `%APPDATA%\<identifier>` on
//! Windows), unless `ART_WORKBENCH_DATA_DIR` names another one. The app and the headless
//! CLI resolve it the same way, so both see the same threads.

use std::io;
use std::path::{Path, PathBuf};

use crate::APP_IDENTIFIER;

/// Environment variable that overrides the data directory (used by tests and portable
/// installs).
pub const DATA_DIR_ENV: &str = "ART_WORKBENCH_DATA_DIR";

/// File name of the SQLite database inside the data directory.
pub const DATABASE_FILE: &str = "art-workbench.sqlite3";

/// Name of the folder of attachments' bytes inside the data directory.
pub const ATTACHMENTS_DIR: &str = "attachments";

/// Name of the folder for rotating log files inside the data directory.
pub const LOG_DIR: &str = "logs";

/// Why the data directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// The OS reported no home/app-data directory and no override was given.
    #[error(
        "the operating system reports no application-data directory; set {DATA_DIR_ENV} to a writable folder"
    )]
    NoOsDataDir,
    /// The override was set but empty or relative.
    #[error("{DATA_DIR_ENV} must be an absolute path, got {0:?}")]
    NotAbsolute(PathBuf),
    /// Creating the directory (or its logs folder) failed.
    #[error("cannot create data directory {path}: {source}")]
    Create {
        /// The directory that could not be created.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

/// The resolved data directory and the well-known paths inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
    overridden: bool,
}

impl DataDir {
    /// Resolve from the environment: `ART_WORKBENCH_DATA_DIR` if set, else the OS
    /// app-data directory. Does not touch the disk; call [`DataDir::ensure`] for that.
    pub fn resolve() -> Result<Self, DataDirError> {
        Self::resolve_from(std::env::var_os(DATA_DIR_ENV).map(PathBuf::from))
    }

    /// Resolve with an explicit override (what [`DataDir::resolve`] reads from the env).
    pub fn resolve_from(override_dir: Option<PathBuf>) -> Result<Self, DataDirError> {
        match override_dir {
            Some(dir) if dir.is_absolute() => Ok(Self {
                root: dir,
                overridden: true,
            }),
            Some(dir) => Err(DataDirError::NotAbsolute(dir)),
            None => {
                let base = directories::BaseDirs::new().ok_or(DataDirError::NoOsDataDir)?;
                Ok(Self {
                    root: base.data_dir().join(APP_IDENTIFIER),
                    overridden: false,
                })
            }
        }
    }

    /// The directory a person named (`--data-dir`: a relative one is taken from the
    /// current folder, as any path a command is given), else [`DataDir::resolve`].
    pub fn resolve_given(given: Option<PathBuf>) -> Result<Self, DataDirError> {
        match given {
            Some(dir) if dir.as_os_str().is_empty() => Err(DataDirError::NotAbsolute(dir)),
            Some(dir) => {
                let absolute =
                    std::path::absolute(&dir).map_err(|source| DataDirError::Create {
                        path: dir.clone(),
                        source,
                    })?;
                Self::resolve_from(Some(absolute))
            }
            None => Self::resolve(),
        }
    }

    /// Create the directory and its logs folder if missing.
    pub fn ensure(&self) -> Result<(), DataDirError> {
        for dir in [self.root.clone(), self.log_dir()] {
            std::fs::create_dir_all(&dir).map_err(|source| DataDirError::Create {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether it came from `ART_WORKBENCH_DATA_DIR`.
    pub fn is_overridden(&self) -> bool {
        self.overridden
    }

    /// Path of the SQLite database.
    pub fn database_path(&self) -> PathBuf {
        self.root.join(DATABASE_FILE)
    }

    /// Folder of the rotating log files.
    pub fn log_dir(&self) -> PathBuf {
        self.root.join(LOG_DIR)
    }

    /// Folder of the attachment store ([`crate::attachments::BlobStore`]).
    pub fn attachments_dir(&self) -> PathBuf {
        self.root.join(ATTACHMENTS_DIR)
    }

    /// The knowledge collections' database ([`crate::knowledge::KnowledgeStore`]).
    pub fn knowledge_path(&self) -> PathBuf {
        self.root.join(crate::knowledge::DATABASE_FILE)
    }

    /// Folder of the files made for attached documents added to a collection
    /// ([`crate::knowledge::attached`]).
    pub fn knowledge_files_dir(&self) -> PathBuf {
        self.root.join(crate::knowledge::attached::FILES_DIR)
    }

    /// The queue of spans waiting to be sent to the OTLP collector
    /// ([`crate::push::Outbox`]).
    pub fn trace_outbox_path(&self) -> PathBuf {
        self.root.join(crate::push::outbox::FILE)
    }

    /// Folder of the models the app runs itself (the built-in embedder's weights).
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_and_paths_live_inside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DataDir::resolve_from(Some(tmp.path().join("data"))).unwrap();
        assert!(dir.is_overridden());
        assert_eq!(
            dir.database_path(),
            tmp.path().join("data").join(DATABASE_FILE)
        );
        dir.ensure().unwrap();
        assert!(dir.log_dir().is_dir());
        // Idempotent.
        dir.ensure().unwrap();
    }

    #[test]
    fn default_is_the_os_data_dir_named_by_identifier() {
        let dir = DataDir::resolve_from(None).unwrap();
        assert!(!dir.is_overridden());
        assert!(dir.root().ends_with(APP_IDENTIFIER));
    }

    #[test]
    fn relative_override_is_a_clear_error() {
        let err = DataDir::resolve_from(Some("relative/dir".into())).unwrap_err();
        assert!(matches!(err, DataDirError::NotAbsolute(_)));
        assert!(err.to_string().contains(DATA_DIR_ENV));
    }

    #[test]
    fn unwritable_location_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, b"x").unwrap();
        let dir = DataDir::resolve_from(Some(file.join("below"))).unwrap();
        let err = dir.ensure().unwrap_err();
        assert!(
            err.to_string().contains("cannot create data directory"),
            "{err}"
        );
    }
}
