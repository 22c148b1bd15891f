//! Questions with files, through the real stack to fake servers over TCP: the image
//! reaches each protocol in its own form (the bytes sent are the store's, base64), a
//! PDF's text reaches it with its name and page markers, and the question keeps its
//! attachments. A model that does not see images and a document too long for the
//! window are refused before anything is sent.

use std::path::PathBuf;
use std::sync::Arc;

use art::ArtInstance;
use art::agent::CancellationToken;
use art::attachments::{Attachments, BlobStore};
use art::context::MessageOptions;
use art::export::{Format, Options, Redactor, Scope};
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::secrets::{MemoryStore, Secret, SecretStore};
use art::storage::sqlite::SqliteStorage;
use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{MODEL, Protocol, text_reply};
use art_testkit::framework::adapters as wire;
use art_types::{Attachment, AttachmentKind, FailureCode, MessageRole, MessageStatus, RunStatus};
use base64::Engine;
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures/documents")
        .join(name)
}

/// A 40×30 PNG.
fn png() -> Vec<u8> {
    let image =
        image::RgbImage::from_fn(40, 30, |x, y| image::Rgb([x as u8 * 6, y as u8 * 8, 120]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

/// An instance with an attachment store in `dir`, and a thread on `provider`/`model`.
async fn thread(
    dir: &tempfile::TempDir,
    provider: &str,
    model: &str,
    base_url: &str,
) -> (ArtInstance, Arc<Attachments>, String) {
    let secrets = Arc::new(MemoryStore::new());
    secrets.set(provider, &Secret::new("sk-attach")).unwrap();
    let (art, store) = instance(dir.path(), secrets);
    let thread = wire::thread_at(&art, provider, model, base_url, &[]).await;
    (art, store, thread)
}

/// An instance over `dir` with its own attachment store, the built-in providers and
/// `secrets`.
fn instance(dir: &std::path::Path, secrets: Arc<MemoryStore>) -> (ArtInstance, Arc<Attachments>) {
    let storage = Arc::new(SqliteStorage::open(dir.join("art.sqlite3")).unwrap());
    let store =
        Arc::new(Attachments::open(dir.join("attachments"), BlobStore::DEFAULT_LIMIT).unwrap());
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory::default()),
        secrets,
        ManagerOptions::default(),
    ));
    let art = ArtInstance::builder(storage, providers)
        .attachments(Arc::clone(&store))
        .build()
        .unwrap();
    (art, store)
}

/// The last user message of a recorded chat request, whatever the protocol.
fn last_user(protocol: Protocol, body: &Value) -> Value {
    let list = match protocol {
        Protocol::Gemini => &body["contents"],
        _ => &body["messages"],
    };
    list.as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap()
}

/// The image's base64 and the text of a user message, read in `protocol`'s own form.
fn image_and_text(protocol: Protocol, user: &Value) -> (String, String, String) {
    let parts = |key: &str| user[key].as_array().cloned().unwrap_or_default();
    match protocol {
        Protocol::OpenAi => {
            let content = parts("content");
            let url = content[1]["image_url"]["url"].as_str().unwrap();
            let (mime, data) = url
                .strip_prefix("data:")
                .unwrap()
                .split_once(";base64,")
                .unwrap();
            let text = content[0]["text"].as_str().unwrap();
            (mime.into(), data.into(), text.into())
        }
        Protocol::Anthropic => {
            let content = parts("content");
            let source = &content[0]["source"];
            assert_eq!(source["type"], "base64");
            let text = content[1]["text"].as_str().unwrap();
            let mime = source["media_type"].as_str().unwrap();
            (
                mime.into(),
                source["data"].as_str().unwrap().into(),
                text.into(),
            )
        }
        Protocol::Gemini => {
            let content = parts("parts");
            let inline = &content[0]["inline_data"];
            let text = content[1]["text"].as_str().unwrap();
            let mime = inline["mime_type"].as_str().unwrap();
            (
                mime.into(),
                inline["data"].as_str().unwrap().into(),
                text.into(),
            )
        }
        Protocol::Ollama => {
            let data = user["images"][0].as_str().unwrap();
            (
                "image/png".into(),
                data.into(),
                user["content"].as_str().unwrap().into(),
            )
        }
    }
}

