use super::*;
use crate::sockets::ObservationFilter;
use crate::storage::memory::MemoryStorage;

fn manager() -> (ObservationManager, Arc<Sockets>) {
    let sockets = Arc::new(Sockets::default());
    (
        ObservationManager::new(Arc::new(MemoryStorage::new()), Arc::clone(&sockets)),
        sockets,
    )
}

#[tokio::test]
async fn stamps_persists_then_broadcasts() {
    let (manager, sockets) = manager();
    let mut sub = sockets.observations.subscribe(ObservationFilter {
        thread_id: Some("t".into()),
        types: vec![ObservationType::Plan],
    });
    let plan = manager
        .record(NewObservation::new(
            "t",
            "r",
            ObservationType::Plan,
            serde_json::json!({"steps": ["a"]}),
        ))
        .await
        .unwrap();
    assert!(!plan.id.is_empty());
    assert!(plan.timestamp > 0);
    assert_eq!(plan.title, "Plan");
    // Broadcast happened after persistence: the subscriber's copy is queryable.
    let got = sub.recv().await.unwrap();
    assert_eq!(got, plan);
    let stored = manager
        .query(&ObservationQuery {
            thread_id: Some("t".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(stored, vec![plan]);
}

#[tokio::test]
async fn query_by_trace_and_types_in_order() {
    let (manager, _) = manager();
    let news = [
        ObservationType::Intent,
        ObservationType::Plan,
        ObservationType::Error,
    ]
    .into_iter()
    .map(|k| NewObservation::new("t", "run-a", k, Value::Null))
    .chain([NewObservation::new(
        "t",
        "run-b",
        ObservationType::Plan,
        Value::Null,
    )])
    .collect();
    manager.record_all(news).await.unwrap();
    let found = manager
        .query(&ObservationQuery {
            trace_ids: vec!["run-a".into()],
            types: vec![ObservationType::Plan, ObservationType::Intent],
            ..Default::default()
        })
        .await
        .unwrap();
    let kinds: Vec<_> = found.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, [ObservationType::Intent, ObservationType::Plan]);
}

#[test]
fn stored_json_is_exactly_the_observations_json() {
    use art_types::{Phase, SpanInfo};
    let full = Observation {
        id: "o\"1".into(),
        thread_id: "t".into(),
        trace_id: "r\n".into(),
        timestamp: 42,
        kind: ObservationType::ToolExecution,
        title: "Tool: \"calc\"".into(),
        content: serde_json::json!({ "z": 1, "a": [1.5, "x\u{1}"], "nested": { "b": null } }),
        metadata: serde_json::json!({ "model": "m" }),
        span: Some(SpanInfo {
            phase: Phase::Execution,
            span_id: "s".into(),
            parent_span_id: None,
            start_ms: 40,
            end_ms: Some(42),
        }),
    };
    let bare = Observation {
        metadata: Value::Null,
        span: None,
        ..full.clone()
    };
    for o in [full, bare] {
        let stored = StoredObservation(to_record(&o).unwrap());
        let mut fast = String::new();
        stored.write_json(&mut fast).unwrap();
        assert_eq!(fast, serde_json::to_string(&o).unwrap());
        assert_eq!(stored.decode().unwrap(), o);
    }
    // A body of the older shape (the whole observation) takes the slow path, same text.
    let o = Observation {
        id: "o2".into(),
        thread_id: "t".into(),
        trace_id: "r".into(),
        timestamp: 1,
        kind: ObservationType::Plan,
        title: "Plan".into(),
        content: serde_json::json!("steps"),
        metadata: Value::Null,
        span: None,
    };
    let mut record = to_record(&o).unwrap();
    record.body = serde_json::to_string(&o).unwrap();
    let mut slow = String::new();
    StoredObservation(record).write_json(&mut slow).unwrap();
    assert_eq!(slow, serde_json::to_string(&o).unwrap());
}
