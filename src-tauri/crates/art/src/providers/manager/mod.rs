//! ProviderManager (ART's ProviderManagerImpl, without its bugs): lends adapters for a
//! provider configuration as RAII leases.
//!
//! - Adapters are pooled by [`Signature`] (provider, model, merged options, digest of
//!   the API key); idle ones are evicted after `idle_timeout`.
//! - At most `max_parallel_api` calls per API provider; more wait in a FIFO queue and a
//!   slot is handed straight to the next waiter on release (no barging). A waiter that
//!   waits longer than `queue_timeout` gets `API_QUEUE_TIMEOUT` — it really fires.
//! - Local providers (Ollama) are a singleton: a different local config while one is
//!   active → `LOCAL_PROVIDER_CONFLICT`; the same one while active →
//!   `LOCAL_INSTANCE_BUSY`; an idle one with a different config is unloaded first.
//! - All bookkeeping happens under one lock, so concurrent first requests cannot create
//!   two adapters for one signature; base options are merged into call options.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use art_types::{ErrorClass, FailureCode, ProviderConfig};
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::signature::Signature;
use crate::reasoning::provider::{AdapterLease, ProviderAdapter, ProviderError, ProviderSource};
use crate::secrets::{Secret, SecretError, SecretStore};

/// A provider the app knows.
#[derive(Debug, Clone)]
pub struct ProviderEntry {
    /// Name used in thread configs, e.g. `openai`.
    pub name: String,
    /// The wire protocol (which adapter serves it).
    pub kind: art_types::AdapterKind,
    /// Local (singleton, no key) or API provider.
    pub is_local: bool,
    /// Options merged under each call's adapter options.
    pub base_options: Map<String, Value>,
}

/// Creates adapters; the real HTTP adapters are made here.
pub trait AdapterFactory: Send + Sync {
    /// An adapter for `entry` with `model`, merged `options` and the key (if any).
    fn create(
        &self,
        entry: &ProviderEntry,
        model: &str,
        options: &Map<String, Value>,
        secret: Option<&Secret>,
    ) -> Result<Arc<dyn ProviderAdapter>, ProviderError>;
}

/// Limits and timeouts.
#[derive(Debug, Clone, Copy)]
pub struct ManagerOptions {
    /// Concurrent calls per API provider (ART default 5).
    pub max_parallel_api: usize,
    /// Longest wait in the queue.
    pub queue_timeout: Duration,
    /// Idle adapters older than this are evicted (ART default 300 s).
    pub idle_timeout: Duration,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        Self {
            max_parallel_api: 5,
            queue_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(300),
        }
    }
}

struct Pooled {
    adapter: Arc<dyn ProviderAdapter>,
    /// The model it serves (named in messages).
    model: String,
    local: bool,
    active: usize,
    idle_since: Instant,
}

#[derive(Default)]
struct State {
    pool: HashMap<Signature, Pooled>,
    api_active: HashMap<String, usize>,
    waiters: HashMap<String, VecDeque<(u64, oneshot::Sender<()>)>>,
    next_waiter: u64,
}

struct Inner {
    entries: HashMap<String, ProviderEntry>,
    factory: Arc<dyn AdapterFactory>,
    secrets: Arc<dyn SecretStore>,
    options: ManagerOptions,
    state: Mutex<State>,
}

/// Lends adapters. Cheap to clone.
#[derive(Clone)]
pub struct ProviderManager {
    inner: Arc<Inner>,
}

fn error(class: ErrorClass, code: FailureCode, message: impl Into<String>) -> ProviderError {
    ProviderError::new(class, code, message)
}

/// What one acquisition asks for.
struct Wanted<'a> {
    signature: &'a Signature,
    entry: &'a ProviderEntry,
    model: &'a str,
    options: &'a Map<String, Value>,
    secret: Option<&'a Secret>,
}

enum Attempt {
    Lent(Arc<dyn ProviderAdapter>),
    Wait(u64, oneshot::Receiver<()>),
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take a pooled adapter (creating it if needed) and count it active.
    fn checkout(
        &self,
        state: &mut State,
        wanted: &Wanted<'_>,
    ) -> Result<Arc<dyn ProviderAdapter>, ProviderError> {
        let signature = wanted.signature;
        if !state.pool.contains_key(signature) {
            let adapter =
                self.factory
                    .create(wanted.entry, wanted.model, wanted.options, wanted.secret)?;
            state.pool.insert(
                signature.clone(),
                Pooled {
                    adapter,
                    model: wanted.model.to_owned(),
                    local: wanted.entry.is_local,
                    active: 0,
                    idle_since: Instant::now(),
                },
            );
        }
        let pooled = state.pool.get_mut(signature).expect("inserted above");
        pooled.active += 1;
        Ok(Arc::clone(&pooled.adapter))
    }

