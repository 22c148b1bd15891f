//! StateManager: per-thread configuration and agent state, with ART's two saving
//! strategies.
//!
//! - `Explicit` (default): state is saved only by [`StateManager::set_agent_state`];
//!   [`StateManager::save_state_if_modified`] does nothing.
//! - `Implicit`: [`StateManager::load_thread_context`] keeps a snapshot; at the end of a
//!   run `save_state_if_modified` saves the state if it differs from the snapshot.
//!
//! Unlike ART, nothing is served from a cache: every load reads storage, and the snapshot
//! is only used for the comparison (ART's cache went stale across runs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use art_types::{AgentState, StateSavingStrategy, ThreadConfig, ThreadContext};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::clock;
use crate::storage::{self, Collection, Record, StorageAdapter};

use super::ContextError;

/// Thread configuration and state. The saving strategy given at construction is the
/// default; a thread's configuration can choose its own.
pub struct StateManager {
    storage: Arc<dyn StorageAdapter>,
    strategy: StateSavingStrategy,
    /// State as loaded at the start of a run, for threads saving implicitly.
    snapshots: Mutex<HashMap<String, AgentState>>,
}

fn record(thread_id: &str, body: String) -> Record {
    Record {
        id: thread_id.to_owned(),
        thread_id: Some(thread_id.to_owned()),
        trace_id: None,
        kind: None,
        timestamp: clock::now_ms(),
        search_text: None,
        body,
        parent: None,
    }
}

impl StateManager {
    /// A manager with the given saving strategy.
    pub fn new(storage: Arc<dyn StorageAdapter>, strategy: StateSavingStrategy) -> Self {
        Self {
            storage,
            strategy,
            snapshots: Mutex::new(HashMap::new()),
        }
    }

    /// The default saving strategy.
    pub fn strategy(&self) -> StateSavingStrategy {
        self.strategy
    }

    /// The strategy a thread with `config` uses.
    pub fn strategy_for(&self, config: &ThreadConfig) -> StateSavingStrategy {
        config.state_saving.unwrap_or(self.strategy)
    }

    fn snapshots(&self) -> std::sync::MutexGuard<'_, HashMap<String, AgentState>> {
        self.snapshots.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn load<T: DeserializeOwned + Default>(
        &self,
        collection: Collection,
        thread_id: &str,
    ) -> Result<T, ContextError> {
        match self.storage.get(collection, thread_id).await? {
            None => Ok(T::default()),
            Some(r) => Ok(r.decode(collection)?),
        }
    }

    /// Configuration and state of a thread (defaults when none were saved). Under the
    /// implicit strategy this also takes the snapshot used by `save_state_if_modified`.
    pub async fn load_thread_context(
        &self,
        thread_id: &str,
    ) -> Result<ThreadContext, ContextError> {
        let config: ThreadConfig = self.load(Collection::ThreadConfigs, thread_id).await?;
        let state: AgentState = self.load(Collection::ThreadStates, thread_id).await?;
        match self.strategy_for(&config) {
            StateSavingStrategy::Implicit => {
                self.snapshots().insert(thread_id.to_owned(), state.clone());
            }
            StateSavingStrategy::Explicit => {
                self.snapshots().remove(thread_id);
            }
        }
        Ok(ThreadContext { config, state })
    }

    /// What was saved for a thread: its configuration and its state, each `None` when
    /// never saved (unlike [`Self::load_thread_context`], which fills in defaults).
    pub async fn saved(
        &self,
        thread_id: &str,
    ) -> Result<(Option<ThreadConfig>, Option<AgentState>), ContextError> {
        let config = self
            .storage
            .get(Collection::ThreadConfigs, thread_id)
            .await?;
        let state = self
            .storage
            .get(Collection::ThreadStates, thread_id)
            .await?;
        Ok((
            config
                .map(|r| r.decode(Collection::ThreadConfigs))
                .transpose()?,
            state
                .map(|r| r.decode(Collection::ThreadStates))
                .transpose()?,
        ))
    }

    /// Save a thread's configuration.
    pub async fn set_thread_config(
        &self,
        thread_id: &str,
        config: &ThreadConfig,
    ) -> Result<(), ContextError> {
        let body = storage::encode(config)?;
        self.storage
            .set(Collection::ThreadConfigs, vec![record(thread_id, body)])
            .await?;
        Ok(())
    }

    /// One top-level configuration value by its JSON name (e.g. `systemPrompt`).
    pub async fn get_thread_config_value(
        &self,
        thread_id: &str,
        key: &str,
    ) -> Result<Option<Value>, ContextError> {
        let config: ThreadConfig = self.load(Collection::ThreadConfigs, thread_id).await?;
        let json = serde_json::to_value(config).unwrap_or_default();
        Ok(json.get(key).filter(|v| !v.is_null()).cloned())
    }

    /// A thread's configuration alone (the default when none was saved), without its state
    /// and without taking the implicit strategy's snapshot.
    pub async fn thread_config(&self, thread_id: &str) -> Result<ThreadConfig, ContextError> {
        self.load(Collection::ThreadConfigs, thread_id).await
    }

    /// Whether a tool is enabled for a thread.
    pub async fn is_tool_enabled(&self, thread_id: &str, tool: &str) -> Result<bool, ContextError> {
        let config: ThreadConfig = self.load(Collection::ThreadConfigs, thread_id).await?;
        Ok(config.enabled_tools.iter().any(|t| t == tool))
    }

    /// Save agent state now (both strategies), and make it the new snapshot.
    pub async fn set_agent_state(
        &self,
        thread_id: &str,
        state: &AgentState,
    ) -> Result<(), ContextError> {
        let body = storage::encode(state)?;
        self.storage
            .set(Collection::ThreadStates, vec![record(thread_id, body)])
            .await?;
        if let Some(snapshot) = self.snapshots().get_mut(thread_id) {
            *snapshot = state.clone();
        }
        Ok(())
    }

    /// End-of-run hook: when the thread saves implicitly, save `state` if it differs
    /// from the snapshot taken when the run loaded its context; returns whether it saved.
    /// A thread saving explicitly never saves here.
    pub async fn save_state_if_modified(
        &self,
        thread_id: &str,
        state: &AgentState,
    ) -> Result<bool, ContextError> {
        let snapshot = self.snapshots().get(thread_id).cloned();
        let changed = match snapshot {
            Some(snapshot) => snapshot != *state,
            // No run loaded this thread's context here: ask its configuration.
            None => {
                let config: ThreadConfig = self.load(Collection::ThreadConfigs, thread_id).await?;
                self.strategy_for(&config) == StateSavingStrategy::Implicit
            }
        };
        if changed {
            self.set_agent_state(thread_id, state).await?;
        }
        Ok(changed)
    }
}
