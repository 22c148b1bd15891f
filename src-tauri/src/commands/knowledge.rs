//! The Knowledge page's commands over the data directory's knowledge database. Files
//! and folders come from the system's picker (or `--pick-dir`), read by the backend;
//! queued documents are read by the background indexer, whose progress reaches the
//! page as `KNOWLEDGE` events. Database work runs off the async workers.

use std::sync::Arc;

use art::knowledge::embed::provider::ProviderModels;
use art::knowledge::{self, Indexer, KnowledgeStore, attached};
use art::secrets::SecretStore;
use art_types::commands::{
    AddAttachedToKnowledge, AddToCollection, CancelIndexing, CreateCollection, DeleteCollection,
    IndexingStatus, ListCollections, ListDocuments, ReadPassages, ReindexCollection,
    RemoveDocument, RenameCollection, SearchKnowledge, SetCollectionEmbedder, StopSyncing,
    SyncFolders,
};
use art_types::knowledge::{
    Added, AddedAttached, BUILTIN_EMBEDDER, Collection, Document, IndexProgress, KnowledgeProblem,
    Passages, Searched,
};
use art_types::{ErrorCode, IpcError};
use tauri::AppHandle;

use super::picker::{self, Pick};
use super::{Handler, workbench};
use crate::error::context_error;

/// Passages a search returns at most (as the tool allows).
const MAX_K: u32 = 20;

/// A refusal as the command's error: the sentence, and the problem's facts as details.
fn refused(problem: KnowledgeProblem) -> IpcError {
    let code = match problem {
        KnowledgeProblem::Database(_) => ErrorCode::Storage,
        _ => ErrorCode::Knowledge,
    };
    let details = serde_json::to_value(&problem).unwrap_or_default();
    IpcError::new(code, problem.to_string()).with_details(details)
}

/// Run `work` on the knowledge database off the async workers.
async fn on_store<T: Send + 'static>(
    app: &AppHandle,
    work: impl FnOnce(&KnowledgeStore) -> Result<T, KnowledgeProblem> + Send + 'static,
) -> Result<T, IpcError> {
    let store = Arc::clone(&workbench(app)?.knowledge);
    tokio::task::spawn_blocking(move || work(&store))
        .await
        .map_err(|e| {
            IpcError::new(
                ErrorCode::Internal,
                format!("the knowledge database call stopped: {e}"),
            )
        })?
        .map_err(refused)
}

/// Ask the background indexer something (wake it, rescan), or why it is not running.
fn indexer(app: &AppHandle, ask: impl FnOnce(&Indexer)) -> Result<(), IpcError> {
    match &workbench(app)?.indexer {
        Ok(indexer) => {
            ask(indexer);
            Ok(())
        }
        Err(why) => Err(IpcError::new(ErrorCode::Internal, why.clone())),
    }
}

impl Handler for ListCollections {
    async fn handle(self, app: AppHandle) -> Result<Vec<Collection>, IpcError> {
        on_store(&app, KnowledgeStore::collections).await
    }
}

impl Handler for CreateCollection {
    async fn handle(self, app: AppHandle) -> Result<Collection, IpcError> {
        on_store(&app, move |store| store.create(&self.name)).await
    }
}

impl Handler for RenameCollection {
    async fn handle(self, app: AppHandle) -> Result<Collection, IpcError> {
        on_store(&app, move |store| {
            store.rename(&self.id, &self.name)?;
            store.find(&self.id)
        })
        .await
    }
}

impl Handler for SetCollectionEmbedder {
    async fn handle(self, app: AppHandle) -> Result<Collection, IpcError> {
        let wb = workbench(&app)?;
        // The providers as they are now (one added since the app started included).
        let models = Arc::new(ProviderModels::new(
            wb.providers.entries(),
            Arc::clone(&wb.secrets) as Arc<dyn SecretStore>,
            wb.http,
        ));
        let connect = Arc::clone(&models);
        let model = self.model.trim().to_owned();
        let collection = on_store(&app, move |store| {
            let current = store.find(&self.id)?;
            if model != BUILTIN_EMBEDDER && model != current.embedder {
                // Tried before anything changes: a missing model or a refused key is
                // said now, not by the indexer later.
                let embedder =
                    connect
                        .connect(&model)
                        .map_err(|e| KnowledgeProblem::EmbedderUnavailable {
                            model: model.clone(),
                            reason: e.to_string(),
                        })?;
                store.set_embedder(Arc::new(embedder));
            }
            store.change_embedder(&current.id, &model)?;
            store.find(&current.id)
        })
        .await?;
        indexer(&app, |indexer| indexer.connect_providers(models))?;
        Ok(collection)
    }
}

impl Handler for DeleteCollection {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        on_store(&app, move |store| store.delete(&self.id)).await?;
        sweep(&app).await;
        Ok(())
    }
}

