//! Attachments in the real app: a PDF attached with "Attach" (the picker's files come
//! from `--pick-dir`), an image pasted into the composer, both shown as chips and sent;
//! the fake Ollama gets the image in `images` and the PDF's text with page markers; the
//! sent question shows its chips, which open the image and the document's text; the
//! thread exported as native JSONL from the Trace panel imports elsewhere with its files
//! byte for byte; after a restart the chips are still there.

use std::path::PathBuf;

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{Protocol, text_reply};
use base64::Engine;

use crate::day::fake_ollama;

/// A 64×48 PNG with a gradient, base64.
pub(crate) fn png_base64() -> String {
    let image =
        image::RgbImage::from_fn(64, 48, |x, y| image::Rgb([x as u8 * 4, y as u8 * 5, 140]));
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(image)
        .write_to(std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// Paste a PNG named `name` into the composer, as a clipboard paste delivers a file.
pub(crate) const PASTE: &str = r##"
const [name, b64, done] = arguments;
const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
const file = new File([bytes], name, { type: "image/png" });
const data = new DataTransfer();
data.items.add(file);
const paste = new Event("paste", { bubbles: true, cancelable: true });
Object.defineProperty(paste, "clipboardData", { value: data });
document.querySelector("#composer-input").dispatchEvent(paste);
done(paste.defaultPrevented);
"##;

/// A new thread on the Ollama at `url` with `model`, its settings closed again.
async fn new_thread_on(app: &AppSession, url: &str, model: &str) {
    app.click("#new-thread").await;
    app.wait_for("#thread").await;
    app.click("#settings-button").await;
    app.type_into("#base-url-input", url).await;
    app.select("#provider-select", "ollama").await;
    app.type_into("#model-input", model).await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_picked_pdf_and_a_pasted_image_reach_the_model_and_stay_on_the_question() {
    // No tools in this thread: one call, the answer's.
    let ollama = fake_ollama(vec![text_reply(
        Protocol::Ollama,
        "The orchard produced **1,240 kg** of apples.",
        8,
    )])
    .await;
    let picks = tempfile::tempdir().unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/documents/ghostscript-three-pages.pdf");
    std::fs::copy(&fixture, picks.path().join("report.pdf")).unwrap();

    let exports = tempfile::tempdir().unwrap();
    let app = AppSession::launch_picking(picks.path(), exports.path()).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    new_thread_on(&app, &ollama.url(), "llava:7b").await;

    // Attach: the picker's file becomes a chip with its pages and tokens.
    app.click("#attach-button").await;
    let chip = app
        .wait_for_text("#attachment-tray .attachment-chip.document", "3 pages")
        .await;
    assert!(chip.contains("PDF") && chip.contains("tokens"), "{chip}");
    app.wait_for("#attachment-tray .attachment-chip.document[title^=\"report.pdf (3 pages\"]")
        .await;
    // Paste: the image becomes a chip with its thumbnail.
    let b64 = png_base64();
    let taken = app
        .eval_async(PASTE, vec!["orchard.png".into(), b64.clone().into()])
        .await;
    assert_eq!(taken, true, "the paste was taken as a file");
    app.wait_for_text("#attachment-tray .attachment-chip.image", "64×48")
        .await;
    app.wait_for("#attachment-tray .attachment-chip.image img.chip-thumb")
        .await;
    app.screenshot("composer-attachments").await;

    app.type_into("#composer-input", "What does the report say?")
        .await;
    app.click("#send-button").await;
    app.wait_for_text(".message.ai .answer", "1,240 kg").await;
    // The tray is emptied and the question shows its two chips (the answer can stream
    // in before the thread's page reload brings the question).
    app.wait_gone("#attachment-tray .attachment-chip").await;
    app.wait_for_count(".message.user .attachments.sent .attachment-chip", 2)
        .await;

    // The fake Ollama got the image as it was pasted and the PDF's text by page.
    let chat = ollama
        .requests()
        .into_iter()
        .find(|r| r.request_line.contains("/api/chat"))
        .expect("a chat request")
        .json();
    let user = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(user["images"][0], b64.as_str());
    let text = user["content"].as_str().unwrap();
    assert!(
        text.starts_with("<document name=\"report.pdf\">\n--- page 1 ---"),
        "{text}"
    );
    assert!(text.contains("--- page 3 ---\nOutlook"), "{text}");
    assert!(text.ends_with("What does the report say?"), "{text}");

    // A chip opens its attachment: the image at full size, the document's text.
    app.click(".message.user .attachment-chip.image .chip-open")
        .await;
    app.wait_for("#attachment-viewer img.viewer-image").await;
    app.screenshot("attachment-viewer-image").await;
    app.click("#viewer-close").await;
    app.click(".message.user .attachment-chip.document .chip-open")
        .await;
    let shown = app
        .wait_for_text("#attachment-viewer .viewer-text", "--- page 2 ---")
        .await;
    assert!(shown.contains("Irrigation cost 310 euros"), "{shown}");
    app.click("#viewer-close").await;
    app.screenshot("thread-attachments").await;

    // Exported as native JSONL, the thread imports elsewhere with its files, byte for byte.
    app.click("#trace-button").await;
    app.select("#export-format", "jsonl").await;
    app.select("#export-scope", "thread").await;
    app.click("#export-button").await;
    app.wait_for_text("#export-done", "Saved").await;
    app.click("#trace-button").await;
    let file = std::fs::read_dir(exports.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".jsonl"))
        .expect("the JSONL export");
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = art::paths::DataDir::resolve_from(Some(elsewhere.path().to_path_buf())).unwrap();
    let copy = art::standard::Standard::open(&dir).unwrap();
    art::export::jsonl::import(&copy.art, &file).await.unwrap();
    let store = copy.art.attachments.clone().unwrap();
    let thread = &copy.art.conversation.list_threads().await.unwrap()[0];
    let messages = copy
        .art
        .conversation
        .messages(&thread.thread_id, Default::default())
        .await
        .unwrap();
    let question = messages.iter().find(|m| !m.attachments.is_empty()).unwrap();
    let [pdf, png] = question.attachments.as_slice() else {
        panic!("{:?}", question.attachments)
    };
    assert_eq!(
        store.original(pdf).unwrap(),
        std::fs::read(&fixture).unwrap()
    );
    let pasted = base64::engine::general_purpose::STANDARD
        .decode(&b64)
        .unwrap();
    assert_eq!(store.original(png).unwrap(), pasted);

    // Restart on the same data: the question still shows its files.
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click(".thread-item .thread-title").await;
    app.wait_for(".message.user .attachment-chip.document[title^=\"report.pdf\"]")
        .await;
    app.wait_for(".message.user .attachment-chip.image img.chip-thumb")
        .await;

    // Settings can say the model does not see images: the next image is refused before
    // anything is sent, in words, and the question keeps its file for a retry.
    app.click("#settings-button").await;
    app.select("#images-select", "no").await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;
    let chats = || {
        ollama
            .requests()
            .iter()
            .filter(|r| r.request_line.contains("/api/chat"))
            .count()
    };
    let sent = chats();
    app.eval_async(PASTE, vec!["second.png".into(), b64.clone().into()])
        .await;
    app.wait_for_text("#attachment-tray .attachment-chip.image", "64×48")
        .await;
    app.type_into("#composer-input", "And this one?").await;
    app.click("#send-button").await;
    app.wait_for_text(".run-error", "does not see images").await;
    app.wait_for_text(".run-error .error-card .error-code", "ATTACHMENT_REFUSED")
        .await;
    assert_eq!(chats(), sent, "nothing reached the model");
    app.close().await;
}

/// What the picker offers in the long-document test: a ledger far longer than the fake
/// model's 32,768-token window, with one fact near its start.
fn long_ledger() -> String {
    let mut text =
        String::from("# Pears\n\nThe pear trees gave 40 crates in October.\n\n# Daily log\n\n");
    text.push_str(&"The orchard's ledger, line after line.\n".repeat(4_700));
    text
}

#[tokio::test(flavor = "current_thread")]
async fn a_document_too_long_for_the_model_goes_to_the_thread_knowledge_and_is_searched() {
    let plan = r#"{"title": "Pears", "intent": "Find the pear harvest", "plan": ["Search the ledger", "Answer"], "toolCalls": [{"callId": "c1", "toolName": "search_knowledge", "arguments": {"query": "pear crates", "k": 2}}]}"#;
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, plan, 24),
        text_reply(
            Protocol::Ollama,
            "The pear trees gave **40 crates** [1].",
            8,
        ),
    ])
    .await;
    let picks = tempfile::tempdir().unwrap();
    std::fs::write(picks.path().join("ledger.md"), long_ledger()).unwrap();
    let exports = tempfile::tempdir().unwrap();
    let app = AppSession::launch_picking(picks.path(), exports.path()).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    new_thread_on(&app, &ollama.url(), "fake-model:latest").await;

    // Too long: refused with the numbers and its own code, nothing sent, never cut.
    app.click("#attach-button").await;
    app.wait_for("#attachment-tray .attachment-chip.document[title^=\"ledger.md\"]")
        .await;
    let question = "How many crates did the pear trees give?";
    app.type_into("#composer-input", question).await;
    app.click("#send-button").await;
    let refused = app
        .wait_for_text(".run-error", "the model reads 32,768")
        .await;
    assert!(refused.contains("ledger.md is ~"), "{refused}");
    app.wait_for_text(".run-error .error-card .error-code", "DOCUMENT_TOO_LONG")
        .await;
    let chats = || {
        ollama
            .requests()
            .into_iter()
            .filter(|r| r.request_line.contains("/api/chat"))
            .collect::<Vec<_>>()
    };
    assert!(chats().is_empty(), "nothing reached the model");

    // Offered to the thread's knowledge: indexed into a collection the thread searches.
    app.click("#add-to-knowledge").await;
    let added = app
        .wait_for_text(".added-to-knowledge", "which this thread searches")
        .await;
    assert!(
        added.starts_with("ledger.md is in \u{201c}Files from") && added.contains("passages"),
        "{added}"
    );
    app.screenshot("too-long-to-knowledge").await;

    // The thread is set to search its knowledge first, before planning.
    app.click("#settings-button").await;
    app.click("#search-first").await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;

    // Asked again without the file: the agent searches the ledger and cites it.
    app.click("#ask-without-file").await;
    let draft = app
        .eval_async(
            "arguments[0](document.querySelector('#composer-input').value)",
            vec![],
        )
        .await;
    assert_eq!(draft, question);
    assert_eq!(app.count("#attachment-tray .attachment-chip").await, 0);
    app.click("#send-button").await;
    let card = app
        .wait_for_text(".tool-card.ok[data-tool=\"search_knowledge\"]", "ledger.md")
        .await;
    assert!(card.contains("40 crates in October"), "{card}");
    app.wait_for_text(".message.ai .answer", "40 crates").await;
    let sent = chats();
    assert_eq!(sent.len(), 2, "a plan and an answer");
    // Searched first: the planner was given the passage, and the search has its card.
    assert!(
        sent[0].body.contains("40 crates in October"),
        "{}",
        sent[0].body
    );
    assert_eq!(
        app.count(".tool-card.ok[data-tool=\"search_knowledge\"]")
            .await,
        2,
        "the first search and the planned one"
    );
    for chat in &sent {
        assert!(
            chat.body.len() < 40_000,
            "the ledger was not sent whole ({} bytes)",
            chat.body.len()
        );
    }
    assert!(sent[1].body.contains("40 crates in October"));
    app.screenshot("searched-first").await;
    app.close().await;
}
