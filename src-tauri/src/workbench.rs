//! The framework as the desktop app drives it: one [`ArtInstance`] over the data
//! directory's database, the provider manager with keys from the keychain (or the
//! environment), the runs in flight, and the bridge that forwards the sockets as events.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::knowledge::{Indexer, KnowledgeStore};
use art::paths::DataDir;
use art::providers::http::HttpOptions;
use art::providers::ollama::models::OllamaModels;
use art::providers::ollama::pulls::{Journal, PullQueue};
use art::providers::options::{BASE_URL, base_url as check_base_url};
use art::providers::{ProviderEntry, ProviderManager};
use art::push::TracePush;
use art::secrets::{EnvFallback, KeychainStore};
use art::sockets::All;
use art::standard::{OpenError, Standard};
use art_types::{ErrorCode, IpcError, MessageStatus, events};

use crate::error::storage_error;
use tauri::{AppHandle, Emitter};

/// Everything the thread, run and settings commands need.
pub struct Workbench {
    /// The agent, its managers and sockets over the data directory's database.
    pub art: ArtInstance,
    /// Providers and their pooled adapters.
    pub providers: Arc<ProviderManager>,
    /// API keys: the OS keychain, with `<PROVIDER>_API_KEY` as a read-only fallback.
    pub secrets: Arc<EnvFallback<KeychainStore>>,
    /// HTTP options for model lists and the doctor.
    pub http: HttpOptions,
    /// The knowledge collections the agent's `search_knowledge` searches.
    pub knowledge: Arc<KnowledgeStore>,
    /// The thread that reads queued documents, or why it could not start.
    pub indexer: Result<Indexer, String>,
    /// Where attached documents added to a collection are kept as files.
    pub knowledge_files: std::path::PathBuf,
    /// The Ollama server the Models page manages (the Ollama provider's at start), with
    /// its pulls, one at a time.
    ollama: std::sync::RwLock<PullQueue>,
    /// Runs in flight, by trace id: their thread and what cancels them.
    runs: Mutex<HashMap<String, (String, CancellationToken)>>,
    /// MCP sign-ins waiting for the browser, by server: what cancels them.
    sign_ins: Mutex<HashMap<String, CancellationToken>>,
    /// MCP servers' questions waiting on their tool cards for the user's answer.
    pub answers: Arc<art::tools::mcp::Answers>,
    /// "Send traces to": finished runs queued for the OTLP collector, and their sender.
    pub push: Arc<TracePush>,
    /// Stops the push's sender when the app quits.
    pub push_stop: CancellationToken,
    /// The redactor the push's runs are exported with, kept between runs (building one
    /// reads every key from the keychain): see [`Self::push_redactor`].
    redactors: art::export::Redactors,
}

/// Keeps the pulls still to finish in the app's settings as they change (the latest
/// list is read when it is written, so writes that land out of order still end right).
fn pull_journal(art: &ArtInstance) -> Journal {
    let settings = Arc::clone(&art.settings);
    Arc::new(move |queue: PullQueue| {
        let settings = Arc::clone(&settings);
        tauri::async_runtime::spawn(async move {
            if let Err(e) = settings
                .update(|s| s.unfinished_pulls = queue.unfinished())
                .await
            {
                tracing::warn!("the pulls to finish were not recorded: {e}");
            }
        });
    })
}

