//! A long thread (600 messages, seeded into the app's database before start): it opens
//! at its newest message with only a window of messages in the page, scrolling up shows
//! older ones, and a search hit far back pages the history until it can be shown.

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

#[tokio::test(flavor = "current_thread")]
async fn a_long_thread_opens_at_its_end_and_pages_back() {
    let data = tempfile::tempdir().unwrap();
    seed(data.path()).await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click(".thread-item .thread-title").await;
    let shown = app
        .wait_for_text("#messages", &format!("a{}x", PAIRS - 1))
        .await;
    // Only the newest window is in the page, not 600 messages.
    assert_eq!(app.count("#messages .message").await, 60);
    assert!(!shown.contains(&format!("q{}x", PAIRS - 31)), "{shown}");
    // Scrolling to the top brings in the previous window.
    app.run_script("document.getElementById('messages').scrollTop = 0")
        .await;
    app.wait_for_text("#messages", &format!("q{}x", PAIRS - 60))
        .await;
    assert_eq!(app.count("#messages .message").await, 120);

    // A hit in the very first messages (beyond the first page of 200) is paged in,
    // then shown and highlighted.
    app.type_into("#search-input", &format!("q1x{ENTER}")).await;
    app.click("#search-results .search-hit").await;
    let focused = app.wait_for_text(".message.focused", "q1x").await;
    assert!(focused.contains("Question"), "{focused}");
    app.screenshot("long-thread").await;
    app.close().await;
}