#[tokio::test]
async fn an_image_and_a_pdf_reach_every_protocol_in_its_own_form() {
    for (provider, protocol, path, model) in [
        ("openai", Protocol::OpenAi, "/v1", MODEL),
        ("anthropic", Protocol::Anthropic, "/v1", MODEL),
        ("gemini", Protocol::Gemini, "/v1beta", MODEL),
        ("ollama", Protocol::Ollama, "", "llava:7b"),
    ] {
        // No tools: the answer's one call.
        let server = FakeServer::start(vec![text_reply(
            protocol,
            "A gradient; apples 1,240 kg.",
            64,
        )])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let base = format!("{}{path}", server.url());
        let (art, store, thread) = thread(&dir, provider, model, &base).await;
        let bytes = png();
        let image = store.add_bytes("gradient.png", &bytes).unwrap();
        let pdf = store
            .add_file(&fixture("ghostscript-three-pages.pdf"))
            .unwrap();
        let mut props = wire::ask(&thread, "What do these show?");
        props.attachments = vec![image.clone(), pdf.clone()];
        let out = art.process(props, CancellationToken::new()).await.unwrap();
        assert_eq!(
            out.metadata.status,
            RunStatus::Success,
            "{provider}: {:?}",
            out.metadata.error
        );

        let chats: Vec<Value> = server
            .requests()
            .iter()
            .filter(|r| {
                r.request_line.contains("chat")
                    || r.request_line.contains("messages")
                    || r.request_line.contains("Generate")
            })
            .map(|r| r.json())
            .collect();
        assert_eq!(chats.len(), 1, "{provider}: the answer's one call");
        for body in &chats {
            let user = last_user(protocol, body);
            let (mime, data, text) = image_and_text(protocol, &user);
            assert_eq!(mime, "image/png", "{provider}");
            let sent = base64::engine::general_purpose::STANDARD
                .decode(&data)
                .unwrap();
            assert_eq!(sent, bytes, "{provider}: the image's own bytes");
            assert!(
                text.starts_with(
                    "<document name=\"ghostscript-three-pages.pdf\">\n--- page 1 ---\n"
                ),
                "{provider}: {text}"
            );
            assert!(text.contains("--- page 3 ---"), "{provider}");
            assert!(text.contains("1,240 kilograms of apples"), "{provider}");
            assert!(text.ends_with("What do these show?"), "{provider}: {text}");
        }

        // The question keeps its attachments, as facts: no bytes in the database.
        let messages = art
            .conversation
            .path(&thread, MessageOptions::default())
            .await
            .unwrap();
        let question = messages
            .iter()
            .find(|m| m.role == MessageRole::User)
            .unwrap();
        assert_eq!(question.content, "What do these show?");
        assert_eq!(question.attachments, vec![image, pdf]);
        drop(art);
        let database = std::fs::read(dir.path().join("art.sqlite3")).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert!(
            !database.windows(40).any(|w| w == &b64.as_bytes()[..40]),
            "{provider}: no base64 in the database"
        );
    }
}

#[tokio::test]
async fn an_image_for_a_model_without_vision_is_refused_before_anything_is_sent() {
    let server = FakeServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let (art, store, thread) = thread(&dir, "ollama", MODEL, &server.url()).await;
    let mut props = wire::ask(&thread, "What is this?");
    props.attachments = vec![store.add_bytes("dot.png", &png()).unwrap()];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    let error = out.metadata.error.unwrap();
    assert_eq!(error.code, FailureCode::AttachmentRefused);
    assert_eq!(
        error.message,
        format!(
            "{MODEL} does not see images, so dot.png would not reach it: choose a model with vision, or remove the image"
        )
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.request_line.contains("chat")),
        "nothing sent to the model"
    );
    // The question is kept, with its image, marked as not answered (Retry after a change
    // of model asks it again).
    let messages = art
        .conversation
        .path(&thread, MessageOptions::default())
        .await
        .unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].status, MessageStatus::Failed);
    assert_eq!(messages[0].attachments.len(), 1);
}

#[tokio::test]
async fn a_document_longer_than_the_window_is_refused_with_the_numbers() {
    let server = FakeServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let (art, store, thread) = thread(&dir, "ollama", MODEL, &server.url()).await;
    // The fake Ollama model reads 32,768 tokens; this is ~60,000.
    let long = "The orchard's ledger, line after line. ".repeat(4_700);
    let document = store.add_bytes("ledger.txt", long.as_bytes()).unwrap();
    let AttachmentKind::Document { tokens, .. } = document.kind else {
        panic!()
    };
    let mut props = wire::ask(&thread, "Summarise it.");
    props.attachments = vec![document];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    let error = out.metadata.error.unwrap();
    // Its own code: the app offers to add the document to the thread's knowledge.
    assert_eq!(error.code, FailureCode::DocumentTooLong);
    let grouped = |n: u64| {
        let s = n.to_string();
        let (head, tail) = s.split_at(s.len() - 3);
        format!("{head},{tail}")
    };
    assert!(
        error.message.starts_with(&format!(
            "ledger.txt is ~{} tokens, the model reads 32,768: add it to the thread's knowledge instead",
            grouped(tokens)
        )),
        "{}",
        error.message
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.request_line.contains("chat"))
    );
}