impl Workbench {
    /// Open the database in `data_dir` and build the framework over it.
    pub fn open(data_dir: &DataDir) -> Result<Self, IpcError> {
        // The trust store is read on another thread while the database opens.
        art::net::warm();
        let standard = Standard::open(data_dir).map_err(|e| match e {
            OpenError::Storage(_) => IpcError::new(ErrorCode::Storage, e.to_string())
                .with_details(serde_json::json!({ "path": data_dir.database_path() })),
            OpenError::Tools(_) => IpcError::new(ErrorCode::Internal, e.to_string()),
            OpenError::Attachments(_) => {
                IpcError::new(ErrorCode::DataDirUnavailable, e.to_string())
                    .with_details(serde_json::json!({ "path": data_dir.attachments_dir() }))
            }
            OpenError::Knowledge(_) => IpcError::new(ErrorCode::Storage, e.to_string())
                .with_details(serde_json::json!({ "path": data_dir.knowledge_path() })),
        })?;
        let provider_models = standard.provider_models();
        let Standard {
            art,
            providers,
            secrets,
            knowledge,
            embedder,
        } = standard;
        let knowledge_files = data_dir.knowledge_files_dir();
        // A server's question mid-call is asked on the call's card.
        let answers = Arc::new(art::tools::mcp::Answers::default());
        art.mcp.set_elicitor(Arc::clone(&answers) as _);
        // The server the Models page was last pointed at, else the Ollama provider's.
        // (Opened before any async runtime runs this thread: blocking on it is safe.)
        let saved = tauri::async_runtime::block_on(art.settings.get()).map_err(storage_error)?;
        let ollama_base = saved
            .ollama_base_url
            .unwrap_or_else(|| art::providers::ollama::configured_base_url(&providers.entries()));
        let ollama = OllamaModels::new(&ollama_base)
            .map_err(|e| IpcError::new(ErrorCode::Internal, e.to_string()))?;
        let pulls = PullQueue::new(ollama).with_journal(pull_journal(&art));
        // Pulls the app's closing cut short (Ollama stops a pull whose connection
        // closes): shown as such on the Models page, once.
        if !saved.unfinished_pulls.is_empty() {
            pulls.cut_short(&saved.unfinished_pulls);
            tauri::async_runtime::block_on(art.settings.update(|s| s.unfinished_pulls.clear()))
                .map_err(storage_error)?;
        }
        // Files of attached documents removed meanwhile (by `art kb`, say).
        if let Err(e) = art::knowledge::attached::sweep(&knowledge, &knowledge_files) {
            tracing::warn!("attached documents' files not swept: {e}");
        }
        let indexer = Indexer::start(Arc::clone(&knowledge), Some(embedder)).map_err(|e| {
            tracing::error!("the knowledge indexer could not start: {e}");
            format!("the indexing thread could not start: {e}")
        });
        if let Ok(indexer) = &indexer {
            // Collections that use a provider's embedding model (the providers as they
            // are at start).
            indexer.connect_providers(provider_models);
        }
        let push = TracePush::open(&data_dir.trace_outbox_path()).map_err(|e| {
            IpcError::new(ErrorCode::Storage, e.to_string())
                .with_details(serde_json::json!({ "path": data_dir.trace_outbox_path() }))
        })?;
        Ok(Self {
            push,
            push_stop: CancellationToken::new(),
            redactors: art::export::Redactors::default(),
            art,
            providers,
            secrets,
            http: HttpOptions::default(),
            knowledge,
            indexer,
            knowledge_files,
            ollama: std::sync::RwLock::new(pulls),
            runs: Mutex::new(HashMap::new()),
            sign_ins: Mutex::new(HashMap::new()),
            answers,
        })
    }

    /// The redactor the push's runs are exported with: every provider key and MCP secret
    /// (the kept one while no secret changed, else built again from the keychain).
    pub async fn push_redactor(&self) -> Arc<art::export::Redactor> {
        self.redactors
            .get(art::standard::export_redactor(
                &self.art,
                &self.providers,
                &self.secrets,
            ))
            .await
    }

