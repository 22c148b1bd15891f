use std::time::Duration;

use art_testkit::fake::FakeServer;
use art_testkit::fake::ollama::{CONTEXT_LENGTH, OllamaLibrary, PullFault};
use art_types::models::{Capability, ModelsProblem};

use super::*;

const GB: u64 = 1 << 30;

async fn serve(library: &OllamaLibrary) -> (FakeServer, OllamaModels) {
    let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
        .await
        .unwrap();
    let models = OllamaModels::new(&format!("{}/v1", server.url())).unwrap();
    (server, models)
}

fn library() -> OllamaLibrary {
    OllamaLibrary::new()
        .installed("llama3.2:3b", &[2 * GB, 1000], &["completion", "tools"])
        .installed("llava", &[4 * GB], &["completion", "vision"])
        .loaded("llama3.2:3b")
        .in_registry(
            "qwen3:0.6b",
            &[500_000_000, 1_000, 200],
            &["completion", "tools", "thinking"],
        )
}

#[tokio::test]
async fn installed_models_come_with_their_details_capabilities_and_whether_loaded() {
    let (_server, models) = serve(&library()).await;
    let list = models.list().await.unwrap();
    let ids: Vec<&str> = list.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["llama3.2:3b", "llava:latest"]);
    let llama = &list[0];
    assert_eq!(llama.size_bytes, 2 * GB + 1000);
    assert_eq!(llama.family.as_deref(), Some("llama"));
    assert_eq!(llama.parameters.as_deref(), Some("3.2B"));
    assert_eq!(llama.quantization.as_deref(), Some("Q4_K_M"));
    assert_eq!(llama.context_length, Some(CONTEXT_LENGTH));
    assert_eq!(llama.can(Capability::Tools), Some(true));
    assert_eq!(llama.can(Capability::Vision), Some(false));
    assert!(llama.loaded);
    assert!(!list[1].loaded);
    assert_eq!(list[1].can(Capability::Vision), Some(true));

    let shown = models.show("llava").await.unwrap();
    assert_eq!(
        shown.id, "llava:latest",
        "found by its name without the tag"
    );
    let loaded = models.loaded().await.unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].id, "llama3.2:3b");
    assert_eq!(loaded[0].context_length, Some(4096));
}

#[tokio::test]
async fn an_ollama_older_than_capabilities_leaves_them_unknown_not_empty() {
    let (_server, models) = serve(&library().without_capabilities()).await;
    let list = models.list().await.unwrap();
    assert!(list.iter().all(|m| m.capabilities.is_none()));
    assert_eq!(list[0].can(Capability::Tools), None);
}

#[tokio::test]
async fn a_pull_reports_every_layer_and_installs_the_model() {
    let library = library();
    let (_server, models) = serve(&library).await;
    let mut seen = Vec::new();
    let pulled = models
        .pull("qwen3:0.6b", PULL_STALL, |p| {
            seen.push((p.completed(), p.total(), p.status.clone()))
        })
        .await
        .unwrap();
    assert!(pulled.done);
    assert_eq!(pulled.layers.len(), 3);
    assert_eq!(pulled.completed(), 500_001_200);
    assert_eq!(pulled.total(), 500_001_200);
    assert_eq!(seen.first().unwrap().2, "pulling manifest");
    // The counts only grow, and the bar reached the whole before the last steps.
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    let statuses: Vec<&str> = seen.iter().rev().take(3).map(|s| s.2.as_str()).collect();
    assert_eq!(
        statuses,
        ["success", "writing manifest", "verifying sha256 digest"]
    );
    assert!(library.names().contains(&"qwen3:0.6b".to_owned()));
    // Pulling what is installed already is a quick pull that succeeds (Ollama checks
    // each layer and downloads nothing).
    assert!(models.pull("qwen3:0.6b", PULL_STALL, |_| {}).await.is_ok());
}