#[tokio::test]
async fn a_thread_whose_model_is_said_not_to_see_images_refuses_them_on_any_provider() {
    let server = FakeServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let base = format!("{}/v1", server.url());
    let (art, store, thread) = thread(&dir, "deepseek", "deepseek-chat", &base).await;
    let mut config = art.state.thread_config(&thread).await.unwrap();
    config
        .provider_config
        .adapter_options
        .insert(art_types::provider::VISION_OPTION.into(), json!(false));
    art.state.set_thread_config(&thread, &config).await.unwrap();
    let mut props = wire::ask(&thread, "What is this?");
    props.attachments = vec![store.add_bytes("dot.png", &png()).unwrap()];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.metadata.error.unwrap().code,
        FailureCode::AttachmentRefused
    );
    assert!(server.requests().is_empty(), "nothing sent");
}

/// An attachment that names bytes the store does not have cannot be asked about.
#[tokio::test]
async fn an_attachment_whose_bytes_are_gone_is_refused_by_name() {
    let server = FakeServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let (art, _store, thread) = thread(&dir, "ollama", "llava", &server.url()).await;
    let ghost = Attachment {
        id: "e".repeat(64),
        name: "ghost.png".into(),
        mime: "image/png".into(),
        size: 3,
        kind: AttachmentKind::Image {
            width: 1,
            height: 1,
            sent: None,
        },
    };
    let mut props = wire::ask(&thread, "And this?");
    props.attachments = vec![ghost];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    let error = out.metadata.error.unwrap();
    assert_eq!(error.code, FailureCode::AttachmentRefused);
    assert_eq!(
        error.message,
        "ghost.png is no longer in the attachment store"
    );
}