    /// Remove adapters idle for too long; returns them so the caller can unload them
    /// outside the lock.
    fn evict_idle(&self, state: &mut State) -> Vec<Arc<dyn ProviderAdapter>> {
        let expired: Vec<Signature> = state
            .pool
            .iter()
            .filter(|(_, p)| p.active == 0 && p.idle_since.elapsed() >= self.options.idle_timeout)
            .map(|(s, _)| s.clone())
            .collect();
        expired
            .into_iter()
            .filter_map(|s| state.pool.remove(&s))
            .map(|p| p.adapter)
            .collect()
    }

    /// Called when a lease is dropped.
    fn release(&self, signature: &Signature, provider: &str, local: bool) {
        let mut state = self.state();
        if let Some(pooled) = state.pool.get_mut(signature) {
            pooled.active = pooled.active.saturating_sub(1);
            if pooled.active == 0 {
                pooled.idle_since = Instant::now();
            }
        }
        if local {
            return;
        }
        // Hand the slot to the first waiter still waiting; only free it if none is.
        if let Some(queue) = state.waiters.get_mut(provider) {
            while let Some((_, waiter)) = queue.pop_front() {
                if waiter.send(()).is_ok() {
                    return;
                }
            }
        }
        if let Some(active) = state.api_active.get_mut(provider) {
            *active = active.saturating_sub(1);
        }
    }
}

/// Returns the slot when dropped.
struct Release {
    inner: Arc<Inner>,
    signature: Signature,
    provider: String,
    local: bool,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.inner
            .release(&self.signature, &self.provider, self.local);
    }
}

impl ProviderManager {
    /// A manager for `entries`, creating adapters with `factory` and keys from `secrets`.
    pub fn new(
        entries: Vec<ProviderEntry>,
        factory: Arc<dyn AdapterFactory>,
        secrets: Arc<dyn SecretStore>,
        options: ManagerOptions,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                entries: entries.into_iter().map(|e| (e.name.clone(), e)).collect(),
                factory,
                secrets,
                options,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The known providers.
    pub fn entries(&self) -> Vec<ProviderEntry> {
        let mut entries: Vec<_> = self.inner.entries.values().cloned().collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        entries
    }

    /// Pooled adapters right now (for tests and the status view).
    pub fn pooled(&self) -> usize {
        self.inner.state().pool.len()
    }

    /// Evict idle adapters now (also done on every acquisition); local ones are unloaded.
    pub async fn evict_idle(&self) {
        let evicted = {
            let mut state = self.inner.state();
            self.inner.evict_idle(&mut state)
        };
        for adapter in evicted {
            adapter.unload().await;
        }
    }
}

#[async_trait::async_trait]
impl ProviderSource for ProviderManager {
    fn is_local(&self, name: &str) -> bool {
        self.inner.entries.get(name).is_some_and(|e| e.is_local)
    }

    /// Asked of local providers only (Ollama): a remote provider's window is not
    /// reported by its API, and taking a slot of its queue to learn nothing would make
    /// a run wait twice.
    async fn context_window(&self, config: &ProviderConfig) -> Option<u64> {
        let entry = self.inner.entries.get(&config.provider_name)?;
        if !entry.is_local {
            return None;
        }
        let lease = self.acquire(config).await.ok()?;
        lease.adapter.context_window().await
    }

    /// The thread's option first; then a local server is asked (a remote one is not, for
    /// the reason above).
    async fn sees_images(&self, config: &ProviderConfig) -> Option<bool> {
        if let Some(said) = config.sees_images() {
            return Some(said);
        }
        let entry = self.inner.entries.get(&config.provider_name)?;
        if !entry.is_local {
            return None;
        }
        let lease = self.acquire(config).await.ok()?;
        lease.adapter.sees_images().await
    }

