use std::sync::Arc;

use art_types::{AgentState, ConversationMessage, MessageRole, MessageStatus, ThreadConfig};
use serde_json::json;

use super::*;
use crate::sockets::{MessageFilter, Sockets};
use crate::storage::StorageAdapter;
use crate::storage::memory::MemoryStorage;

fn setup() -> (ConversationManager, Arc<Sockets>, Arc<dyn StorageAdapter>) {
    let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
    let sockets = Arc::new(Sockets::default());
    (
        ConversationManager::new(Arc::clone(&storage), Arc::clone(&sockets)),
        sockets,
        storage,
    )
}

fn msg(thread: &str, id: &str, ts: i64, role: MessageRole, text: &str) -> ConversationMessage {
    ConversationMessage {
        message_id: id.into(),
        thread_id: thread.into(),
        role,
        content: text.into(),
        timestamp: ts,
        status: MessageStatus::Complete,
        metadata: serde_json::Value::Null,
        parent_id: None,
        attachments: Vec::new(),
    }
}

#[tokio::test]
async fn threads_create_rename_list_delete() {
    let (conv, _, _) = setup();
    let a = conv.create_thread(None).await.unwrap();
    assert_eq!(a.title, UNTITLED);
    let b = conv.create_thread(Some("  Trip   plans ")).await.unwrap();
    assert_eq!(b.title, "Trip plans");
    let renamed = conv.rename_thread(&a.thread_id, "Maths").await.unwrap();
    assert_eq!(renamed.title, "Maths");
    assert!(matches!(
        conv.rename_thread(&a.thread_id, " ").await,
        Err(ContextError::InvalidInput(_))
    ));
    let long = "x".repeat(MAX_TITLE_CHARS + 1);
    assert!(matches!(
        conv.rename_thread(&a.thread_id, &long).await,
        Err(ContextError::InvalidInput(_))
    ));
    assert!(matches!(
        conv.rename_thread("nope", "x").await,
        Err(ContextError::ThreadNotFound(_))
    ));

    conv.delete_thread(&b.thread_id).await.unwrap();
    let ids: Vec<_> = conv
        .list_threads()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.thread_id)
        .collect();
    assert_eq!(ids, [a.thread_id]);
    assert!(matches!(
        conv.delete_thread(&b.thread_id).await,
        Err(ContextError::ThreadNotFound(_))
    ));
}

#[tokio::test]
async fn messages_are_paged_newest_window_oldest_first_and_broadcast() {
    let (conv, sockets, _) = setup();
    let t = conv.create_thread(None).await.unwrap().thread_id;
    let mut sub = sockets.messages.subscribe(MessageFilter {
        thread_id: Some(t.clone()),
        roles: vec![MessageRole::Ai],
    });
    let all: Vec<_> = (0..10)
        .map(|i| {
            let role = if i % 2 == 0 {
                MessageRole::User
            } else {
                MessageRole::Ai
            };
            msg(&t, &format!("m{i}"), 100 + i, role, &format!("text {i}"))
        })
        .collect();
    conv.add_messages(&t, &all).await.unwrap();
    let last3 = conv
        .messages(
            &t,
            MessageOptions {
                limit: Some(3),
                before: None,
            },
        )
        .await
        .unwrap();
    let ids: Vec<_> = last3.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids, ["m7", "m8", "m9"]);
    let page = conv
        .messages(
            &t,
            MessageOptions {
                limit: Some(2),
                before: Some(107),
            },
        )
        .await
        .unwrap();
    let ids: Vec<_> = page.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids, ["m5", "m6"]);
    assert_eq!(sub.recv().await.unwrap().message_id, "m1");
    let thread = conv.thread(&t).await.unwrap();
    assert_eq!(thread.message_count, 10);

    // Updating a message (a streaming checkpoint) does not count it twice.
    let mut updated = all[9].clone();
    updated.content.push_str(" more");
    conv.add_messages(&t, &[updated]).await.unwrap();
    assert_eq!(conv.thread(&t).await.unwrap().message_count, 10);

    // A message for another thread is refused and nothing is written.
    let stray = msg("other", "s", 1, MessageRole::User, "x");
    assert!(matches!(
        conv.add_messages(&t, &[stray]).await,
        Err(ContextError::InvalidInput(_))
    ));
}

