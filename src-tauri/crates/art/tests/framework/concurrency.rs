//! Many runs at once through the whole stack (provider manager → adapters → HTTP → the
//! fake server; real SQLite): 20 threads asking an API provider at the same time stay
//! within its limit of parallel calls (the rest wait their turn and still finish), and
//! each thread gets only its own answer; a second local model while Ollama is busy with
//! another is refused with a message that says why.

use art_testkit::framework::adapters as wire;

use std::sync::Arc;
use std::time::Duration;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::context::MessageOptions;
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::secrets::{MemoryStore, Secret, SecretStore};
use art::storage::sqlite::SqliteStorage;
use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};
use art_types::{FailureCode, MessageRole, RunStatus};

/// Parallel calls allowed per API provider in these tests.
const LIMIT: usize = 5;
const THREADS: usize = 20;

/// An instance over a SQLite file in `dir` with the built-in providers (OpenAI's key
/// stored), [`LIMIT`] calls at once per API provider.
pub(crate) fn instance(dir: &tempfile::TempDir) -> ArtInstance {
    let secrets = Arc::new(MemoryStore::new());
    secrets
        .set("openai", &Secret::new("sk-concurrency-key-0000000"))
        .unwrap();
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory::default()),
        secrets,
        ManagerOptions {
            max_parallel_api: LIMIT,
            queue_timeout: Duration::from_secs(30),
            ..ManagerOptions::default()
        },
    ));
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, providers).build().unwrap()
}

/// The tag (`Tag-07`) a request's question carries.
fn tag_of(body: &str) -> Option<String> {
    let at = body.find("Tag-")?;
    body.get(at..at + 6).map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_threads_stay_within_the_provider_limit_and_keep_their_own_answers() {
    // Every call is answered with its question's tag, a word at a time (~0.2 s).
    let answer = |tag: &str| format!("{tag} {tag} {tag} {tag} {tag} {tag}");
    let server = FakeServer::start_at(
        0,
        Some(Box::new(move |request| {
            let tag = tag_of(&request.body)?;
            let text = format!("{tag} {tag} {tag} {tag} {tag} {tag}");
            Some(text_reply(Protocol::OpenAi, &text, 64).delayed(Duration::from_millis(15)))
        })),
        Vec::new(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let art = Arc::new(instance(&dir));
    let base_url = format!("{}/v1", server.url());
    let mut threads = Vec::new();
    for _ in 0..THREADS {
        threads.push(wire::thread_at(&art, "openai", "gpt-test", &base_url, &[]).await);
    }
    let runs = threads.iter().enumerate().map(|(i, thread)| {
        let art = Arc::clone(&art);
        let props = wire::ask(thread, &format!("Say Tag-{i:02}"));
        tokio::spawn(async move { art.process(props, CancellationToken::new()).await })
    });
    let outs = futures::future::join_all(runs).await;
    for (i, out) in outs.into_iter().enumerate() {
        let out = out.unwrap().unwrap();
        assert_eq!(
            out.metadata.status,
            RunStatus::Success,
            "{:?}",
            out.metadata.error
        );
        let tag = format!("Tag-{i:02}");
        assert_eq!(
            out.response.content,
            answer(&tag),
            "thread {i} got another's tokens"
        );
        // What is stored is that answer too.
        let history = art
            .conversation
            .messages(&threads[i], MessageOptions::default())
            .await
            .unwrap();
        let ai = history.iter().find(|m| m.role == MessageRole::Ai).unwrap();
        assert_eq!(ai.content, answer(&tag));
    }
    // One call a run (no tools: the answer at once), never more than the limit at once —
    // and the limit was reached: the others queued.
    assert_eq!(server.requests().len(), THREADS);
    assert_eq!(server.most_concurrent(), LIMIT, "calls in flight at most");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_local_model_while_ollama_is_busy_is_refused_clearly() {
    let counting: String = (1..=40).map(|n| format!("{n} ")).collect();
    // No tools: the run's one call is its answer.
    let server = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![text_reply(Protocol::Ollama, &counting, 32).delayed(Duration::from_millis(20))],
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let art = Arc::new(instance(&dir));
    let busy = wire::thread_at(&art, "ollama", MODEL, &server.url(), &[]).await;
    let other = wire::thread_at(&art, "ollama", "another-model", &server.url(), &[]).await;
    let first = {
        let art = Arc::clone(&art);
        tokio::spawn(async move {
            art.process(wire::ask(&busy, "Count to 40"), CancellationToken::new())
                .await
        })
    };
    // Wait until the first run streams its answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server
        .requests()
        .iter()
        .filter(|r| r.request_line.starts_with("POST /api/chat"))
        .count()
        < 1
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first run never streamed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = art
        .process(wire::ask(&other, "Hello"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(refused.metadata.status, RunStatus::Error);
    let error = refused.metadata.error.unwrap();
    assert_eq!(error.code, FailureCode::LocalProviderConflict);
    assert!(
        error.message.contains(MODEL),
        "names the busy model: {}",
        error.message
    );
    // The busy run is unharmed.
    let first = first.await.unwrap().unwrap();
    assert_eq!(
        first.metadata.status,
        RunStatus::Success,
        "{:?}",
        first.metadata.error
    );
    assert_eq!(first.response.content, counting.trim());
    // The question of the refused run is kept; the thread stays usable.
    let history = art
        .conversation
        .messages(&other, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(history.first().map(|m| m.role), Some(MessageRole::User));
}
