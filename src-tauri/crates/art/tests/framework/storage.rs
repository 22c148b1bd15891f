//! Storage conformance: the SQLite file store and the in-memory store behave the same.
//! SQLite runs on a real file in a temp dir; reopening it proves persistence.

use art::storage::ledger::{UsageKey, UsageQuery, UsageRecord};
use art::storage::memory::MemoryStorage;
use art::storage::sqlite::{SqliteStorage, integrity_check};
use art::storage::{Collection, Order, Query, Record, StorageAdapter, StorageError};
use serde_json::json;

fn message(id: &str, thread: &str, ts: i64, text: &str) -> Record {
    Record {
        id: id.into(),
        thread_id: Some(thread.into()),
        trace_id: Some(format!("trace-{thread}")),
        kind: Some("USER".into()),
        timestamp: ts,
        search_text: Some(text.into()),
        body: json!({ "content": text }).to_string(),
        parent: None,
    }
}

fn observation(id: &str, thread: &str, ts: i64, kind: &str) -> Record {
    Record {
        id: id.into(),
        thread_id: Some(thread.into()),
        trace_id: Some("run-1".into()),
        kind: Some(kind.into()),
        timestamp: ts,
        search_text: None,
        body: json!({ "type": kind }).to_string(),
        parent: None,
    }
}

