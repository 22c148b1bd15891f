//! A thread on a real provider over HTTP (the testkit's fake server) with the
//! calculator, for the step agent's tests: ask, read the calls the model got, fold the
//! run's observations, reopen the database as after a restart.

use art_testkit::framework::adapters as wire;

use std::path::Path;
use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::observation::ObservationQuery;
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::secrets::{MemoryStore, Secret, SecretStore};
use art::storage::sqlite::SqliteStorage;
use art_testkit::fake::scripts::Protocol;
use art_testkit::fake::{FakeServer, Recorded, Reply};
use art_types::AgentFinalResponse;
use art_types::record::StepStatus;
use art_types::record::view::RunView;

/// Every wire protocol, with a provider that speaks it and its base path.
pub const WIRES: [(&str, Protocol, &str); 4] = [
    ("openai", Protocol::OpenAi, "/v1"),
    ("anthropic", Protocol::Anthropic, "/v1"),
    ("gemini", Protocol::Gemini, "/v1beta"),
    ("ollama", Protocol::Ollama, ""),
];

/// A run against `replies` on `provider`, the thread set up by `configure`.
pub struct Stepped {
    pub art: ArtInstance,
    pub thread: String,
    pub server: FakeServer,
    _dir: tempfile::TempDir,
}

impl Stepped {
    pub async fn start(
        (provider, _, path): (&str, Protocol, &str),
        replies: Vec<Reply>,
        configure: impl FnOnce(&mut art_types::ThreadConfig),
    ) -> Self {
        let server = FakeServer::start(replies).await;
        let dir = tempfile::tempdir().unwrap();
        let art = instance(dir.path(), provider);
        let base_url = format!("{}{path}", server.url());
        let thread =
            wire::thread_at(&art, provider, "fake-model", &base_url, &["calculator"]).await;
        let mut config = art.state.load_thread_context(&thread).await.unwrap().config;
        configure(&mut config);
        art.state.set_thread_config(&thread, &config).await.unwrap();
        Self {
            art,
            thread,
            server,
            _dir: dir,
        }
    }

    pub async fn ask(&self, question: &str) -> AgentFinalResponse {
        let props = wire::ask(&self.thread, question);
        self.art
            .process(props, CancellationToken::new())
            .await
            .unwrap()
    }

    /// The model calls, in order (not Ollama's questions about its window).
    pub fn calls(&self) -> Vec<Recorded> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| {
                !r.request_line.contains("/api/ps") && !r.request_line.contains("/api/show")
            })
            .collect()
    }

    /// The same database and provider, opened anew (as after a restart).
    pub fn reopen(&mut self, provider: &str) {
        self.art = instance(self._dir.path(), provider);
    }

    /// The run as people see it: the shared fold of its observations.
    pub async fn view(&self, out: &AgentFinalResponse) -> RunView {
        let trace = &out.metadata.trace_id;
        let observations = self
            .art
            .observations
            .query(&ObservationQuery {
                trace_ids: vec![trace.clone()],
                ..Default::default()
            })
            .await
            .unwrap();
        RunView::of(&self.thread, trace, &observations)
    }
}

/// The steps of a run's plan with their status.
pub fn statuses(view: &RunView) -> Vec<(String, StepStatus)> {
    let plan = view.plan.as_ref().expect("a plan");
    plan.steps
        .iter()
        .map(|s| (s.description.clone(), s.status))
        .collect()
}

fn instance(dir: &Path, provider: &str) -> ArtInstance {
    let secrets = Arc::new(MemoryStore::new());
    secrets.set(provider, &Secret::new("key-steps")).unwrap();
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory::default()),
        secrets,
        ManagerOptions::default(),
    ));
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    ArtInstance::builder(storage, providers).build().unwrap()
}
