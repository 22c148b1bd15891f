//! A long thread (600 messages, seeded into the app's database before start): it opens
//! at its newest message with only a window of messages in the page; scrolling up and
//! down slides that window (never more than 100 messages in the DOM); a search hit far
//! back pages the history until it can be shown.

use std::sync::Arc;

use art::context::ConversationManager;
use art::paths::DATABASE_FILE;
use art::sockets::Sockets;
use art::storage::sqlite::SqliteStorage;
use art_testkit::e2e::AppSession;
use art_types::{ConversationMessage, MessageRole, MessageStatus};

const ENTER: char = '\u{E006}';
const PAIRS: usize = 300;

async fn seed(dir: &std::path::Path) {
    let storage = Arc::new(SqliteStorage::open(dir.join(DATABASE_FILE)).unwrap());
    let conversation = ConversationManager::new(storage, Arc::new(Sockets::default()));
    let thread = conversation
        .create_thread(Some("Long thread"))
        .await
        .unwrap()
        .thread_id;
    let message = |i: usize, role: MessageRole, content: String| ConversationMessage {
        message_id: format!("m{i:04}"),
        thread_id: thread.clone(),
        role,
        content,
        timestamp: 1_700_000_000_000 + i as i64,
        status: MessageStatus::Complete,
        metadata: serde_json::json!({ "traceId": format!("run{}", i / 2) }),
        parent_id: None,
        attachments: Vec::new(),
    };
    let messages: Vec<ConversationMessage> = (0..PAIRS)
        .flat_map(|n| {
            [
                message(2 * n, MessageRole::User, format!("Question q{n}x")),
                message(2 * n + 1, MessageRole::Ai, format!("Answer a{n}x")),
            ]
        })
        .collect();
    conversation.add_messages(&thread, &messages).await.unwrap();
}

/// The element of seeded message `i`.
fn message(i: usize) -> String {
    format!("[data-message-id=\"m{i:04}\"]")
}

#[tokio::test(flavor = "current_thread")]
async fn a_long_thread_keeps_a_bounded_window_in_the_page_both_ways() {
    let data = tempfile::tempdir().unwrap();
    seed(data.path()).await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click(".thread-item .thread-title").await;
    app.wait_for_text("#messages", &format!("a{}x", PAIRS - 1))
        .await;
    // Only the newest window is in the page, not 600 messages.
    assert_eq!(app.count("#messages .message").await, 60);
    assert_eq!(app.count(&message(2 * PAIRS - 61)).await, 0);

    // Scrolling to the top slides the window back; older pages are fetched on the
    // way; the page never holds more than 100 messages, so the newest leave it.
    let mut slides = 0;
    while app.count(&message(0)).await == 0 {
        slides += 1;
        assert!(slides < 60, "the first message never came into view");
        app.run_script("document.getElementById('messages').scrollTop = 0")
            .await;
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let in_page = app.count("#messages .message").await;
        assert!(in_page <= 100, "{in_page} messages in the page");
    }
    assert_eq!(app.count(&message(2 * PAIRS - 1)).await, 0);
    assert_eq!(app.count("#messages .message").await, 100);
    app.screenshot("long-thread-start").await;

    // Scrolling down slides it forward again; "Latest" jumps to the end.
    app.run_script("const m = document.getElementById('messages'); m.scrollTop = m.scrollHeight")
        .await;
    app.wait_for(&message(139)).await;
    assert_eq!(app.count(&message(0)).await, 0);
    assert_eq!(app.count("#messages .message").await, 100);
    app.click("#jump-latest").await;
    app.wait_for(&message(2 * PAIRS - 1)).await;
    assert_eq!(app.count("#messages .message").await, 60);
    app.wait_gone("#jump-latest").await;

    // A hit in the very first messages (beyond the first page of 200) is brought into
    // the window, shown and highlighted.
    app.type_into("#search-input", &format!("q1x{ENTER}")).await;
    app.click("#search-results .search-hit").await;
    let focused = app.wait_for_text(".message.focused", "q1x").await;
    assert!(focused.contains("Question"), "{focused}");
    assert!(app.count("#messages .message").await <= 100);
    app.screenshot("long-thread").await;
    app.close().await;
}
