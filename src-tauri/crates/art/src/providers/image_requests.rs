//! An image on a question, in each protocol's own form, checked against the request
//! shapes of each provider's documentation (`tests/fixtures/<provider>/user_with_image.json`:
//! OpenAI's `image_url` with a data URL, Anthropic's base64 `image` block, Gemini's
//! `inline_data` part, Ollama's `images`).

use std::path::PathBuf;

use art_types::{Attachment, AttachmentKind, PromptImage, PromptMessage, PromptRole};
use base64::Engine;
use serde_json::Value;

fn fixture(provider: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tests/fixtures")
        .join(provider)
        .join("user_with_image.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The documented question with the fixture's image (a 1×1 PNG), as the agent builds it.
fn question(documented: &Value) -> PromptMessage {
    let data = documented.to_string();
    let b64 = data
        .split("iVBOR")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|rest| format!("iVBOR{rest}"))
        .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    let attachment = Attachment {
        id: "a".repeat(64),
        name: "dot.png".into(),
        mime: "image/png".into(),
        size: bytes.len() as u64,
        kind: AttachmentKind::Image {
            width: 1,
            height: 1,
            sent: None,
        },
    };
    let mut message = PromptMessage::text(PromptRole::User, "What is in this image?");
    message
        .images
        .push(PromptImage::new(attachment, "image/png", bytes));
    message
}

#[test]
fn openai_sends_an_image_url_with_a_data_url() {
    let documented = fixture("openai");
    let sent = super::openai::translate(&vec![question(&documented)]);
    assert_eq!(sent, vec![documented]);
}

#[test]
fn anthropic_sends_a_base64_image_block_before_the_text() {
    let documented = fixture("anthropic");
    let (_, turns) = super::anthropic::translate(&[question(&documented)]);
    assert_eq!(turns, vec![documented]);
}

#[test]
fn gemini_sends_inline_data() {
    let documented = fixture("gemini");
    let (_, contents) = super::gemini::translate(&[question(&documented)]);
    assert_eq!(contents, vec![documented]);
}

#[test]
fn ollama_sends_images_beside_the_content() {
    let documented = fixture("ollama");
    let sent = super::ollama::translate(&vec![question(&documented)]);
    assert_eq!(sent, vec![documented]);
}

#[test]
fn a_recorded_prompt_names_its_images_without_their_bytes_and_says_when_they_are_missing() {
    let documented = fixture("ollama");
    let asked = question(&documented);
    let recorded = serde_json::to_value(&asked).unwrap();
    assert_eq!(recorded["images"][0]["attachment"]["name"], "dot.png");
    assert_eq!(recorded["images"][0]["size"], asked.images[0].size);
    assert!(
        !recorded.to_string().contains("iVBOR"),
        "no base64 in a record"
    );
    // Read back, the image has no bytes: each provider says so in the text, never drops
    // it in silence.
    let read_back: PromptMessage = serde_json::from_value(recorded).unwrap();
    let sent = super::openai::translate(&vec![read_back]);
    let text = sent[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("The image dot.png could not be sent"),
        "{text}"
    );
}
