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
