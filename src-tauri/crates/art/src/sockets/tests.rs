use super::*;

fn message(thread: &str, role: MessageRole, text: &str) -> ConversationMessage {
    ConversationMessage {
        message_id: text.into(),
        thread_id: thread.into(),
        role,
        content: text.into(),
        timestamp: 0,
        status: Default::default(),
        metadata: serde_json::Value::Null,
        parent_id: None,
        attachments: Vec::new(),
    }
}

#[tokio::test]
async fn filters_by_thread_and_role() {
    let socket = TypedSocket::new();
    let mut ai_in_t1 = socket.subscribe(MessageFilter {
        thread_id: Some("t1".into()),
        roles: vec![MessageRole::Ai],
    });
    let mut everything = socket.subscribe(All);
    socket.notify(&message("t1", MessageRole::User, "q"));
    socket.notify(&message("t2", MessageRole::Ai, "other"));
    socket.notify(&message("t1", MessageRole::Ai, "a"));
    assert_eq!(ai_in_t1.recv().await.unwrap().content, "a");
    assert!(ai_in_t1.try_recv().is_none());
    let all: Vec<_> = (0..3)
        .map(|_| everything.try_recv().unwrap().content)
        .collect();
    assert_eq!(all, ["q", "other", "a"]);
}

#[tokio::test]
async fn dropping_a_subscription_unsubscribes_and_spares_the_others() {
    let socket = TypedSocket::new();
    let gone = socket.subscribe(All);
    let mut stays = socket.subscribe(All);
    assert_eq!(socket.subscriber_count(), 2);
    drop(gone);
    assert_eq!(socket.subscriber_count(), 1);
    socket.notify(&message("t", MessageRole::User, "still delivered"));
    assert_eq!(stays.recv().await.unwrap().content, "still delivered");
}

#[tokio::test]
async fn a_slow_subscriber_never_blocks_publishing_or_loses_items() {
    let socket = TypedSocket::new();
    let mut slow = socket.subscribe(All);
    let mut fast = socket.subscribe(All);
    for i in 0..10_000 {
        socket.notify(&message("t", MessageRole::Ai, &i.to_string()));
        assert_eq!(fast.try_recv().unwrap().content, i.to_string());
    }
    for i in 0..10_000 {
        assert_eq!(slow.recv().await.unwrap().content, i.to_string());
    }
}

#[test]
fn observation_filter_by_type() {
    let filter = ObservationFilter {
        thread_id: None,
        types: vec![ObservationType::Plan],
    };
    let mut obs = Observation {
        id: "o".into(),
        thread_id: "t".into(),
        trace_id: "r".into(),
        timestamp: 0,
        kind: ObservationType::Plan,
        title: String::new(),
        content: serde_json::Value::Null,
        metadata: serde_json::Value::Null,
        span: None,
    };
    assert!(filter.matches(&obs));
    obs.kind = ObservationType::Error;
    assert!(!filter.matches(&obs));
}

#[tokio::test]
async fn a_subscription_ends_when_its_socket_is_dropped() {
    let sockets = Sockets::default();
    let mut subscription = sockets.stream.subscribe(All);
    drop(sockets);
    let ended = tokio::time::timeout(std::time::Duration::from_secs(1), subscription.recv()).await;
    assert!(matches!(ended, Ok(None)), "recv must end, not hang");
}