fn ids(records: &[Record]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

async fn conformance(store: &dyn StorageAdapter) {
    // set / get / upsert keeps one record
    store
        .set(
            Collection::Messages,
            vec![message("m1", "t1", 10, "hello brave world")],
        )
        .await
        .unwrap();
    store
        .set(
            Collection::Messages,
            vec![message("m1", "t1", 10, "hello brave new world")],
        )
        .await
        .unwrap();
    let got = store
        .get(Collection::Messages, "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&got.body).unwrap()["content"],
        "hello brave new world"
    );
    assert_eq!(got.thread_id.as_deref(), Some("t1"));
    assert!(
        store
            .get(Collection::Observations, "m1")
            .await
            .unwrap()
            .is_none()
    );

    // query: filters, order, limit, before / after
    store
        .set(
            Collection::Messages,
            vec![
                message("m2", "t1", 20, "second message"),
                message("m3", "t1", 30, "third message about rust"),
                message("x1", "t2", 15, "other thread rust"),
            ],
        )
        .await
        .unwrap();
    let t1 = store
        .query(Collection::Messages, &Query::thread("t1"))
        .await
        .unwrap();
    assert_eq!(ids(&t1), ["m1", "m2", "m3"]);
    let last_two = Query {
        order: Order::Descending,
        limit: Some(2),
        ..Query::thread("t1")
    };
    assert_eq!(
        ids(&store.query(Collection::Messages, &last_two).await.unwrap()),
        ["m3", "m2"]
    );
    let before = Query {
        before: Some(30),
        after: Some(10),
        ..Query::thread("t1")
    };
    assert_eq!(
        ids(&store.query(Collection::Messages, &before).await.unwrap()),
        ["m2"]
    );

    // links: a thread's tree without bodies; records by id
    store
        .set(
            Collection::Messages,
            vec![Record {
                parent: Some("m2".into()),
                ..message("m4", "t1", 30, "an alternative to m3")
            }],
        )
        .await
        .unwrap();
    let links = store.links(Collection::Messages, "t1").await.unwrap();
    let tree: Vec<(&str, Option<&str>, i64)> = links
        .iter()
        .map(|l| (l.id.as_str(), l.parent.as_deref(), l.timestamp))
        .collect();
    assert_eq!(
        tree,
        [
            ("m1", None, 10),
            ("m2", None, 20),
            ("m3", None, 30),
            ("m4", Some("m2"), 30)
        ]
    );
    assert_eq!(links[0].kind.as_deref(), Some("USER"));
    let by_id = Query {
        ids: vec!["m4".into(), "x1".into(), "m1".into(), "gone".into()],
        ..Query::default()
    };
    let found = store.query(Collection::Messages, &by_id).await.unwrap();
    assert_eq!(ids(&found), ["m1", "x1", "m4"]);
    assert_eq!(found[2].parent.as_deref(), Some("m2"));
    assert!(store.delete(Collection::Messages, "m4").await.unwrap());

    // the usage ledger: a run once, sums grouped and filtered
    let run = |trace: &str, thread: &str, model: &str, day: &str, cost: Option<u64>| UsageRecord {
        trace_id: trace.into(),
        thread_id: thread.into(),
        provider: "p".into(),
        model: model.into(),
        day: day.into(),
        started_at: 1,
        duration_ms: 10,
        input_tokens: 100,
        cached_input_tokens: 5,
        output_tokens: 20,
        thinking_tokens: 3,
        cost_nanos: cost,
    };
    store
        .record_usage(vec![
            run("r1", "t1", "a", "2026-11-01", Some(7)),
            run("r2", "t1", "b", "2026-11-02", None),
            run("r3", "t2", "a", "2026-11-02", None),
        ])
        .await
        .unwrap();
    store
        .record_usage(vec![run("r1", "t1", "a", "2026-11-01", Some(7))])
        .await
        .unwrap();
    let by_model = UsageQuery {
        group: vec![UsageKey::Model],
        ..UsageQuery::default()
    };
    let sums = store.usage(&by_model).await.unwrap();
    let summed: Vec<(Vec<String>, u64, u64, u64, u64, u64)> = sums
        .iter()
        .map(|s| {
            let unreported = (s.unreported_input_tokens, s.unreported_output_tokens);
            (
                s.keys.clone(),
                s.runs,
                s.input_tokens,
                s.reported_cost_nanos,
                unreported.0,
                unreported.1,
            )
        })
        .collect();
    assert_eq!(
        summed,
        [
            (vec!["a".to_owned()], 2, 200, 7, 100, 23),
            (vec!["b".to_owned()], 1, 100, 0, 100, 23)
        ]
    );
    let since = UsageQuery {
        group: vec![UsageKey::Day, UsageKey::Thread],
        since_day: Some("2026-11-02".into()),
        thread_id: Some("t1".into()),
    };
    let sums = store.usage(&since).await.unwrap();
    assert_eq!(sums.len(), 1);
    assert_eq!(sums[0].keys, ["2026-11-02", "t1"]);
    assert_eq!(
        (
            sums[0].runs,
            sums[0].cached_input_tokens,
            sums[0].duration_ms
        ),
        (1, 5, 10)
    );
    let everything = store.usage(&UsageQuery::default()).await.unwrap();
    assert_eq!(everything[0].runs, 3);

    // observations by kind and trace
    store
        .set(
            Collection::Observations,
            vec![
                observation("o1", "t1", 1, "PLAN"),
                observation("o2", "t1", 2, "TOOL_EXECUTION"),
                observation("o3", "t1", 3, "ERROR"),
            ],
        )
        .await
        .unwrap();
    let kinds = Query {
        kinds: vec!["PLAN".into(), "ERROR".into()],
        trace_ids: vec!["run-1".into()],
        ..Query::thread("t1")
    };
    assert_eq!(
        ids(&store.query(Collection::Observations, &kinds).await.unwrap()),
        ["o1", "o3"]
    );

    // several runs at once (a page of history asks for the runs of its messages only)
    let runs: Vec<Record> = (0..6)
        .map(|i| Record {
            trace_id: Some(format!("page-run-{}", i % 3)),
            ..observation(&format!("p{i}"), "t4", 50 + i, "PLAN")
        })
        .collect();
    store.set(Collection::Observations, runs).await.unwrap();
    let two_runs = Query {
        trace_ids: vec!["page-run-0".into(), "page-run-2".into(), "unknown".into()],
        ..Query::thread("t4")
    };
    assert_eq!(
        ids(&store
            .query(Collection::Observations, &two_runs)
            .await
            .unwrap()),
        ["p0", "p2", "p3", "p5"]
    );
    // counted, and scanned in batches in the same order (an export reads this way)
    assert_eq!(
        store
            .count(Collection::Observations, &two_runs)
            .await
            .unwrap(),
        4
    );
    let mut scan = store.scan(Collection::Observations, two_runs.clone(), 3);
    let mut batches = Vec::new();
    while let Some(batch) = scan.recv().await {
        batches.push(ids(&batch.unwrap()).join(","));
    }
    assert_eq!(batches, ["p0,p2,p3", "p5"]);
    // a consumer that stops early just drops the stream
    let mut scan = store.scan(Collection::Observations, Query::thread("t4"), 1);
    assert_eq!(scan.recv().await.unwrap().unwrap().len(), 1);
    drop(scan);
    store.delete_thread("t4").await.unwrap();

    // a burst of observations (written in multi-row chunks plus a remainder) all land,
    // in order, and a repeated id in the same burst replaces the earlier row
    let mut burst: Vec<Record> = (0..150)
        .map(|i| observation(&format!("b{i:03}"), "t3", 100 + i, "THOUGHTS"))
        .collect();
    let mut again = burst[10].clone();
    again.kind = Some("PLAN".into());
    burst.push(again);
    store.set(Collection::Observations, burst).await.unwrap();
    let t3 = store
        .query(Collection::Observations, &Query::thread("t3"))
        .await
        .unwrap();
    let expected: Vec<String> = (0..150).map(|i| format!("b{i:03}")).collect();
    assert_eq!(ids(&t3), expected);
    assert_eq!(t3[10].kind.as_deref(), Some("PLAN"));
    // app ids (UUIDs, stored compactly by SQLite) read back, get and delete as text
    let uuid = art::clock::new_id();
    let app = observation(&uuid, "t3", 999, "PLAN");
    store
        .set(Collection::Observations, vec![app.clone()])
        .await
        .unwrap();
    let got = store.get(Collection::Observations, &uuid).await.unwrap();
    assert_eq!(got.map(|r| r.id), Some(uuid.clone()));
    let last = Query {
        order: Order::Descending,
        limit: Some(1),
        ..Query::thread("t3")
    };
    let newest = store.query(Collection::Observations, &last).await.unwrap();
    assert_eq!(ids(&newest), [uuid.as_str()]);
    assert!(store.delete(Collection::Observations, &uuid).await.unwrap());
    store.delete_thread("t3").await.unwrap();

    // an observation reads back with its thread and run; an upsert replaces it in place;
    // observations are never full-text indexed (tool calls are found through their TOOL
    // messages); one can be deleted by id
    let mut tool = observation("o4", "t2", 4, "TOOL_CALL");
    tool.search_text = Some("calculator 2+2 zebra".into());
    store
        .set(Collection::Observations, vec![tool.clone()])
        .await
        .unwrap();
    assert!(store.search("zebra", 10).await.unwrap().is_empty());
    tool.kind = Some("TOOL_EXECUTION".into());
    tool.body = r#"{"replaced":true}"#.into();
    store
        .set(Collection::Observations, vec![tool.clone()])
        .await
        .unwrap();
    let got = store
        .get(Collection::Observations, "o4")
        .await
        .unwrap()
        .unwrap();
    let fields = |r: &Record| {
        let ids = (r.thread_id.clone(), r.trace_id.clone(), r.kind.clone());
        (ids, r.timestamp, r.body.clone())
    };
    assert_eq!(fields(&got), fields(&tool));
    let t2 = store
        .query(Collection::Observations, &Query::thread("t2"))
        .await
        .unwrap();
    assert_eq!(ids(&t2), ["o4"], "replaced, not duplicated");
    assert!(store.delete(Collection::Observations, "o4").await.unwrap());
    assert!(!store.delete(Collection::Observations, "o4").await.unwrap());

    // search: prefix words, all required, across threads
    let hits = store.search("rus", 10).await.unwrap();
    let mut hit_ids: Vec<_> = hits.iter().map(|h| h.id.as_str()).collect();
    hit_ids.sort_unstable();
    assert_eq!(hit_ids, ["m3", "x1"]);
    let hits = store.search("third RUST", 10).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].thread_id.as_deref(), Some("t1"));
    assert!(
        hits[0].snippet.to_lowercase().contains("rust"),
        "{}",
        hits[0].snippet
    );
    // Old text is no longer indexed after an upsert; hostile syntax is just words.
    assert!(
        store
            .search("\"brave\" AND", 10)
            .await
            .unwrap()
            .iter()
            .all(|h| h.id == "m1")
    );
    assert!(matches!(
        store.search("  ", 10).await,
        Err(StorageError::InvalidSearch(_))
    ));

    // delete one, then cascade a thread
    assert!(store.delete(Collection::Messages, "m2").await.unwrap());
    assert!(!store.delete(Collection::Messages, "m2").await.unwrap());
    store.delete_thread("t1").await.unwrap();
    assert!(
        store
            .query(Collection::Messages, &Query::thread("t1"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .query(Collection::Observations, &Query::thread("t1"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.search("third", 10).await.unwrap().is_empty());
    assert_eq!(
        store
            .query(Collection::Messages, &Query::thread("t2"))
            .await
            .unwrap()
            .len(),
        1
    );

    // clear
    store
        .set(
            Collection::Observations,
            vec![observation("o5", "t2", 5, "PLAN")],
        )
        .await
        .unwrap();
    store.clear(Collection::Observations).await.unwrap();
    assert!(
        store
            .query(Collection::Observations, &Query::default())
            .await
            .unwrap()
            .is_empty()
    );
    store.clear(Collection::Messages).await.unwrap();
    assert!(
        store
            .query(Collection::Messages, &Query::default())
            .await
            .unwrap()
            .is_empty()
    );

    swaps(store).await;
}

/// Compare and swap: written only over the body expected, removed the same way.
async fn swaps(store: &dyn StorageAdapter) {
    let claim = |body: &str| Record {
        body: body.into(),
        ..message("t9", "t9", 1, "")
    };
    let swap = |expected: Option<&'static str>, new: Option<Record>| async move {
        store
            .swap(Collection::ActiveRuns, "t9", expected, new)
            .await
            .unwrap()
    };
    let body = || async {
        store
            .get(Collection::ActiveRuns, "t9")
            .await
            .unwrap()
            .map(|r| r.body)
    };
    assert!(
        swap(None, Some(claim("{\"a\":1}"))).await,
        "absent as expected"
    );
    assert!(!swap(None, Some(claim("{\"b\":1}"))).await, "present now");
    assert!(!swap(Some("{\"x\":1}"), Some(claim("{\"b\":1}"))).await);
    assert_eq!(
        body().await.as_deref(),
        Some("{\"a\":1}"),
        "lost swaps change nothing"
    );
    assert!(swap(Some("{\"a\":1}"), Some(claim("{\"b\":1}"))).await);
    assert!(
        !swap(Some("{\"a\":1}"), None).await,
        "stale removal refused"
    );
    assert!(swap(Some("{\"b\":1}"), None).await);
    assert_eq!(body().await, None);
    let refused = store
        .swap(
            Collection::ActiveRuns,
            "t9",
            None,
            Some(claim("{}")).map(|r| Record {
                id: "other".into(),
                ..r
            }),
        )
        .await;
    assert!(refused.is_err(), "a record under another id");
    let refused = store.swap(Collection::Observations, "o1", None, None).await;
    assert!(refused.is_err(), "observations are never swapped");
}

#[tokio::test]
async fn memory_store_conforms() {
    conformance(&MemoryStorage::new()).await;
}

#[tokio::test]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap();
    conformance(&store).await;
}

#[tokio::test]
async fn sqlite_data_survives_reopen_and_passes_integrity_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("art.sqlite3");
    {
        let store = SqliteStorage::open(&path).unwrap();
        store
            .set(
                Collection::Messages,
                vec![message("m1", "t1", 1, "persist me")],
            )
            .await
            .unwrap();
    }
    integrity_check(&path).unwrap();
    // Closing checkpointed everything into the database file and truncated the WAL.
    let wal = std::fs::metadata(dir.path().join("art.sqlite3-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "WAL left behind on close");
    let store = SqliteStorage::open(&path).unwrap();
    let got = store
        .get(Collection::Messages, "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&got.body).unwrap()["content"],
        "persist me"
    );
    assert_eq!(store.search("persist", 5).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_are_batched_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
    let mut tasks = Vec::new();
    for task in 0..8 {
        let store = std::sync::Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                let id = format!("o-{task}-{i}");
                store
                    .set(
                        Collection::Observations,
                        vec![observation(&id, "t", i, "THOUGHTS")],
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let all = store
        .query(Collection::Observations, &Query::thread("t"))
        .await
        .unwrap();
    assert_eq!(all.len(), 400);
}

#[test]
fn a_corrupt_file_is_a_clear_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("art.sqlite3");
    std::fs::write(
        &path,
        b"this is not a database, just text padding it out ..........",
    )
    .unwrap();
    let err = SqliteStorage::open(&path).err().expect("must refuse");
    assert!(
        err.to_string().contains("cannot open the database"),
        "{err}"
    );
}
