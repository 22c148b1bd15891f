//! The framework as the desktop app and the `art` command line both use it: the
//! database of a data directory, the built-in providers with keys from the OS keychain
//! (or `<PROVIDER>_API_KEY`), and an [`ArtInstance`] over them whose MCP servers keep
//! their secrets in the same keychain.

use std::sync::Arc;

use art_types::{AppSettings, ModelChoice, ProviderConfig, ThreadConfig};

use crate::attachments::{Attachments, BlobStore};
use crate::context::ContextError;
use crate::context::validate::{ConfigProblem, validate_thread_config};
use crate::export::Redactor;
use crate::instance::ArtInstance;
use crate::knowledge::KnowledgeStore;
use crate::knowledge::embed::provider::ProviderModels;
use crate::knowledge::embed::{Embedder, EmbedderHome, EmbedderSource};
use crate::paths::DataDir;
use crate::providers::factory::{BuiltinFactory, builtin_entries};
use crate::providers::options::BASE_URL;
use crate::providers::{ManagerOptions, ProviderManager};
use crate::secrets::{EnvFallback, KeychainStore};
use crate::storage::sqlite::SqliteStorage;
use crate::storage::{StorageAdapter, StorageError};
use crate::tools::RegistryError;
use crate::tools::search_knowledge::SearchKnowledgeTool;

