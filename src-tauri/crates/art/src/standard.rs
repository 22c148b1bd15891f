//! The framework as the desktop app and the `art` command line both use it: the
//! database of a data directory, the built-in providers with keys from the OS keychain
//! (or `<PROVIDER>_API_KEY`), an [`ArtInstance`] over them, and the MCP servers whose
//! tools join the instance's registry.

use std::sync::Arc;

use crate::export::Redactor;
use crate::instance::ArtInstance;
use crate::paths::DataDir;
use crate::providers::factory::{BuiltinFactory, builtin_entries};
use crate::providers::{ManagerOptions, ProviderManager};
use crate::secrets::{EnvFallback, KeychainStore};
use crate::storage::sqlite::SqliteStorage;
use crate::storage::{StorageAdapter, StorageError};
use crate::tools::RegistryError;
use crate::tools::mcp::{McpManager, McpStore};

/// Why the framework could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database could not be opened or migrated.
    #[error("cannot open the database: {0}")]
    Storage(#[from] StorageError),
    /// The built-in tools could not be registered (a bug).
    #[error(transparent)]
    Tools(#[from] RegistryError),
}

/// The framework over a data directory.
pub struct Standard {
    /// The agent, its managers and sockets over the data directory's database.
    pub art: ArtInstance,
    /// Providers and their pooled adapters.
    pub providers: Arc<ProviderManager>,
    /// API keys: the OS keychain, with `<PROVIDER>_API_KEY` as a read-only fallback.
    pub secrets: Arc<EnvFallback<KeychainStore>>,
    /// MCP servers: their configuration (header values in the keychain), the running
    /// ones, and their tools in the instance's registry.
    pub mcp: Arc<McpManager>,
}

impl Standard {
    /// Open the database of `data_dir` and build the framework over it.
    pub fn open(data_dir: &DataDir) -> Result<Self, OpenError> {
        let storage: Arc<dyn StorageAdapter> =
            Arc::new(SqliteStorage::open(data_dir.database_path())?);
        let secrets = Arc::new(EnvFallback::new(KeychainStore::default()));
        let providers = Arc::new(ProviderManager::new(
            builtin_entries(),
            Arc::new(BuiltinFactory::default()),
            secrets.clone(),
            ManagerOptions::default(),
        ));
        let art = ArtInstance::builder(Arc::clone(&storage), providers.clone()).build()?;
        let mcp = Arc::new(McpManager::new(
            McpStore::new(storage, secrets.clone()),
            Arc::clone(&art.tools),
        ));
        Ok(Self {
            art,
            providers,
            secrets,
            mcp,
        })
    }

    /// A redactor for exports that knows every provider key and every MCP server's
    /// secrets (the keychain is read off the async workers).
    pub async fn redactor(&self) -> Redactor {
        let accounts = self.mcp.store().secret_accounts().await.unwrap_or_default();
        let (providers, secrets) = (Arc::clone(&self.providers), Arc::clone(&self.secrets));
        tokio::task::spawn_blocking(move || {
            Redactor::for_providers(&providers, secrets.as_ref(), &accounts)
        })
        .await
        .unwrap_or_else(|_| Redactor::new(Vec::new()))
    }
}