impl Handler for ListDocuments {
    async fn handle(self, app: AppHandle) -> Result<Vec<Document>, IpcError> {
        on_store(&app, move |store| {
            // An unknown id is an error, not an empty list.
            store.find(&self.collection)?;
            store.documents(&self.collection)
        })
        .await
    }
}

impl Handler for AddToCollection {
    async fn handle(self, app: AppHandle) -> Result<Added, IpcError> {
        let collection = self.collection.clone();
        on_store(&app, move |store| store.find(&collection).map(|_| ())).await?;
        let pick = if self.folder {
            Pick::Folder {
                title: "Add a folder to the collection",
            }
        } else {
            Pick::Files {
                title: "Add files to the collection",
                filters: &[],
            }
        };
        let paths = picker::pick(&app, pick).await?;
        if paths.is_empty() {
            return Ok(Added::default());
        }
        let added = on_store(&app, move |store| {
            knowledge::add(
                store,
                &self.collection,
                &paths,
                self.folder && self.keep_in_sync,
            )
        })
        .await?;
        indexer(&app, Indexer::wake)?;
        Ok(added)
    }
}

impl Handler for RemoveDocument {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        on_store(&app, move |store| store.remove(self.id)).await?;
        sweep(&app).await;
        Ok(())
    }
}

/// Remove the files made for attached documents that no document reads any more.
async fn sweep(app: &AppHandle) {
    let Ok(files) = workbench(app).map(|wb| wb.knowledge_files.clone()) else {
        return;
    };
    if let Err(e) = on_store(app, move |store| attached::sweep(store, &files)).await {
        tracing::warn!("attached documents' files not swept: {}", e.message);
    }
}

impl Handler for AddAttachedToKnowledge {
    async fn handle(self, app: AppHandle) -> Result<AddedAttached, IpcError> {
        let wb = workbench(&app)?;
        let thread = wb
            .art
            .conversation
            .thread(&self.thread_id)
            .await
            .map_err(context_error)?;
        let mut config = wb
            .art
            .state
            .load_thread_context(&self.thread_id)
            .await
            .map_err(context_error)?
            .config;
        let attachments = super::attachments::store(&app)?;
        let files = wb.knowledge_files.clone();
        let searched = config.knowledge.clone();
        let list = self.attachments;
        let (collection, created, added) = on_store(&app, move |store| {
            // The files first: a refusal leaves no collection behind.
            let prepared = attached::prepare(&attachments, &list, &files)?;
            let (collection, created) = attached::collection_for(store, &searched, &thread.title)?;
            let added = prepared.queue_in(store, &collection.id)?;
            Ok((store.find(&collection.id)?, created, added))
        })
        .await?;
        // The thread searches the collection from now on, with the tool that does.
        let search = art_types::knowledge::SEARCH_TOOL;
        let mut changed = false;
        if !config.knowledge.contains(&collection.id) {
            config.knowledge.push(collection.id.clone());
            changed = true;
        }
        if !config.enabled_tools.iter().any(|t| t == search) {
            config.enabled_tools.push(search.to_owned());
            changed = true;
        }
        if changed {
            wb.art
                .state
                .set_thread_config(&self.thread_id, &config)
                .await
                .map_err(context_error)?;
        }
        indexer(&app, Indexer::wake)?;
        Ok(AddedAttached {
            collection,
            created,
            added,
        })
    }
}

impl Handler for ReindexCollection {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        on_store(&app, move |store| {
            store.find(&self.id)?;
            store.requeue(&self.id)
        })
        .await?;
        indexer(&app, Indexer::wake)
    }
}

impl Handler for IndexingStatus {
    async fn handle(self, app: AppHandle) -> Result<IndexProgress, IpcError> {
        match &workbench(&app)?.indexer {
            Ok(indexer) => Ok(indexer.progress().borrow().clone()),
            Err(why) => Ok(IndexProgress {
                stopped: Some(why.clone()),
                ..IndexProgress::default()
            }),
        }
    }
}

impl Handler for CancelIndexing {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        if let Ok(indexer) = &workbench(&app)?.indexer {
            indexer.cancel();
        }
        Ok(())
    }
}

impl Handler for SearchKnowledge {
    async fn handle(self, app: AppHandle) -> Result<Searched, IpcError> {
        let k = self.k.unwrap_or(5).clamp(1, MAX_K) as usize;
        on_store(&app, move |store| {
            store.search_scoped(&self.query, &[], self.collection.as_deref(), k)
        })
        .await
    }
}

impl Handler for StopSyncing {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        on_store(&app, move |store| {
            store.find(&self.collection)?;
            store.stop_syncing(&self.collection, &self.folder)
        })
        .await
    }
}

impl Handler for SyncFolders {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        indexer(&app, Indexer::sync_now)
    }
}

impl Handler for ReadPassages {
    async fn handle(self, app: AppHandle) -> Result<Passages, IpcError> {
        on_store(&app, move |store| store.passages(self.chunk)).await
    }
}
