//! `art run --attach FILE`: the files reach the model (a PDF's text with page markers,
//! an image in Ollama's `images`), the run notes what was attached, and a file that
//! cannot be attached stops the run before anything is created, saying why.

use std::path::PathBuf;

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, router, text_reply};
use base64::Engine;

use crate::commands::{art, stderr, stdout};

fn pdf() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/documents/ghostscript-three-pages.pdf")
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdf_and_an_image_go_with_the_question() {
    let plan = r#"{"title": "Report", "intent": "read", "plan": ["answer"], "toolCalls": []}"#;
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "Apples: 1,240 kg.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let image = data.path().join("dot.gif");
    // A 1×1 GIF: sent as the PNG every provider takes.
    let gif = base64::engine::general_purpose::STANDARD
        .decode("R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=")
        .unwrap();
    std::fs::write(&image, gif).unwrap();
    let url = ollama.url();
    let pdf = pdf();
    let out = art(
        data.path().join("data").as_path(),
        &[
            "run",
            "--new",
            "Report",
            "--provider",
            "ollama",
            "--model",
            "llava",
            "--base-url",
            &url,
            "--attach",
            &pdf,
            "--attach",
            image.to_str().unwrap(),
            "What does the report say?",
        ],
    )
    .await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let notes = stderr(&out);
    assert!(
        notes.contains("art: attached ghostscript-three-pages.pdf (3 pages, ~"),
        "{notes}"
    );
    assert!(
        notes.contains("art: attached dot.gif (image, 1×1, 35 bytes)"),
        "{notes}"
    );
    assert!(stdout(&out).contains("Apples: 1,240 kg."));

    let chat = ollama
        .requests()
        .into_iter()
        .find(|r| r.request_line.contains("/api/chat"))
        .unwrap()
        .json();
    let user = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    let text = user["content"].as_str().unwrap();
    assert!(text.contains("--- page 2 ---\nCosts"), "{text}");
    assert!(text.ends_with("What does the report say?"));
    let png = base64::engine::general_purpose::STANDARD
        .decode(user["images"][0].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"), "the GIF went as a PNG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_cannot_be_attached_stops_the_run_before_anything_is_created() {
    let data = tempfile::tempdir().unwrap();
    let empty = data.path().join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let fake_pdf = data.path().join("paper.pdf");
    std::fs::write(&fake_pdf, b"<!doctype html><p>hi</p>").unwrap();
    let store = data.path().join("data");
    for (file, says) in [
        (empty.display().to_string(), "empty.txt is empty"),
        (
            fake_pdf.display().to_string(),
            "paper.pdf is named like a PDF but holds HTML",
        ),
        (
            data.path().join("missing.png").display().to_string(),
            "missing.png could not be read: No such file",
        ),
    ] {
        let out = art(
            &store,
            &[
                "run",
                "--new",
                "Nope",
                "--provider",
                "ollama",
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9",
                "--attach",
                &file,
                "Read this",
            ],
        )
        .await;
        assert!(!out.status.success());
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    let threads = art(&store, &["threads"]).await;
    assert!(!stdout(&threads).contains("Nope"), "no thread was created");
}