    /// The provider entry called `name`.
    pub fn provider(&self, name: &str) -> Result<ProviderEntry, IpcError> {
        self.providers
            .entries()
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                IpcError::new(
                    ErrorCode::NotFound,
                    format!("there is no provider named {name:?}"),
                )
            })
    }

    /// `wanted` (or, when none, the Ollama provider's address) checked by the one rule
    /// for a base URL, as a run would check it; refused naming the `baseUrl` field.
    pub fn checked_ollama_base(&self, wanted: Option<String>) -> Result<String, IpcError> {
        let entry = self
            .providers
            .entries()
            .into_iter()
            .find(|e| e.kind == art_types::AdapterKind::Ollama)
            .ok_or_else(|| {
                IpcError::new(ErrorCode::NotFound, "no Ollama provider is configured")
            })?;
        let base = wanted.filter(|b| !b.trim().is_empty()).unwrap_or_else(|| {
            art::providers::ollama::configured_base_url(std::slice::from_ref(&entry))
        });
        let options = serde_json::Map::from_iter([(BASE_URL.to_owned(), base.trim().into())]);
        check_base_url(&entry, &options).map_err(|e| {
            IpcError::new(ErrorCode::InvalidInput, e.message)
                .with_details(serde_json::json!({ "field": "baseUrl" }))
        })
    }

    /// The Ollama server the Models page manages (`.models()`), with its pulls.
    pub fn ollama(&self) -> PullQueue {
        self.ollama
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Manage the Ollama server at `base_url` (already checked) from now on; refused
    /// while a pull runs or waits on the present one.
    pub fn set_ollama(&self, base_url: &str) -> Result<(), IpcError> {
        let mut target = self.ollama.write().unwrap_or_else(|p| p.into_inner());
        if target.states().iter().any(|s| s.is_active()) {
            return Err(IpcError::new(
                ErrorCode::InvalidInput,
                format!(
                    "a pull from {} is not finished: cancel it first, or wait",
                    target.models().base_url()
                ),
            ));
        }
        let models = OllamaModels::new(base_url)
            .map_err(|e| IpcError::new(ErrorCode::Internal, e.to_string()))?;
        *target = PullQueue::new(models).with_journal(pull_journal(&self.art));
        Ok(())
    }

    /// Run `call` on the keychain off the async runtime (it talks D-Bus and may block).
    pub async fn keychain<T: Send + 'static>(
        &self,
        call: impl FnOnce(&EnvFallback<KeychainStore>) -> T + Send + 'static,
    ) -> Result<T, IpcError> {
        let secrets = Arc::clone(&self.secrets);
        tokio::task::spawn_blocking(move || call(&secrets))
            .await
            .map_err(|e| {
                IpcError::new(
                    ErrorCode::Internal,
                    format!("the keychain call stopped: {e}"),
                )
            })
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, CancellationToken)>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a run of `thread_id` is in flight.
    pub fn is_running(&self, thread_id: &str) -> bool {
        self.runs().values().any(|(thread, _)| thread == thread_id)
    }

    /// Register a run of `thread_id`; its token cancels it. `None` when the thread
    /// already has a run in flight (one answer at a time keeps the history in order).
    pub fn start_run(&self, trace_id: &str, thread_id: &str) -> Option<CancellationToken> {
        self.start_runs(&[trace_id.to_owned()], thread_id)?.pop()
    }

    /// Register runs `traces` of `thread_id` together (a comparison's columns), each
    /// stopped by its own token; `None` when the thread already has a run in flight.
    pub fn start_runs(&self, traces: &[String], thread_id: &str) -> Option<Vec<CancellationToken>> {
        let mut runs = self.runs();
        if runs.values().any(|(thread, _)| thread == thread_id) {
            return None;
        }
        let tokens: Vec<CancellationToken> =
            traces.iter().map(|_| CancellationToken::new()).collect();
        for (trace, token) in traces.iter().zip(&tokens) {
            runs.insert(trace.clone(), (thread_id.to_owned(), token.clone()));
        }
        Some(tokens)
    }

    /// Forget a finished run.
    pub fn finish_run(&self, trace_id: &str) {
        self.runs().remove(trace_id);
    }

    /// Cancel a run in flight; `false` if it is not running.
    pub fn cancel_run(&self, trace_id: &str) -> bool {
        self.runs()
            .get(trace_id)
            .map(|(_, token)| token.cancel())
            .is_some()
    }

    /// Forward the framework's sockets to the webview as events.
    pub fn start_bridge(&self, app: &AppHandle) {
        let sockets = &self.art.sockets;
        let stream = sockets.stream.subscribe(All);
        let mut observations = sockets.observations.subscribe(All);
        let mut messages = sockets.messages.subscribe(All);
        let emitter = app.clone();
        tauri::async_runtime::spawn(art::sockets::coalesce::coalesce(stream, move |batch| {
            if let Err(e) = emitter.emit(events::STREAM, &batch) {
                tracing::warn!("cannot emit a stream batch: {e}");
            }
        }));
        if let Ok(indexer) = &self.indexer {
            let mut progress = indexer.progress();
            let emitter = app.clone();
            tauri::async_runtime::spawn(async move {
                // At most ten events a second; the latest progress always goes out.
                while progress.changed().await.is_ok() {
                    let now = progress.borrow_and_update().clone();
                    if let Err(e) = emitter.emit(events::KNOWLEDGE, &now) {
                        tracing::warn!("cannot emit indexing progress: {e}");
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            });
        }
        let emitter = app.clone();
        tauri::async_runtime::spawn(async move {
            while let Some(observation) = observations.recv().await {
                let _ = emitter.emit(events::OBSERVATION, &observation);
            }
        });
        let emitter = app.clone();
        tauri::async_runtime::spawn(async move {
            while let Some(message) = messages.recv().await {
                // Checkpoints of a streaming answer carry the whole answer so far, ten
                // times a second; the UI shows the live answer from the stream batches
                // instead. Not sending them matters: every Tauri event is a script the
                // webview evaluates, and WebKit keeps memory in proportion to the script
                // bytes it was given (tauri#12724).
                if message.status != MessageStatus::Streaming {
                    let _ = emitter.emit(events::MESSAGE, &message);
                }
            }
        });
    }
}

/// MCP sign-ins under way.
impl Workbench {
    /// What cancels a new sign-in to `server` (one under way for it is cancelled).
    pub fn begin_sign_in(&self, server: &str) -> CancellationToken {
        let cancel = CancellationToken::new();
        let mut sign_ins = self.sign_ins.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(earlier) = sign_ins.insert(server.to_owned(), cancel.clone()) {
            earlier.cancel();
        }
        cancel
    }

    /// The sign-in to `server` ended.
    pub fn end_sign_in(&self, server: &str) {
        self.sign_ins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(server);
    }

    /// Stop waiting for the browser of the sign-in to `server`, if one is under way.
    pub fn cancel_sign_in(&self, server: &str) {
        if let Some(cancel) = self
            .sign_ins
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(server)
        {
            cancel.cancel();
        }
    }
}
