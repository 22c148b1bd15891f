//! `art models …` against a fake Ollama library over TCP (found through OLLAMA_HOST, as
//! a user's would be): list with capabilities, pull with progress, a pull that fails,
//! rm (refused without --yes when nobody can answer), ps and unload, an absent server.

use std::path::Path;
use std::process::Output;

use art_testkit::fake::FakeServer;
use art_testkit::fake::ollama::{OllamaLibrary, PullFault};

use crate::commands::{stderr, stdout};

async fn art_models(dir: &Path, ollama: &str, args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
    command
        .arg("--data-dir")
        .arg(dir)
        .arg("models")
        .args(args)
        .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB)
        .env("OLLAMA_HOST", ollama)
        .stdin(std::process::Stdio::null());
    tokio::task::spawn_blocking(move || command.output().expect("art runs"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_are_listed_pulled_unloaded_and_deleted() {
    let library = OllamaLibrary::new()
        .installed("llama3.2:3b", &[2_019_393_189], &["completion", "tools"])
        .loaded("llama3.2:3b")
        .in_registry(
            "gemma3:4b",
            &[3_300_000_000, 5_000],
            &["completion", "vision"],
        );
    let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
        .await
        .unwrap();
    let url = server.url();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("data");

    let out = art_models(&dir, &url, &["list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let row = text.lines().find(|l| l.starts_with("llama3.2:3b")).unwrap();
    for shown in ["2.0 GB", "3.2B", "Q4_K_M", "128k", "chat, tools", "yes"] {
        assert!(row.contains(shown), "{shown} in {row}");
    }

    let out = art_models(&dir, &url, &["pull", "gemma3:4b"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pulled gemma3:4b (3.3 GB)"),
        "{}",
        stderr(&out)
    );
    assert!(library.names().contains(&"gemma3:4b".to_owned()));
    let out = art_models(&dir, &url, &["show", "gemma3:4b"]).await;
    assert!(
        stdout(&out).contains("can:           chat, vision"),
        "{}",
        stdout(&out)
    );

    library.fail_next_pull(PullFault::NoSpaceAt(50));
    let out = art_models(&dir, &url, &["pull", "gemma3:4b"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not enough disk space for gemma3:4b"),
        "{}",
        stderr(&out)
    );
    let out = art_models(&dir, &url, &["pull", "nope:1b"]).await;
    assert!(
        stderr(&out).contains("the Ollama library has no model \"nope:1b\""),
        "{}",
        stderr(&out)
    );
    let out = art_models(&dir, &url, &["pull", "a b"]).await;
    assert!(
        stderr(&out).contains("is not a model name"),
        "{}",
        stderr(&out)
    );

    let out = art_models(&dir, &url, &["ps"]).await;
    assert!(
        stdout(&out).lines().any(|l| l.starts_with("llama3.2:3b")),
        "{}",
        stdout(&out)
    );
    let out = art_models(&dir, &url, &["unload", "llama3.2:3b"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let out = art_models(&dir, &url, &["ps"]).await;
    assert!(
        stdout(&out).contains("No model is loaded"),
        "{}",
        stdout(&out)
    );

    // Nobody at the terminal to confirm: refused, the model kept.
    let out = art_models(&dir, &url, &["rm", "gemma3:4b"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("without --yes"), "{}", stderr(&out));
    assert!(library.names().contains(&"gemma3:4b".to_owned()));
    let out = art_models(&dir, &url, &["rm", "--yes", "gemma3:4b"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Deleted gemma3:4b: up to 3.3 GB freed."),
        "{}",
        stdout(&out)
    );
    assert_eq!(library.names(), ["llama3.2:3b"]);
    let out = art_models(&dir, &url, &["rm", "--yes", "gemma3:4b"]).await;
    assert!(
        stderr(&out).contains("\"gemma3:4b\" is not installed"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_library_suggests_first_models_and_an_absent_server_is_named() {
    let library = OllamaLibrary::new();
    let server = FakeServer::start_at(0, Some(library.router()), Vec::new())
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("data");
    let out = art_models(&dir, &server.url(), &["list"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("art models pull llama3.2:3b"),
        "{}",
        stdout(&out)
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let absent = format!("127.0.0.1:{port}");
    let out = art_models(&dir, &absent, &["list"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "Ollama is not answering at http://127.0.0.1:{port}"
        )),
        "{}",
        stderr(&out)
    );
}