#[tokio::test]
async fn search_finds_tool_calls_by_name_arguments_and_result() {
    let (conv, _, _) = setup();
    let t = conv.create_thread(None).await.unwrap().thread_id;
    let mut tool = msg(&t, "m2", 2, MessageRole::Tool, r#"{"value":1764}"#);
    tool.metadata = json!({
        "toolName": "calculator",
        "arguments": { "expression": "sqrt(42)" },
        "toolCallId": "call-1",
    });
    let answer = msg(&t, "m3", 3, MessageRole::Ai, "The result is 1764.");
    conv.add_messages(&t, &[tool, answer]).await.unwrap();
    for query in ["calculator", "sqrt", "expression"] {
        let hits = conv.search(query, 10).await.unwrap();
        let found: Vec<_> = hits
            .iter()
            .map(|h| (h.record_id.as_str(), h.in_tool_call))
            .collect();
        assert_eq!(found, [("m2", true)], "{query}");
    }
    let mut both: Vec<_> = conv
        .search("1764", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|h| (h.record_id, h.in_tool_call))
        .collect();
    both.sort();
    assert_eq!(both, [("m2".into(), true), ("m3".into(), false)]);
}

/// The ids of the thread's active branch.
async fn path_ids(conv: &ConversationManager, thread: &str) -> Vec<String> {
    let path = conv.path(thread, MessageOptions::default()).await.unwrap();
    path.into_iter().map(|m| m.message_id).collect()
}

#[tokio::test]
async fn a_branch_beside_a_message_keeps_it_and_what_followed() {
    let (conv, _, _) = setup();
    let t = conv.create_thread(None).await.unwrap().thread_id;
    let other = conv.create_thread(None).await.unwrap().thread_id;
    let history = [
        msg(&t, "q1", 1, MessageRole::User, "first question"),
        msg(&t, "a1", 2, MessageRole::Ai, "first answer"),
        msg(&t, "q2", 3, MessageRole::User, "second question"),
        msg(&t, "a2", 4, MessageRole::Ai, "second answer"),
    ];
    conv.add_messages(&t, &history).await.unwrap();
    conv.add_messages(
        &other,
        &[msg(&other, "x1", 5, MessageRole::User, "elsewhere")],
    )
    .await
    .unwrap();
    let ids = |ms: &[ConversationMessage]| -> Vec<String> {
        ms.iter().map(|m| m.message_id.clone()).collect()
    };
    // Each new message follows the one before it.
    assert_eq!(
        conv.message(&t, "a2")
            .await
            .unwrap()
            .unwrap()
            .parent_id
            .as_deref(),
        Some("q2")
    );
    assert_eq!(conv.thread(&t).await.unwrap().head.as_deref(), Some("a2"));
    assert_eq!(
        conv.last_question(&t).await.unwrap().unwrap().message_id,
        "q2"
    );
    assert!(conv.message(&other, "a1").await.unwrap().is_none());

    // Edit q2: a branch starts beside it; the next message follows a1.
    let edited = conv.branch_beside(&t, "q2").await.unwrap();
    assert_eq!(edited.content, "second question");
    conv.add_messages(
        &t,
        &[
            msg(&t, "q2b", 5, MessageRole::User, "second, edited"),
            msg(&t, "a2b", 6, MessageRole::Ai, "edited answer"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(path_ids(&conv, &t).await, ["q1", "a1", "q2b", "a2b"]);
    let all = conv.messages(&t, MessageOptions::default()).await.unwrap();
    assert_eq!(all.len(), 6, "nothing was removed");
    assert_eq!(conv.thread(&t).await.unwrap().message_count, 6);
    let points = conv.branches(&t).await.unwrap();
    assert_eq!(points.len(), 1);
    assert_eq!(points[0].parent_id.as_deref(), Some("a1"));
    assert_eq!(points[0].alternatives, ["q2", "q2b"]);
    assert_eq!(conv.search("second answer", 10).await.unwrap().len(), 1);

    // Back to the first branch, then to the second again through a message on it.
    conv.switch_to(&t, "q2").await.unwrap();
    assert_eq!(path_ids(&conv, &t).await, ["q1", "a1", "q2", "a2"]);
    conv.switch_to(&t, "q1").await.unwrap();
    assert_eq!(
        path_ids(&conv, &t).await,
        ["q1", "a1", "q2", "a2"],
        "q1 is on it already"
    );
    conv.switch_to(&t, "a2b").await.unwrap();
    assert_eq!(path_ids(&conv, &t).await, ["q1", "a1", "q2b", "a2b"]);
    // Paging the active branch back.
    let page = conv
        .path(
            &t,
            MessageOptions {
                limit: Some(2),
                before: Some(6),
            },
        )
        .await
        .unwrap();
    assert_eq!(ids(&page), ["a1", "q2b"]);

    // Editing the first question branches at the root.
    conv.branch_beside(&t, "q1").await.unwrap();
    conv.add_messages(&t, &[msg(&t, "q1b", 7, MessageRole::User, "another start")])
        .await
        .unwrap();
    assert_eq!(path_ids(&conv, &t).await, ["q1b"]);
    let points = conv.branches(&t).await.unwrap();
    assert_eq!(points[0].parent_id, None);
    assert_eq!(points[0].alternatives, ["q1", "q1b"]);

    // A message of another thread, or none, is a clear error.
    for id in ["x1", "gone"] {
        let err = conv.switch_to(&t, id).await.unwrap_err();
        assert!(matches!(err, ContextError::MessageNotFound(_)), "{err}");
        let err = conv.branch_beside(&t, id).await.unwrap_err();
        assert!(matches!(err, ContextError::MessageNotFound(_)), "{err}");
    }
}

#[tokio::test]
async fn removing_a_run_keeps_what_followed_it_on_its_branch() {
    let (conv, _, _) = setup();
    let t = conv.create_thread(None).await.unwrap().thread_id;
    let run = |id: &str, ts: i64, role: MessageRole, trace: &str| ConversationMessage {
        metadata: json!({ "traceId": trace }),
        ..msg(&t, id, ts, role, id)
    };
    conv.add_messages(
        &t,
        &[
            run("q1", 1, MessageRole::User, "r1"),
            run("a1", 2, MessageRole::Ai, "r1"),
            run("q2", 3, MessageRole::User, "r2"),
            run("q3", 4, MessageRole::User, "r3"),
            run("a3", 5, MessageRole::Ai, "r3"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(conv.remove_run(&t, "r2").await.unwrap(), 1);
    let path = conv.path(&t, MessageOptions::default()).await.unwrap();
    let ids: Vec<&str> = path.iter().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids, ["q1", "a1", "q3", "a3"]);
    assert_eq!(path[2].parent_id.as_deref(), Some("a1"));
    // The head's own run removed: the head moves back.
    conv.remove_run(&t, "r3").await.unwrap();
    assert_eq!(conv.thread(&t).await.unwrap().head.as_deref(), Some("a1"));
    assert_eq!(conv.thread(&t).await.unwrap().message_count, 2);
}

#[tokio::test]
async fn delete_cascades_and_search_finds_messages() {
    let (conv, _, storage) = setup();
    let t = conv.create_thread(None).await.unwrap().thread_id;
    conv.add_messages(
        &t,
        &[msg(
            &t,
            "m1",
            1,
            MessageRole::User,
            "what is the boiling point",
        )],
    )
    .await
    .unwrap();
    let state = StateManager::new(Arc::clone(&storage), StateSavingStrategy::Explicit);
    state
        .set_thread_config(&t, &ThreadConfig::default())
        .await
        .unwrap();
    let hits = conv.search("boil", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].record_id, "m1");
    assert!(!hits[0].in_tool_call);
    conv.delete_thread(&t).await.unwrap();
    assert!(conv.search("boil", 10).await.unwrap().is_empty());
    assert!(
        storage
            .get(crate::storage::Collection::ThreadConfigs, &t)
            .await
            .unwrap()
            .is_none()
    );
}

fn state_with(n: i64) -> AgentState {
    let mut s = AgentState::default();
    s.data.insert("ans".into(), json!(n));
    s
}

#[tokio::test]
async fn explicit_strategy_saves_only_on_request() {
    let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
    let mgr = StateManager::new(storage, StateSavingStrategy::Explicit);
    let ctx = mgr.load_thread_context("t").await.unwrap();
    assert_eq!(ctx.state, AgentState::default());
    assert!(
        !mgr.save_state_if_modified("t", &state_with(1))
            .await
            .unwrap()
    );
    assert_eq!(
        mgr.load_thread_context("t").await.unwrap().state,
        AgentState::default()
    );
    mgr.set_agent_state("t", &state_with(2)).await.unwrap();
    assert_eq!(
        mgr.load_thread_context("t").await.unwrap().state,
        state_with(2)
    );
}

#[tokio::test]
async fn implicit_strategy_saves_changes_and_never_serves_stale_state() {
    let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
    let mgr = StateManager::new(Arc::clone(&storage), StateSavingStrategy::Implicit);
    mgr.load_thread_context("t").await.unwrap();
    assert!(
        mgr.save_state_if_modified("t", &state_with(1))
            .await
            .unwrap()
    );
    // Unchanged state is not written again.
    mgr.load_thread_context("t").await.unwrap();
    assert!(
        !mgr.save_state_if_modified("t", &state_with(1))
            .await
            .unwrap()
    );
    // Another writer (a second manager on the same storage) changes the state: the next
    // load sees it, with no config change needed (ART bug 7).
    let other = StateManager::new(storage, StateSavingStrategy::Explicit);
    other.set_agent_state("t", &state_with(5)).await.unwrap();
    assert_eq!(
        mgr.load_thread_context("t").await.unwrap().state,
        state_with(5)
    );
}

#[tokio::test]
async fn config_values_and_enabled_tools() {
    let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
    let mgr = StateManager::new(storage, StateSavingStrategy::Explicit);
    assert!(!mgr.is_tool_enabled("t", "calculator").await.unwrap());
    let config = ThreadConfig {
        enabled_tools: vec!["calculator".into()],
        system_prompt: Some("Be brief.".into()),
        ..ThreadConfig::default()
    };
    mgr.set_thread_config("t", &config).await.unwrap();
    assert!(mgr.is_tool_enabled("t", "calculator").await.unwrap());
    assert!(!mgr.is_tool_enabled("t", "current_time").await.unwrap());
    assert_eq!(
        mgr.get_thread_config_value("t", "systemPrompt")
            .await
            .unwrap(),
        Some(json!("Be brief."))
    );
    assert_eq!(
        mgr.get_thread_config_value("t", "nothing").await.unwrap(),
        None
    );
    assert_eq!(mgr.load_thread_context("t").await.unwrap().config, config);
}

#[tokio::test]
async fn a_thread_can_choose_its_own_saving_strategy() {
    let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
    let mgr = StateManager::new(Arc::clone(&storage), StateSavingStrategy::Explicit);
    let implicit = ThreadConfig {
        state_saving: Some(StateSavingStrategy::Implicit),
        ..ThreadConfig::default()
    };
    mgr.set_thread_config("auto", &implicit).await.unwrap();
    // The thread saving implicitly saves a changed state; its neighbour (app default:
    // explicit) does not.
    for thread in ["auto", "manual"] {
        mgr.load_thread_context(thread).await.unwrap();
    }
    assert!(
        mgr.save_state_if_modified("auto", &state_with(1))
            .await
            .unwrap()
    );
    assert!(
        !mgr.save_state_if_modified("manual", &state_with(1))
            .await
            .unwrap()
    );
    assert_eq!(
        mgr.load_thread_context("auto").await.unwrap().state,
        state_with(1)
    );
    assert_eq!(
        mgr.load_thread_context("manual").await.unwrap().state,
        AgentState::default()
    );
    // Switching the thread back to explicit stops the automatic saves at once.
    let explicit = ThreadConfig {
        state_saving: Some(StateSavingStrategy::Explicit),
        ..ThreadConfig::default()
    };
    mgr.set_thread_config("auto", &explicit).await.unwrap();
    mgr.load_thread_context("auto").await.unwrap();
    assert!(
        !mgr.save_state_if_modified("auto", &state_with(2))
            .await
            .unwrap()
    );
    assert_eq!(
        mgr.load_thread_context("auto").await.unwrap().state,
        state_with(1)
    );
    // The strategy travels with the configuration (JSON name and values).
    let json = serde_json::to_value(&implicit).unwrap();
    assert_eq!(json["stateSaving"], "implicit");
}

#[tokio::test]
async fn the_prompt_library_saves_renames_and_deletes_with_clear_errors() {
    let storage: Arc<dyn StorageAdapter> = Arc::new(MemoryStorage::new());
    let library = PromptLibrary::new(storage);
    let terse = library
        .save(None, "  Terse ", "Answer in one line.")
        .await
        .unwrap();
    assert_eq!(terse.name, "Terse");
    let pirate = library
        .save(None, "pirate", "Talk like a pirate.")
        .await
        .unwrap();
    let names: Vec<String> = library
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["pirate", "Terse"], "sorted by name, any case");

    // Edit keeps the id and creation time.
    let edited = library
        .save(Some(&terse.prompt_id), "Terse", "One line, no preamble.")
        .await
        .unwrap();
    assert_eq!(
        (edited.prompt_id.as_str(), edited.created_at),
        (terse.prompt_id.as_str(), terse.created_at)
    );
    assert_eq!(
        library
            .get(&terse.prompt_id)
            .await
            .unwrap()
            .unwrap()
            .content,
        "One line, no preamble."
    );

    // Bad input is refused and changes nothing.
    let long_name = "n".repeat(MAX_PROMPT_NAME + 1);
    for (id, name, content, says) in [
        (None, "TERSE", "x", "exists already"),
        (
            Some(pirate.prompt_id.as_str()),
            "terse",
            "x",
            "exists already",
        ),
        (None, " ", "x", "name"),
        (None, long_name.as_str(), "x", "at most"),
        (None, "Empty", "  ", "text"),
        (Some("no-such-id"), "Ghost", "x", "no longer exists"),
    ] {
        let err = library.save(id, name, content).await.unwrap_err();
        assert!(err.to_string().contains(says), "{name}: {err}");
        assert!(matches!(err, ContextError::InvalidField { .. }), "{err:?}");
    }
    assert_eq!(library.list().await.unwrap().len(), 2);

    assert!(library.delete(&pirate.prompt_id).await.unwrap());
    assert!(!library.delete(&pirate.prompt_id).await.unwrap());
    assert_eq!(library.get(&pirate.prompt_id).await.unwrap(), None);
}

#[tokio::test]
async fn answers_left_streaming_by_a_dead_process_are_marked_interrupted() {
    let (conv, _sockets, _storage) = setup();
    let a = conv.create_thread(Some("a")).await.unwrap().thread_id;
    let b = conv.create_thread(Some("b")).await.unwrap().thread_id;
    let c = conv.create_thread(Some("c")).await.unwrap().thread_id;
    let mut partial = msg(&a, "a2", 2, MessageRole::Ai, "The answer is");
    partial.status = MessageStatus::Streaming;
    conv.add_messages(&a, &[msg(&a, "a1", 1, MessageRole::User, "q"), partial])
        .await
        .unwrap();
    conv.add_messages(&b, &[msg(&b, "b1", 1, MessageRole::Ai, "done")])
        .await
        .unwrap();
    // A streaming answer is not indexed at each checkpoint; recovery makes it searchable.
    assert!(conv.search("answer", 10).await.unwrap().is_empty());
    assert_eq!(conv.recover_interrupted().await.unwrap(), 1);
    let hits = conv.search("answer", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    let kept = conv.messages(&a, MessageOptions::default()).await.unwrap();
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1].status, MessageStatus::Interrupted);
    assert_eq!(kept[1].content, "The answer is", "the partial text is kept");
    let other = conv.messages(&b, MessageOptions::default()).await.unwrap();
    assert_eq!(other[0].status, MessageStatus::Complete);
    assert!(
        conv.messages(&c, MessageOptions::default())
            .await
            .unwrap()
            .is_empty()
    );
    // Nothing left to do the second time.
    assert_eq!(conv.recover_interrupted().await.unwrap(), 0);
}

#[tokio::test]
async fn the_failed_question_to_retry_is_the_active_branch_s() {
    let (conv, _, _) = setup();
    let t = conv.create_thread(None).await.unwrap().thread_id;
    let failed = ConversationMessage {
        status: MessageStatus::Failed,
        ..msg(&t, "q1", 1, MessageRole::User, "too long")
    };
    conv.add_messages(&t, &[failed]).await.unwrap();
    assert_eq!(
        conv.latest_failed(&t).await.unwrap().unwrap().message_id,
        "q1"
    );
    // Edited: the new branch has no failed question; the old one still does.
    conv.branch_beside(&t, "q1").await.unwrap();
    conv.add_messages(&t, &[msg(&t, "q1b", 2, MessageRole::User, "shorter")])
        .await
        .unwrap();
    assert!(conv.latest_failed(&t).await.unwrap().is_none());
    conv.switch_to(&t, "q1").await.unwrap();
    assert_eq!(
        conv.latest_failed(&t).await.unwrap().unwrap().message_id,
        "q1"
    );
}

#[test]
fn a_question_titles_its_thread_by_its_first_line_cut_at_a_word() {
    use super::title_from_question;
    assert_eq!(
        title_from_question("\n  What is   the capital of France?\nMore.").as_deref(),
        Some("What is the capital of France?")
    );
    let long = "Explain how the borrow checker decides when a mutable reference may be taken twice";
    let title = title_from_question(long).unwrap();
    assert_eq!(
        title,
        "Explain how the borrow checker decides when a mutable…"
    );
    assert!(title.chars().count() <= 60, "{title}");
    let one_word = "x".repeat(100);
    assert_eq!(title_from_question(&one_word).unwrap().chars().count(), 60);
    assert_eq!(title_from_question("  \n "), None);
}