#[tokio::test]
async fn pull_faults_are_said_in_words_a_user_can_act_on() {
    let library = library();
    let (_server, models) = serve(&library).await;
    let nothing = |_: &PullProgress| {};

    match models.pull("no-such-model", PULL_STALL, nothing).await {
        Err(ModelsProblem::NotInLibrary { name }) => assert_eq!(name, "no-such-model"),
        other => panic!("{other:?}"),
    }
    library.fail_next_pull(PullFault::NoSpaceAt(60));
    let mut last = 0;
    match models
        .pull("qwen3:0.6b", PULL_STALL, |p| last = p.completed())
        .await
    {
        Err(ModelsProblem::NoSpace { detail, .. }) => {
            assert!(detail.contains("no space left on device"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        (250_000_000..400_000_000).contains(&last),
        "stopped near 60 %: {last}"
    );
    library.fail_next_pull(PullFault::Offline);
    assert!(matches!(
        models.pull("qwen3:0.6b", PULL_STALL, nothing).await,
        Err(ModelsProblem::Offline { .. })
    ));
    library.fail_next_pull(PullFault::Dies);
    assert!(matches!(
        models.pull("qwen3:0.6b", PULL_STALL, nothing).await,
        Err(ModelsProblem::Interrupted { .. })
    ));
    library.fail_next_pull(PullFault::Stall);
    match models
        .pull("qwen3:0.6b", Duration::from_millis(300), nothing)
        .await
    {
        Err(ModelsProblem::Stalled { name, .. }) => assert_eq!(name, "qwen3:0.6b"),
        other => panic!("{other:?}"),
    }
    assert!(
        !library.names().contains(&"qwen3:0.6b".to_owned()),
        "none installed"
    );
    // A name that is not one never reaches the server.
    assert!(matches!(
        models.pull("llama3; rm -rf ~", PULL_STALL, nothing).await,
        Err(ModelsProblem::BadName { .. })
    ));
}

#[tokio::test]
async fn delete_frees_the_models_size_and_unload_leaves_its_files() {
    let library = library();
    let (server, models) = serve(&library).await;
    models.unload("llama3.2:3b").await.unwrap();
    assert!(library.loaded_names().is_empty());
    assert!(library.names().contains(&"llama3.2:3b".to_owned()));

    assert_eq!(models.delete("llava").await.unwrap(), 4 * GB);
    assert_eq!(library.names(), ["llama3.2:3b"]);
    match models.delete("llava").await {
        Err(ModelsProblem::NotInstalled { name }) => assert_eq!(name, "llava"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        models.show("llava").await,
        Err(ModelsProblem::NotInstalled { .. })
    ));
    assert!(matches!(
        models.unload("llava").await,
        Err(ModelsProblem::NotInstalled { .. })
    ));
    let delete = server
        .requests()
        .into_iter()
        .find(|r| r.request_line.starts_with("DELETE /api/delete"))
        .unwrap();
    assert_eq!(delete.json()["model"], "llava");

    // A loaded model is unloaded, then deleted: its memory goes with its files.
    let fresh = self::library();
    let (server, models) = serve(&fresh).await;
    assert_eq!(models.delete("llama3.2:3b").await.unwrap(), 2 * GB + 1000);
    assert!(fresh.loaded_names().is_empty());
    let asked: Vec<String> = server
        .requests()
        .into_iter()
        .map(|r| r.request_line)
        .filter(|l| l.contains("/api/generate") || l.contains("/api/delete"))
        .collect();
    assert_eq!(
        asked,
        ["POST /api/generate HTTP/1.1", "DELETE /api/delete HTTP/1.1"]
    );
}

#[tokio::test]
async fn a_server_that_is_not_there_is_said_with_its_address() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let models = OllamaModels::new(&format!("http://127.0.0.1:{port}")).unwrap();
    match models.list().await {
        Err(ModelsProblem::Unreachable { base_url, .. }) => {
            assert_eq!(base_url, format!("http://127.0.0.1:{port}"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn ollama_errors_map_to_problems() {
    let p = |status, message, asking| problem("m", status, message, asking);
    assert!(matches!(
        p(
            500,
            "pull model manifest: file does not exist",
            Asking::Library
        ),
        ModelsProblem::NotInLibrary { .. }
    ));
    assert!(matches!(
        p(404, "model 'm' not found", Asking::Installed),
        ModelsProblem::NotInstalled { .. }
    ));
    assert!(matches!(
        p(
            0,
            "write /x-partial: no space left on device",
            Asking::Library
        ),
        ModelsProblem::NoSpace { .. }
    ));
    assert!(matches!(
        p(500, "something else", Asking::Library),
        ModelsProblem::Server { status: 500, .. }
    ));
}

/// A server that is not Ollama (llama.cpp's: every `/api/…` path a 404 with its own
/// error shape; a web page: HTML): every question about models says the server does not
/// speak Ollama's model API — never `"" is not installed`, never the library's fault.
#[tokio::test]
async fn a_server_that_is_not_ollama_is_said_to_be_so() {
    use art_testkit::fake::{Reply, Router};
    let llama_cpp: Router = Box::new(|request| {
        request.request_line.contains(" /api/").then(|| {
            Reply::error(
                404,
                r#"{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}"#,
            )
        })
    });
    let html: Router = Box::new(|request| {
        request.request_line.contains(" /api/").then(|| {
            Reply::bytes(200, b"<!doctype html><title>Router admin</title>", 1)
                .header("Content-Type", "text/html")
        })
    });
    for router in [llama_cpp, html] {
        let server = FakeServer::start_at(0, Some(router), Vec::new())
            .await
            .unwrap();
        let models = OllamaModels::new(&server.url()).unwrap();
        let not_ollama = |problem: ModelsProblem| {
            assert!(
                matches!(problem, ModelsProblem::NotOllama { .. }),
                "{problem:?}"
            );
            assert!(
                problem
                    .to_string()
                    .contains("does not speak Ollama's model API"),
                "{problem}"
            );
        };
        not_ollama(models.list().await.unwrap_err());
        not_ollama(models.loaded().await.unwrap_err());
        not_ollama(models.show("llama3.2").await.unwrap_err());
        not_ollama(models.delete("llama3.2").await.unwrap_err());
        not_ollama(models.unload("llama3.2").await.unwrap_err());
        not_ollama(
            models
                .pull("llama3.2", Duration::from_secs(5), |_| {})
                .await
                .unwrap_err(),
        );
    }
}