/// A question carrying `attachments`, stored in `thread`.
async fn question_with(art: &ArtInstance, thread: &str, attachments: Vec<Attachment>) {
    let message = art_types::ConversationMessage {
        message_id: art::clock::new_id(),
        thread_id: thread.into(),
        role: MessageRole::User,
        content: "Look".into(),
        timestamp: art::clock::now_ms(),
        status: MessageStatus::Complete,
        parent_id: None,
        metadata: Value::Null,
        attachments,
    };
    art.conversation
        .add_messages(thread, std::slice::from_ref(&message))
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_thread_frees_the_files_only_it_used() {
    let dir = tempfile::tempdir().unwrap();
    let (art, store, first) = thread(&dir, "ollama", "llava", "http://127.0.0.1:9").await;
    let second = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    let shared = store.add_bytes("dot.png", &png()).unwrap();
    let own = store
        .add_file(&fixture("ghostscript-three-pages.pdf"))
        .unwrap();
    question_with(&art, &first, vec![shared.clone(), own.clone()]).await;
    question_with(&art, &second, vec![shared.clone()]).await;
    let stored = || store.store().ids().unwrap().len();
    assert_eq!(stored(), 3, "the image, the PDF and its text");

    assert_eq!(
        art.delete_thread(&first).await.unwrap(),
        2,
        "the PDF and its text"
    );
    assert_eq!(stored(), 1);
    assert!(
        store.original(&shared).is_ok(),
        "the other thread's image stays"
    );
    assert!(store.text(&own).is_err());

    assert_eq!(art.delete_thread(&second).await.unwrap(), 1);
    assert_eq!(stored(), 0);
}

/// An instance over `dir` with its own attachment store and no keys.
fn bare(dir: &std::path::Path) -> (ArtInstance, Arc<Attachments>) {
    instance(dir, Arc::new(MemoryStore::new()))
}

async fn export(art: &ArtInstance, scope: &Scope, format: Format, to: &std::path::Path) {
    let redactor = Redactor::new(Vec::new());
    art::export::export_to_file(
        art,
        scope,
        format,
        Options {
            include_content: true,
            include_thinking: false,
        },
        &redactor,
        to,
        &mut |_| {},
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_carry_attachments_and_import_brings_them_back_byte_for_byte() {
    let from = tempfile::tempdir().unwrap();
    let (art, store) = bare(from.path());
    let thread = art
        .conversation
        .create_thread(Some("Files"))
        .await
        .unwrap()
        .thread_id;
    // A photo big enough to be sent as a scaled copy (three files: original, copy, text).
    let photo = {
        let image = image::RgbImage::from_fn(2000, 1500, |x, y| {
            image::Rgb([(x % 251) as u8, (y % 241) as u8, 7])
        });
        let mut out = Vec::new();
        image::DynamicImage::ImageRgb8(image)
            .write_to(std::io::Cursor::new(&mut out), image::ImageFormat::Jpeg)
            .unwrap();
        out
    };
    let image = store.add_bytes("photo.jpg", &photo).unwrap();
    let pdf = store
        .add_file(&fixture("ghostscript-three-pages.pdf"))
        .unwrap();
    question_with(&art, &thread, vec![image.clone(), pdf.clone()]).await;
    let files = tempfile::tempdir().unwrap();
    let scope = Scope::Thread(thread.clone());

    let jsonl = files.path().join("files.jsonl");
    export(&art, &scope, Format::Jsonl, &jsonl).await;
    let text = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("{\"type\":\"blob\""))
            .count(),
        4,
        "original, copy, PDF, text"
    );
    assert!(text.lines().last().unwrap().contains("\"blobs\":4"));

    let to = tempfile::tempdir().unwrap();
    let (copy, copy_store) = bare(to.path());
    art::export::jsonl::import(&copy, &jsonl).await.unwrap();
    assert_eq!(copy_store.original(&image).unwrap(), photo, "byte for byte");
    assert_eq!(
        copy_store.original(&pdf).unwrap(),
        std::fs::read(fixture("ghostscript-three-pages.pdf")).unwrap()
    );
    assert_eq!(copy_store.text(&pdf).unwrap(), store.text(&pdf).unwrap());
    assert_eq!(
        copy_store.image_to_send(&image).unwrap(),
        store.image_to_send(&image).unwrap()
    );
    let again = files.path().join("again.jsonl");
    export(&copy, &scope, Format::Jsonl, &again).await;
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        text,
        "lossless round trip"
    );

    // Markdown names them with their hashes; OTLP has type, size and hash, no bytes.
    let md = files.path().join("files.md");
    export(&art, &scope, Format::Markdown, &md).await;
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("- 📎 photo.jpg (image, 2000×1500, "), "{md}");
    assert!(md.contains(&format!("`sha256:{}`", pdf.id)), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_attachment_in_an_export_is_refused_and_nothing_is_imported() {
    let from = tempfile::tempdir().unwrap();
    let (art, store) = bare(from.path());
    let thread = art
        .conversation
        .create_thread(Some("Files"))
        .await
        .unwrap()
        .thread_id;
    let notes = store
        .add_bytes("notes.md", b"# Pears\n\nLate this year.\n")
        .unwrap();
    question_with(&art, &thread, vec![notes]).await;
    let files = tempfile::tempdir().unwrap();
    let jsonl = files.path().join("files.jsonl");
    export(&art, &Scope::Thread(thread), Format::Jsonl, &jsonl).await;
    let text = std::fs::read_to_string(&jsonl).unwrap();
    // One byte of the note changed: "Pears" → "Peers", base64 re-encoded, hash kept.
    let damaged: String = text
        .lines()
        .map(|line| {
            let Ok(mut value) = serde_json::from_str::<Value>(line) else {
                return line.to_owned();
            };
            if value["type"] == "blob" {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(value["data"].as_str().unwrap())
                    .unwrap();
                let changed = String::from_utf8_lossy(&bytes).replace("Pears", "Peers");
                if changed.as_bytes() != bytes {
                    value["data"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(changed));
                }
            }
            value.to_string()
        })
        .map(|l| l + "\n")
        .collect();
    let bad = files.path().join("bad.jsonl");
    std::fs::write(&bad, damaged).unwrap();
    let to = tempfile::tempdir().unwrap();
    let (copy, copy_store) = bare(to.path());
    let refused = art::export::jsonl::import(&copy, &bad).await.unwrap_err();
    assert!(
        refused.to_string().contains("bytes do not match its hash"),
        "{refused}"
    );
    assert!(copy.conversation.list_threads().await.unwrap().is_empty());
    assert!(copy_store.store().ids().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_records_a_questions_files_by_type_size_and_hash_never_their_bytes() {
    use art_testkit::framework::scripted::{Script, ScriptedSource, thread_config};
    let dir = tempfile::tempdir().unwrap();
    // No tools: one call, the answer's.
    let source = Arc::new(ScriptedSource::new(vec![Script::text("A gradient.")]));
    let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let store = Arc::new(
        Attachments::open(dir.path().join("attachments"), BlobStore::DEFAULT_LIMIT).unwrap(),
    );
    let art = ArtInstance::builder(storage, source)
        .attachments(Arc::clone(&store))
        .build()
        .unwrap();
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .unwrap()
        .thread_id;
    art.state
        .set_thread_config(&thread, &thread_config("m", &[]))
        .await
        .unwrap();
    let bytes = png();
    let image = store.add_bytes("secret-plan.png", &bytes).unwrap();
    let mut props = wire::ask(&thread, "What is this?");
    props.attachments = vec![image.clone()];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Success);

    let files = tempfile::tempdir().unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    for content in [false, true] {
        let file = files.path().join(format!("{content}.otlp.jsonl"));
        let options = Options {
            include_content: content,
            include_thinking: false,
        };
        art::export::export_to_file(
            &art,
            &Scope::Thread(thread.clone()),
            Format::Otlp,
            options,
            &Redactor::new(Vec::new()),
            &file,
            &mut |_| {},
        )
        .await
        .unwrap();
        let otlp = std::fs::read_to_string(&file).unwrap();
        let line: Value = serde_json::from_str(otlp.lines().next().unwrap()).unwrap();
        let spans = &line["resourceSpans"][0]["scopeSpans"][0]["spans"];
        let root = spans
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["parentSpanId"].as_str().is_none_or(str::is_empty))
            .unwrap();
        let attribute = |key: &str| {
            root["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == key)
                .map(|a| a["value"].clone())
        };
        assert_eq!(
            attribute("art.attachments.count").unwrap()["intValue"],
            json!("1"),
            "{root}"
        );
        let facts: Value = serde_json::from_str(
            attribute("art.attachments").unwrap()["stringValue"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(facts[0]["type"], "image/png");
        assert_eq!(facts[0]["size"], bytes.len());
        assert_eq!(facts[0]["sha256"], image.id.as_str());
        assert_eq!(
            facts[0].get("name").is_some(),
            content,
            "names only with content"
        );
        assert!(!otlp.contains(&b64[..40]), "never the bytes");
    }
}

/// llama.cpp's server started without the model's projector answers a question with an
/// image with HTTP 500 "image input is not supported": a refusal of images, said as
/// such (its own code and the server's words), sent once — never retried as an outage.
#[tokio::test]
async fn a_server_that_refuses_images_is_said_to_and_not_retried() {
    let refusal = json!({ "error": { "code": 500, "message": "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj", "type": "server_error" } });
    let server = FakeServer::start(vec![
        art_testkit::fake::Reply::error(500, &refusal.to_string()),
        art_testkit::fake::Reply::error(500, &refusal.to_string()),
        art_testkit::fake::Reply::error(500, &refusal.to_string()),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (art, store, thread) =
        thread(&dir, "openai", "smollm2", &format!("{}/v1", server.url())).await;
    let mut props = wire::ask(&thread, "What is in this picture?");
    props.attachments = vec![store.add_bytes("dot.png", &png()).unwrap()];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    let error = out.metadata.error.unwrap();
    assert_eq!(error.code, FailureCode::ImagesUnsupported, "{error:?}");
    assert!(
        error.message.contains("image input is not supported"),
        "{}",
        error.message
    );
    assert_eq!(server.requests().len(), 1, "a refusal is not retried");
}

/// A model whose window nobody knows (an OpenAI-compatible server, no window set): a
/// document longer than the assumed window is refused with the numbers, saying the
/// window is assumed and offering the thread's knowledge, and nothing is sent — never
/// the whole file, twice per run, as before.
#[tokio::test]
async fn a_huge_document_is_not_sent_to_a_model_whose_window_is_unknown() {
    let server = FakeServer::start(vec![text_reply(Protocol::OpenAi, "never", 8)]).await;
    let dir = tempfile::tempdir().unwrap();
    let (art, store, thread) =
        thread(&dir, "openai", "smollm2", &format!("{}/v1", server.url())).await;
    let log: String = "2026-12-07 12:00:00 INFO the service answered a request\n".repeat(12_000);
    let mut props = wire::ask(&thread, "What went wrong?");
    props.attachments = vec![store.add_bytes("service.txt", log.as_bytes()).unwrap()];
    let out = art.process(props, CancellationToken::new()).await.unwrap();
    assert_eq!(out.metadata.status, RunStatus::Error);
    let error = out.metadata.error.unwrap();
    assert_eq!(error.code, FailureCode::DocumentTooLong, "{error:?}");
    assert!(
        error.message.contains("a model is assumed to read")
            && error.message.contains("add it to the thread's knowledge"),
        "{}",
        error.message
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}
