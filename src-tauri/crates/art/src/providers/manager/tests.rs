use std::sync::atomic::{AtomicUsize, Ordering};

use art_types::{FailureCode, Prompt, StreamEventKind};

use super::*;
use crate::reasoning::provider::{CallOptions, EventStream};
use crate::secrets::MemoryStore;

struct Dummy {
    unloaded: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl ProviderAdapter for Dummy {
    fn provider_name(&self) -> &str {
        "dummy"
    }
    async fn call(&self, _: &Prompt, _: &CallOptions) -> Result<EventStream, ProviderError> {
        Ok(Box::pin(futures::stream::iter([StreamEventKind::End])))
    }
    async fn unload(&self) {
        self.unloaded.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Factory {
    created: AtomicUsize,
    unloaded: Arc<AtomicUsize>,
    last_options: Mutex<Map<String, Value>>,
}

impl AdapterFactory for Factory {
    fn create(
        &self,
        _: &ProviderEntry,
        _: &str,
        options: &Map<String, Value>,
        _: Option<&Secret>,
    ) -> Result<Arc<dyn ProviderAdapter>, ProviderError> {
        // Slow creation widens the window in which a non-atomic pool would double-create.
        std::thread::sleep(Duration::from_millis(20));
        self.created.fetch_add(1, Ordering::SeqCst);
        *self.last_options.lock().unwrap() = options.clone();
        Ok(Arc::new(Dummy {
            unloaded: Arc::clone(&self.unloaded),
        }))
    }
}

fn manager(options: ManagerOptions) -> (ProviderManager, Arc<Factory>, Arc<MemoryStore>) {
    let factory = Arc::new(Factory::default());
    let secrets = Arc::new(MemoryStore::new());
    let mut base = Map::new();
    base.insert("base_url".into(), "http://127.0.0.1:1".into());
    base.insert("timeout".into(), 5.into());
    let entries = vec![
        ProviderEntry {
            name: "openai".into(),
            kind: art_types::AdapterKind::OpenAi,
            is_local: false,
            base_options: base,
        },
        ProviderEntry {
            name: "ollama".into(),
            kind: art_types::AdapterKind::Ollama,
            is_local: true,
            base_options: Map::new(),
        },
    ];
    let manager = ProviderManager::new(entries, factory.clone(), secrets.clone(), options);
    (manager, factory, secrets)
}

fn config(provider: &str, model: &str) -> ProviderConfig {
    ProviderConfig {
        provider_name: provider.into(),
        model_id: model.into(),
        adapter_options: Map::new(),
    }
}

fn quick() -> ManagerOptions {
    ManagerOptions {
        max_parallel_api: 2,
        queue_timeout: Duration::from_millis(200),
        idle_timeout: Duration::from_secs(300),
    }
}

#[tokio::test]
async fn same_signature_reuses_and_different_keys_do_not_share() {
    let (m, factory, secrets) = manager(quick());
    secrets
        .set("openai", &Secret::new("sk-SENTINEL-one"))
        .unwrap();
    drop(m.acquire(&config("openai", "gpt")).await.unwrap());
    drop(m.acquire(&config("openai", "gpt")).await.unwrap());
    assert_eq!(
        factory.created.load(Ordering::SeqCst),
        1,
        "idle adapter reused"
    );
    // ART bug 1: a different key must not reuse the adapter made with the old key.
    secrets
        .set("openai", &Secret::new("sk-SENTINEL-two"))
        .unwrap();
    drop(m.acquire(&config("openai", "gpt")).await.unwrap());
    assert_eq!(factory.created.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_create_one_adapter() {
    let (m, factory, _) = manager(quick());
    // Two tasks on two worker threads race for the first adapter of one signature.
    let spawn = || {
        let m = m.clone();
        tokio::spawn(async move { m.acquire(&config("openai", "gpt")).await.map(drop) })
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert!(a.is_ok() && b.is_ok());
    assert_eq!(
        factory.created.load(Ordering::SeqCst),
        1,
        "ART bug 2: acquisition is atomic"
    );
    assert_eq!(m.pooled(), 1);
}

#[tokio::test]
async fn base_options_are_merged_under_call_options() {
    let (m, factory, _) = manager(quick());
    let mut cfg = config("openai", "gpt");
    cfg.adapter_options.insert("timeout".into(), 9.into());
    let _lease = m.acquire(&cfg).await.unwrap();
    let seen = factory.last_options.lock().unwrap().clone();
    assert_eq!(
        seen["base_url"], "http://127.0.0.1:1",
        "ART bug 4: base options merged"
    );
    assert_eq!(seen["timeout"], 9, "call options win");
}

#[tokio::test]
async fn limit_queues_fifo_and_the_queue_timeout_fires() {
    let (m, _, _) = manager(quick());
    let first = m.acquire(&config("openai", "gpt")).await.unwrap();
    let second = m.acquire(&config("openai", "gpt")).await.unwrap();
    // Third waits; ART bug 3: it must time out rather than hang.
    let started = Instant::now();
    let err = m
        .acquire(&config("openai", "gpt"))
        .await
        .err()
        .expect("queue timeout");
    assert_eq!(err.code, FailureCode::ApiQueueTimeout);
    assert!(started.elapsed() >= Duration::from_millis(180));

    // FIFO: two waiters, released one slot at a time, get in arrival order.
    let order = Arc::new(Mutex::new(Vec::new()));
    let waiter = |name: &'static str| {
        let (m, order) = (m.clone(), Arc::clone(&order));
        tokio::spawn(async move {
            let lease = m.acquire(&config("openai", "gpt")).await.unwrap();
            order.lock().unwrap().push(name);
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(lease);
        })
    };
    let w1 = waiter("w1");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let w2 = waiter("w2");
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(first);
    w1.await.unwrap();
    drop(second);
    w2.await.unwrap();
    assert_eq!(*order.lock().unwrap(), ["w1", "w2"]);
    // Everything was given back: full capacity again without waiting.
    let a = m.acquire(&config("openai", "gpt")).await.unwrap();
    let b = m.acquire(&config("openai", "gpt")).await.unwrap();
    drop((a, b));
}

#[tokio::test]
async fn local_singleton_conflict_busy_and_evict_idle_first() {
    let (m, factory, _) = manager(quick());
    let llama = m.acquire(&config("ollama", "llama")).await.unwrap();
    assert_eq!(
        m.acquire(&config("ollama", "llama"))
            .await
            .err()
            .unwrap()
            .code,
        FailureCode::LocalInstanceBusy
    );
    assert_eq!(
        m.acquire(&config("ollama", "qwen"))
            .await
            .err()
            .unwrap()
            .code,
        FailureCode::LocalProviderConflict
    );
    drop(llama);
    // Idle with a different model: the old one is unloaded before the new one starts.
    let qwen = m.acquire(&config("ollama", "qwen")).await.unwrap();
    assert_eq!(factory.unloaded.load(Ordering::SeqCst), 1);
    assert_eq!(m.pooled(), 1);
    drop(qwen);
}

#[tokio::test]
async fn idle_adapters_are_evicted_after_the_timeout() {
    let (m, factory, _) = manager(ManagerOptions {
        idle_timeout: Duration::from_millis(30),
        ..quick()
    });
    drop(m.acquire(&config("ollama", "llama")).await.unwrap());
    drop(m.acquire(&config("openai", "gpt")).await.unwrap());
    assert_eq!(m.pooled(), 2);
    tokio::time::sleep(Duration::from_millis(50)).await;
    m.evict_idle().await;
    assert_eq!(m.pooled(), 0);
    assert_eq!(factory.unloaded.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn unknown_provider_is_a_clear_error() {
    let (m, _, _) = manager(quick());
    let err = m.acquire(&config("nope", "x")).await.err().unwrap();
    assert_eq!(err.code, FailureCode::UnknownProvider);
    assert!(err.message.contains("nope"));
}

/// A keychain that cannot be reached (no Secret Service in the session).
struct NoKeychain;

impl SecretStore for NoKeychain {
    fn get(&self, _: &str) -> Result<Option<Secret>, SecretError> {
        Err(SecretError::Unavailable {
            reason: "no D-Bus session".into(),
            hint: "Start a Secret Service provider.".into(),
        })
    }
    fn set(&self, _: &str, _: &Secret) -> Result<(), SecretError> {
        Ok(())
    }
    fn delete(&self, _: &str) -> Result<(), SecretError> {
        Ok(())
    }
    fn probe(&self) -> art_types::KeychainStatus {
        art_types::KeychainStatus::Unavailable {
            reason: "no D-Bus session".into(),
            hint: "Start a Secret Service provider.".into(),
        }
    }
}

#[tokio::test]
async fn without_a_keychain_the_environment_variable_is_named_first() {
    let (with_store, factory, _) = manager(quick());
    let entries = with_store.entries();
    let m = ProviderManager::new(entries, factory, Arc::new(NoKeychain), quick());
    let err = m.acquire(&config("openai", "gpt")).await.err().unwrap();
    assert_eq!(err.code, FailureCode::KeychainUnavailable);
    let variable = err.message.find("OPENAI_API_KEY").expect(&err.message);
    let service = err.message.find("Secret Service").expect(&err.message);
    assert!(variable < service, "{}", err.message);
}
