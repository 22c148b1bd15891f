//! `art run --attach FILE`: the files reach the model (a PDF's text with page markers,
//! an image in Ollama's `images`), the run notes what was attached, and a file that
//! cannot be attached stops the run before anything is created, saying why.

use std::path::PathBuf;

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, router, text_reply};
use base64::Engine;

use crate::commands::{art, stderr, stdout};

/// The path of `name` in the test documents.
fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/documents")
        .join(name)
        .display()
        .to_string()
}

fn pdf() -> String {
    fixture("ghostscript-three-pages.pdf")
}

/// A 1×1 GIF written into `dir` (sent as the PNG every provider takes).
fn dot_gif(dir: &std::path::Path) -> PathBuf {
    let image = dir.join("dot.gif");
    let gif = base64::engine::general_purpose::STANDARD
        .decode("R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=")
        .unwrap();
    std::fs::write(&image, gif).unwrap();
    image
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdf_and_an_image_go_with_the_question() {
    // No tools: one call, the answer's.
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![text_reply(Protocol::Ollama, "Apples: 1,240 kg.", 4)],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let image = dot_gif(data.path());
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

/// A model its server says sees images can still be marked as not seeing them (a remote
/// provider is never asked): `art config --images no` makes the next question with an
/// image refused before anything is sent; `--images auto` hands the word back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_off_in_the_settings_refuses_an_image_before_it_is_sent() {
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![text_reply(Protocol::Ollama, "Hello.", 2)],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let image = dot_gif(data.path());
    let url = ollama.url();
    let made = art(
        &home,
        &[
            "run",
            "--new",
            "Pictures",
            "--provider",
            "ollama",
            "--model",
            "llava",
            "--base-url",
            &url,
            "Hello",
        ],
    )
    .await;
    assert!(made.status.success(), "{}", stderr(&made));
    let listed = stdout(&art(&home, &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();

    let shown = stdout(&art(&home, &["config", "--thread", &thread]).await);
    assert!(
        shown.contains("images          as the model says"),
        "{shown}"
    );
    let off = art(&home, &["config", "--thread", &thread, "--images", "no"]).await;
    assert!(off.status.success(), "{}", stderr(&off));
    assert!(
        stdout(&off).contains("images          not seen: questions with images are refused"),
        "{}",
        stdout(&off)
    );

    let refused = art(
        &home,
        &[
            "run",
            "--thread",
            &thread,
            "--attach",
            image.to_str().unwrap(),
            "What is this?",
        ],
    )
    .await;
    assert!(!refused.status.success());
    let said = stderr(&refused);
    assert!(said.contains("does not see images"), "{said}");
    let chats = |server: &FakeServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.request_line.contains("/api/chat"))
            .count()
    };
    // The first question's one call (no tools: no plan); the image question not sent.
    assert_eq!(chats(&ollama), 1, "the image question was not sent");

    let back = art(&home, &["config", "--thread", &thread, "--images", "auto"]).await;
    assert!(
        stdout(&back).contains("images          as the model says"),
        "{}",
        stdout(&back)
    );
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
        // A PDF its reader panics on (found by fuzzing): refused, no panic message.
        (
            fixture("fuzzed-cut-utf8.pdf"),
            "fuzzed-cut-utf8.pdf could not be read: its reader failed on it",
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
        let said = stderr(&out);
        assert!(said.contains(says), "{said}");
        assert!(!said.contains("panicked"), "{said}");
    }
    let threads = art(&store, &["threads"]).await;
    assert!(!stdout(&threads).contains("Nope"), "no thread was created");
}

/// `art run --attach` killed with SIGKILL at a random moment while it reads, extracts and
/// stores its files: afterwards the question and all its files are there, or the
/// question is not (stray files go when the store next opens; none is half written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_attaching_leaves_the_question_and_its_files_both_or_neither() {
    use std::process::{Command, Stdio};

    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        (0..40)
            .map(|_| {
                text_reply(
                    Protocol::Ollama,
                    "{\"title\":\"t\",\"intent\":\"i\",\"plan\":[],\"toolCalls\":[]}",
                    8,
                )
            })
            .collect(),
    )
    .await
    .unwrap();
    let files = tempfile::tempdir().unwrap();
    // A large image (a few MB to decode, scale and write) and the 100-page PDF.
    let big = files.path().join("big.png");
    let image = image::RgbImage::from_fn(3000, 2000, |x, y| {
        image::Rgb([(x ^ y) as u8, (x * 3) as u8, (y * 7) as u8])
    });
    image.save(&big).unwrap();
    let pdf = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/documents/ghostscript-hundred-pages.pdf");
    let url = ollama.url();
    let run = |data: &std::path::Path| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_art"));
        command
            .arg("--data-dir")
            .arg(data)
            .args([
                "run",
                "--new",
                "Crash",
                "--provider",
                "ollama",
                "--model",
                "llava",
                "--base-url",
                &url,
                "--attach",
            ])
            .arg(&big)
            .arg("--attach")
            .arg(&pdf)
            .arg("What is this?")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    };
    // How long a whole run takes here: the kills are spread over it. (It ends refused:
    // the 100 pages do not fit the fake model's window; the question is kept, failed,
    // with its files.)
    let whole = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    run(whole.path()).status().unwrap();
    let span = started.elapsed();
    let mut seen = (0, 0);
    for trial in 0..10u32 {
        let data = tempfile::tempdir().unwrap();
        let mut child = run(data.path()).spawn().unwrap();
        // From a third of the way (reading the files) to just past the end (the question
        // and its files committed), where the files' writes and the question's meet.
        tokio::time::sleep(span * (5 + trial) / 14).await;
        child.kill().unwrap();
        child.wait().unwrap();

        let dir = art::paths::DataDir::resolve_from(Some(data.path().to_path_buf())).unwrap();
        let stack = art::standard::Standard::open(&dir).unwrap();
        let store = stack.art.attachments.clone().unwrap();
        let threads = stack.art.conversation.list_threads().await.unwrap();
        let mut questions = Vec::new();
        for thread in &threads {
            let messages = stack
                .art
                .conversation
                .messages(&thread.thread_id, Default::default())
                .await
                .unwrap();
            questions.extend(
                messages
                    .into_iter()
                    .filter(|m| m.role == art_types::MessageRole::User),
            );
        }
        match questions.as_slice() {
            [] => seen.0 += 1,
            [question] => {
                seen.1 += 1;
                assert_eq!(question.attachments.len(), 2, "trial {trial}");
                for attachment in &question.attachments {
                    for id in art::attachments::Attachments::blob_ids(attachment) {
                        assert!(store.store().get(&id).is_ok(), "trial {trial}: {id} whole");
                    }
                }
            }
            more => panic!("trial {trial}: {} questions", more.len()),
        }
        // No temporary file is left once the store has opened.
        let partial = art_testkit::fixtures::files_under(&data.path().join("attachments"))
            .into_iter()
            .filter(|p| p.to_string_lossy().ends_with(".partial"))
            .count();
        assert_eq!(partial, 0, "trial {trial}");
    }
    eprintln!("killed before the question: {}, after: {}", seen.0, seen.1);
}