/// Why the framework could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The database could not be opened or migrated.
    #[error("cannot open the database: {0}")]
    Storage(#[from] StorageError),
    /// The built-in tools could not be registered (a bug).
    #[error(transparent)]
    Tools(#[from] RegistryError),
    /// The attachment folder could not be created or cleaned.
    #[error("cannot open the attachment store: {0}")]
    Attachments(#[from] crate::attachments::BlobError),
    /// The knowledge database could not be opened or migrated.
    #[error("cannot open the knowledge collections: {0}")]
    Knowledge(#[from] art_types::knowledge::KnowledgeProblem),
}

/// Why a thread's settings were not saved.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Fields that are not acceptable, each naming its field (nothing was saved).
    #[error("{}", .0.iter().map(|p| format!("{}: {}", p.field, p.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<ConfigProblem>),
    /// The thread, the library or the storage failed.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// The MCP servers' configuration could not be read.
    #[error(transparent)]
    Mcp(#[from] crate::tools::mcp::McpError),
}

/// Every problem of `config` for a thread of this stack, as the app's form and the CLI
/// both check it: its fields, its provider (one of `providers`), its tools (built-in, or
/// of a configured MCP server — running or not: a stopped server's tool stays valid and
/// the thread shows it unavailable), its library prompt.
async fn config_problems(
    art: &ArtInstance,
    providers: &ProviderManager,
    config: &ThreadConfig,
) -> Result<Vec<ConfigProblem>, SettingsError> {
    let mut tools: Vec<String> = art.tools.list().into_iter().map(|t| t.name).collect();
    let servers = art.mcp.store().list().await?;
    tools.extend(
        config
            .enabled_tools
            .iter()
            .filter(|t| {
                art_types::mcp::server_of(t).is_some_and(|s| servers.iter().any(|c| c.name == s))
            })
            .cloned(),
    );
    let names: Vec<String> = providers.entries().into_iter().map(|e| e.name).collect();
    let mut problems = validate_thread_config(config, &tools, &names);
    if let Some(id) = &config.prompt_id
        && art.library.get(id).await?.is_none()
    {
        problems.push(ConfigProblem {
            field: "promptId".into(),
            message: "that library prompt no longer exists; pick another".into(),
        });
    }
    Ok(problems)
}

/// Save `config` as thread `thread_id`'s settings once [`config_problems`] finds none.
pub async fn save_thread_config(
    art: &ArtInstance,
    providers: &ProviderManager,
    thread_id: &str,
    config: &ThreadConfig,
) -> Result<(), SettingsError> {
    art.conversation.thread(thread_id).await?;
    let problems = config_problems(art, providers, config).await?;
    if !problems.is_empty() {
        return Err(SettingsError::Invalid(problems));
    }
    art.state.set_thread_config(thread_id, config).await?;
    Ok(())
}

/// Make `config` what new threads start with, once [`config_problems`] finds none.
pub async fn save_new_thread_defaults(
    art: &ArtInstance,
    providers: &ProviderManager,
    config: &ThreadConfig,
) -> Result<AppSettings, SettingsError> {
    let problems = config_problems(art, providers, config).await?;
    if !problems.is_empty() {
        return Err(SettingsError::Invalid(problems));
    }
    let settings = art
        .settings
        .update(|s| s.new_thread = config.clone())
        .await
        .map_err(ContextError::from)?;
    Ok(settings)
}

/// The address of the Ollama server the Models page manages, when `provider` speaks
/// Ollama and that server is not the provider's own: an Ollama model is listed there, so
/// it is asked there.
async fn managed_ollama(
    art: &ArtInstance,
    providers: &ProviderManager,
    provider: &str,
) -> Result<Option<String>, SettingsError> {
    let entries = providers.entries();
    let is_ollama = entries
        .iter()
        .any(|e| e.name == provider && e.kind == art_types::AdapterKind::Ollama);
    if !is_ollama {
        return Ok(None);
    }
    let managed = art.settings.get().await.map_err(ContextError::from)?;
    Ok(managed
        .ollama_base_url
        .filter(|base| *base != crate::providers::ollama::configured_base_url(&entries)))
}

/// The models of a comparison's columns (`models`, as the page's model lists name them)
/// as the columns ask them, checked: each names a provider entry and a model. Another
/// model of the thread's provider keeps the thread's options (the agent's rule: none
/// are given); an Ollama model of another provider is asked where the Models page
/// lists it, as [`choose_model`] does.
pub async fn column_models(
    art: &ArtInstance,
    providers: &ProviderManager,
    thread_provider: &str,
    models: &[ProviderConfig],
) -> Result<Vec<ProviderConfig>, SettingsError> {
    let names: Vec<String> = providers.entries().into_iter().map(|e| e.name).collect();
    let mut columns = Vec::with_capacity(models.len());
    for (i, asked) in models.iter().enumerate() {
        let problem = |message: String| {
            SettingsError::Invalid(vec![ConfigProblem {
                field: format!("models[{i}]"),
                message,
            }])
        };
        let provider = asked.provider_name.trim();
        if provider.is_empty() || asked.model_id.trim().is_empty() {
            return Err(problem("choose a provider and a model".into()));
        }
        if !names.iter().any(|n| n == provider) {
            return Err(problem(format!(
                "there is no provider named `{provider}` (see Providers)"
            )));
        }
        let mut column = ProviderConfig {
            provider_name: provider.to_owned(),
            model_id: asked.model_id.trim().to_owned(),
            adapter_options: asked.adapter_options.clone(),
        };
        if provider != thread_provider
            && !column.adapter_options.contains_key(BASE_URL)
            && let Some(base) = managed_ollama(art, providers, provider).await?
        {
            column.adapter_options.insert(BASE_URL.into(), base.into());
        }
        columns.push(column);
    }
    Ok(columns)
}

/// Give thread `thread_id` the model `choice` (the model picker): its other settings
/// stay, and so do the provider's options (base URL, `num_ctx`) while the provider does;
/// the thread's word on whether the model sees images goes with the model it was said
/// of. Checked as every settings change is; the choice is remembered among the recent
/// ones, and with `make_default` new threads start with it too. Returns the thread's
/// settings as saved.
pub async fn choose_model(
    art: &ArtInstance,
    providers: &ProviderManager,
    thread_id: &str,
    choice: &ModelChoice,
    make_default: bool,
) -> Result<ThreadConfig, SettingsError> {
    art.conversation.thread(thread_id).await?;
    let mut config = art.state.load_thread_context(thread_id).await?.config;
    let same_provider = config.provider_config.provider_name == choice.provider;
    if !same_provider {
        config.provider_config = ProviderConfig {
            provider_name: choice.provider.clone(),
            ..ProviderConfig::default()
        };
        if let Some(base) = managed_ollama(art, providers, &choice.provider).await? {
            config
                .provider_config
                .adapter_options
                .insert(BASE_URL.into(), base.into());
        }
    }
    if config.provider_config.model_id != choice.model {
        config.provider_config.model_id = choice.model.clone();
        config.provider_config.set_sees_images(None);
    }
    save_thread_config(art, providers, thread_id, &config).await?;
    let chosen = config.provider_config.clone();
    art.settings
        .update(|s| {
            s.remember(choice.clone());
            if make_default {
                s.new_thread.provider_config = chosen.clone();
            }
        })
        .await
        .map_err(ContextError::from)?;
    Ok(config)
}

/// The framework over a data directory.
pub struct Standard {
    /// The agent, its managers and sockets over the data directory's database.
    pub art: ArtInstance,
    /// Providers and their pooled adapters.
    pub providers: Arc<ProviderManager>,
    /// API keys: the OS keychain, with `<PROVIDER>_API_KEY` as a read-only fallback.
    pub secrets: Arc<EnvFallback<KeychainStore>>,
    /// The knowledge collections (searched by the `search_knowledge` tool).
    pub knowledge: Arc<KnowledgeStore>,
    /// Where the built-in embedder's weights are kept (`<data dir>/models`) and fetched
    /// from.
    pub embedder: EmbedderHome,
}

/// Where the stack's knowledge store gets the embedder a search needs: the built-in one
/// when its weights are downloaded (a search never downloads), a provider's embedding
/// model with the providers and keys as they are at the time. One source for every
/// caller — the app, `art run`'s `search_knowledge`, `art kb search` — so the same
/// question finds the same passages everywhere.
struct Embedders {
    home: EmbedderHome,
    providers: Arc<ProviderManager>,
    secrets: Arc<EnvFallback<KeychainStore>>,
}

impl EmbedderSource for Embedders {
    fn embedder(&self, model: &str) -> Result<Arc<dyn Embedder>, String> {
        if model == crate::knowledge::embed::minilm::MODEL {
            if !self.home.is_downloaded() {
                return Err(
                    "its weights are not downloaded (the app or `art kb reindex` \
                            fetches them)"
                        .into(),
                );
            }
            return self
                .home
                .load(&|_, _| {}, &|| false)
                .map_err(|e| e.to_string());
        }
        ProviderModels::new(
            self.providers.entries(),
            Arc::clone(&self.secrets) as Arc<dyn crate::secrets::SecretStore>,
            crate::providers::http::HttpOptions::default(),
        )
        .connect(model)
        .map(|e| Arc::new(e) as Arc<dyn Embedder>)
        .map_err(|e| e.to_string())
    }
}

impl Standard {
    /// Connects the providers' embedding models for the collections that use one, with
    /// the providers as configured now and their keys.
    pub fn provider_models(&self) -> Arc<ProviderModels> {
        Arc::new(ProviderModels::new(
            self.providers.entries(),
            Arc::clone(&self.secrets) as Arc<dyn crate::secrets::SecretStore>,
            crate::providers::http::HttpOptions::default(),
        ))
    }

    /// Open the database of `data_dir` and build the framework over it.
    pub fn open(data_dir: &DataDir) -> Result<Self, OpenError> {
        let attachments = Attachments::open(data_dir.attachments_dir(), BlobStore::DEFAULT_LIMIT)?;
        Self::open_with(data_dir, Arc::new(attachments))
    }

    /// [`Standard::open`], with the attachment store already opened on
    /// [`DataDir::attachments_dir`] (so files can be read into it while the rest opens).
    pub fn open_with(data_dir: &DataDir, attachments: Arc<Attachments>) -> Result<Self, OpenError> {
        let storage: Arc<dyn StorageAdapter> =
            Arc::new(SqliteStorage::open(data_dir.database_path())?);
        let secrets = Arc::new(EnvFallback::new(KeychainStore::default()));
        let providers = Arc::new(ProviderManager::new(
            builtin_entries(),
            Arc::new(BuiltinFactory::default()),
            secrets.clone(),
            ManagerOptions::default(),
        ));
        let knowledge = Arc::new(KnowledgeStore::open(&data_dir.knowledge_path())?);
        let embedder = EmbedderHome::in_models(&data_dir.models_dir());
        knowledge.set_embedder_source(Arc::new(Embedders {
            home: embedder.clone(),
            providers: Arc::clone(&providers),
            secrets: Arc::clone(&secrets),
        }));
        let art = ArtInstance::builder(storage, providers.clone())
            .mcp_secrets(secrets.clone())
            .attachments(attachments)
            .tool(Arc::new(SearchKnowledgeTool::new(knowledge.clone())))
            .build()?;
        Ok(Self {
            art,
            providers,
            secrets,
            knowledge,
            embedder,
        })
    }

    /// Save a thread's settings, checked as the app checks them ([`save_thread_config`]).
    pub async fn save_thread_config(
        &self,
        thread_id: &str,
        config: &ThreadConfig,
    ) -> Result<(), SettingsError> {
        save_thread_config(&self.art, &self.providers, thread_id, config).await
    }

    /// The built-in provider named `name`, matched without regard to case (`OpenAI`,
    /// `openai`); `None` when there is none.
    pub fn provider_named(&self, name: &str) -> Option<String> {
        self.providers
            .entries()
            .into_iter()
            .map(|e| e.name)
            .find(|known| known.eq_ignore_ascii_case(name.trim()))
    }

    /// [`export_redactor`] for this stack.
    pub async fn redactor(&self) -> Redactor {
        export_redactor(&self.art, &self.providers, &self.secrets)
            .await
            .unwrap_or_else(|_| Redactor::new(Vec::new()))
    }
}

/// A redactor for exports that knows every provider key and every MCP server's header
/// and environment secrets and sign-in tokens (the keychain is read off the async workers); `Err` when that
/// read stopped.
pub async fn export_redactor(
    art: &ArtInstance,
    providers: &Arc<ProviderManager>,
    secrets: &Arc<EnvFallback<KeychainStore>>,
) -> Result<Redactor, tokio::task::JoinError> {
    let accounts = art.mcp.store().secret_accounts().await.unwrap_or_default();
    let signed_in = art.mcp.sign_in_secrets().await;
    let (providers, secrets) = (Arc::clone(providers), Arc::clone(secrets));
    tokio::task::spawn_blocking(move || {
        Redactor::for_providers(&providers, secrets.as_ref(), &accounts).with(signed_in)
    })
    .await
}
