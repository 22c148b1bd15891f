use super::*;

fn image(name: &str) -> Attachment {
    Attachment {
        id: "a".repeat(64),
        name: name.into(),
        mime: "image/png".into(),
        size: 10,
        kind: AttachmentKind::Image {
            width: 100,
            height: 100,
            sent: None,
        },
    }
}

fn document(name: &str, tokens: u64) -> Attachment {
    Attachment {
        id: "b".repeat(64),
        name: name.into(),
        mime: "application/pdf".into(),
        size: 10,
        kind: AttachmentKind::Document {
            text: "c".repeat(64),
            pages: Some(3),
            tokens,
        },
    }
}

fn reach(sees_images: Option<bool>, room: Option<u64>) -> ModelReach<'static> {
    ModelReach {
        model: "llama3.2:3b",
        sees_images,
        room,
        window: room.map(|r| r * 2),
        assumed: false,
    }
}

#[test]
fn an_image_for_a_model_without_vision_is_refused_by_name() {
    let question = [document("notes.pdf", 10), image("chart.png")];
    assert_eq!(
        check(&question, reach(Some(false), None))
            .unwrap_err()
            .to_string(),
        "llama3.2:3b does not see images, so chart.png would not reach it: choose a model \
         with vision, or remove the image"
    );
    assert!(
        check(&question, reach(None, None)).is_ok(),
        "unknown: tried"
    );
    assert!(check(&question, reach(Some(true), None)).is_ok());
}

#[test]
fn documents_longer_than_the_room_are_refused_with_the_numbers() {
    let one = [document("report.pdf", 180_000)];
    match check(&one, reach(None, Some(16_000))) {
        Err(AttachmentProblem::TooLongForModel {
            name,
            tokens,
            window,
            ..
        }) => {
            assert_eq!(
                (name.as_str(), tokens, window),
                ("report.pdf", 180_000, 32_000)
            );
        }
        other => panic!("{other:?}"),
    }
    let three = [
        document("a.pdf", 6_000),
        document("b.pdf", 9_000),
        document("c.pdf", 2_000),
    ];
    let refused = check(&three, reach(None, Some(16_000))).unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("b.pdf (with 2 other documents) is ~17,000 tokens"),
        "{refused}"
    );
    assert!(
        check(&three, reach(None, Some(17_000))).is_ok(),
        "fits exactly"
    );
    assert!(
        check(&three, reach(None, None)).is_ok(),
        "unknown window: no limit of ours"
    );
}

#[tokio::test]
async fn history_loads_documents_ahead_of_the_text_and_names_images_a_model_cannot_see() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Attachments::open(dir.path(), 1 << 20).unwrap());
    let doc = store
        .add_bytes("notes.md", b"The pears were late.")
        .unwrap();
    let png = {
        let mut out = Vec::new();
        ::image::DynamicImage::new_rgb8(4, 4)
            .write_to(std::io::Cursor::new(&mut out), ::image::ImageFormat::Png)
            .unwrap();
        out
    };
    let picture = store.add_bytes("dot.png", &png).unwrap();
    let question = ConversationMessage {
        message_id: "q1".into(),
        thread_id: "t".into(),
        role: art_types::MessageRole::User,
        content: "What happened?".into(),
        timestamp: 1,
        status: art_types::MessageStatus::Complete,
        parent_id: None,
        metadata: serde_json::Value::Null,
        attachments: vec![doc, picture],
    };
    let history = [question];

    let seen = Attached::load(Some(&store), &history, Some(true))
        .await
        .unwrap();
    let message = seen.user_message(&history[0]);
    assert_eq!(
        message.content,
        "<document name=\"notes.md\">\nThe pears were late.\n</document>\n\nWhat happened?"
    );
    assert_eq!(message.images.len(), 1);
    assert_eq!(message.images[0].data(), Some(png.as_slice()));

    let blind = Attached::load(Some(&store), &history, Some(false))
        .await
        .unwrap();
    let message = blind.user_message(&history[0]);
    assert!(message.images.is_empty());
    assert!(
        message
            .content
            .ends_with("[An image, dot.png, was attached here; this model does not see images.]"),
        "{}",
        message.content
    );

    // Bytes gone from the store: the question cannot be asked as it was, and says why.
    let empty = tempfile::tempdir().unwrap();
    let elsewhere = Arc::new(Attachments::open(empty.path(), 1 << 20).unwrap());
    let missing = Attached::load(Some(&elsewhere), &history, None)
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "notes.md is no longer in the attachment store"
    );
    assert!(Attached::load(None, &history, None).await.is_err());
}