    async fn acquire(&self, config: &ProviderConfig) -> Result<AdapterLease, ProviderError> {
        let inner = &self.inner;
        let entry = inner.entries.get(&config.provider_name).ok_or_else(|| {
            let mut known: Vec<&str> = inner.entries.keys().map(String::as_str).collect();
            known.sort_unstable();
            error(
                ErrorClass::Permanent,
                FailureCode::UnknownProvider,
                format!(
                    "there is no provider named `{}` (the providers are: {}); choose one in the \
                     thread's settings, or with `art config --thread ID --provider NAME`",
                    config.provider_name,
                    known.join(", ")
                ),
            )
        })?;
        let mut options = entry.base_options.clone();
        options.extend(config.adapter_options.clone());
        let secret = if entry.is_local {
            None
        } else {
            match inner.secrets.get(&entry.name) {
                Ok(secret) => secret,
                Err(SecretError::Unavailable { reason, hint }) => {
                    // The documented fallback first: on a command line or a machine
                    // without a desktop session it is the simplest fix.
                    let variable = crate::secrets::env_var_name(&entry.name);
                    return Err(error(
                        ErrorClass::Auth,
                        FailureCode::KeychainUnavailable,
                        format!(
                            "cannot read the API key for {}: the OS keychain is unavailable \
                             ({reason}). Set {variable} in the environment, or: {hint}",
                            entry.name
                        ),
                    ));
                }
                Err(other) => {
                    return Err(error(
                        ErrorClass::Auth,
                        FailureCode::KeychainError,
                        other.to_string(),
                    ));
                }
            }
        };
        let signature = Signature::of(&entry.name, &config.model_id, &options, secret.as_ref());
        let wanted = Wanted {
            signature: &signature,
            entry,
            model: &config.model_id,
            options: &options,
            secret: secret.as_ref(),
        };
        let deadline = tokio::time::Instant::now() + inner.options.queue_timeout;

        let attempt = {
            let mut state = inner.state();
            let mut to_unload = inner.evict_idle(&mut state);
            let attempt = if entry.is_local {
                let current = state
                    .pool
                    .iter()
                    .find(|(_, p)| p.local)
                    .map(|(s, p)| (s.clone(), p.active, p.model.clone()));
                match current {
                    Some((s, active, _)) if active > 0 && s == signature => Err(error(
                        ErrorClass::Transient,
                        FailureCode::LocalInstanceBusy,
                        format!(
                            "{} is busy with another request; try again when it finishes",
                            entry.name
                        ),
                    )),
                    Some((_, active, running)) if active > 0 => Err(error(
                        ErrorClass::Permanent,
                        FailureCode::LocalProviderConflict,
                        format!(
                            "{} is running {running} for another answer right now; wait for it \
                             to finish before switching to {}",
                            entry.name, config.model_id
                        ),
                    )),
                    current => {
                        // An idle local instance of another config is unloaded first.
                        if let Some((old, _, _)) = current.filter(|(s, _, _)| *s != signature)
                            && let Some(old) = state.pool.remove(&old)
                        {
                            to_unload.push(old.adapter);
                        }
                        inner.checkout(&mut state, &wanted).map(Attempt::Lent)
                    }
                }
            } else {
                let active = state.api_active.get(&entry.name).copied().unwrap_or(0);
                if active < inner.options.max_parallel_api {
                    let lent = inner.checkout(&mut state, &wanted);
                    if lent.is_ok() {
                        *state.api_active.entry(entry.name.clone()).or_default() += 1;
                    }
                    lent.map(Attempt::Lent)
                } else {
                    let (tx, rx) = oneshot::channel();
                    state.next_waiter += 1;
                    let id = state.next_waiter;
                    state
                        .waiters
                        .entry(entry.name.clone())
                        .or_default()
                        .push_back((id, tx));
                    Ok(Attempt::Wait(id, rx))
                }
            };
            (attempt, to_unload)
        };
        let (attempt, to_unload) = attempt;
        for adapter in to_unload {
            adapter.unload().await;
        }

        let adapter = match attempt? {
            Attempt::Lent(adapter) => adapter,
            Attempt::Wait(id, mut rx) => {
                let handed = matches!(tokio::time::timeout_at(deadline, &mut rx).await, Ok(Ok(())));
                let mut state = inner.state();
                // A slot handed over just as the wait timed out is still ours.
                let handed = handed || rx.try_recv().is_ok();
                if !handed {
                    if let Some(queue) = state.waiters.get_mut(&entry.name) {
                        queue.retain(|(w, _)| *w != id);
                    }
                    return Err(error(
                        ErrorClass::RateLimited,
                        FailureCode::ApiQueueTimeout,
                        format!(
                            "{} already has {} requests running and this one waited {} s for a turn",
                            entry.name,
                            inner.options.max_parallel_api,
                            inner.options.queue_timeout.as_secs()
                        ),
                    ));
                }
                // The slot is counted already; only the adapter is needed.
                match inner.checkout(&mut state, &wanted) {
                    Ok(adapter) => adapter,
                    Err(e) => {
                        drop(state);
                        inner.release(&signature, &entry.name, false);
                        return Err(e);
                    }
                }
            }
        };
        Ok(AdapterLease {
            adapter,
            release: Box::new(Release {
                inner: Arc::clone(inner),
                signature,
                provider: entry.name.clone(),
                local: entry.is_local,
            }),
        })
    }
}

#[cfg(test)]
mod tests;
