use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use art_testkit::hub::Hub;
use sha2::{Digest, Sha256};

use super::*;

/// A small model: a config (served at once) and a "weights" file large enough to go
/// through the CDN hop, in 8 pieces.
fn small_model() -> (Model, Vec<(String, Vec<u8>)>) {
    let config = br#"{"hidden_size": 4}"#.to_vec();
    let weights: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let file = |name: &'static str, bytes: &[u8]| File {
        name,
        size: bytes.len() as u64,
        sha256: Box::leak(
            Sha256::digest(bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .into_boxed_str(),
        ),
    };
    let files = vec![
        file("config.json", &config),
        file("model.safetensors", &weights),
    ];
    let model = Model {
        repo: "tiny/model",
        revision: "main",
        files: Box::leak(files.into_boxed_slice()),
    };
    let served = vec![
        ("config.json".to_owned(), config),
        ("model.safetensors".to_owned(), weights),
    ];
    (model, served)
}

fn never() -> bool {
    false
}

/// Progress as reported: every (done, total).
#[derive(Default)]
struct Seen(Mutex<Vec<(u64, u64)>>);

impl Seen {
    fn hear(&self, done: u64, total: u64) {
        self.0.lock().unwrap().push((done, total));
    }

    fn all(&self) -> Vec<(u64, u64)> {
        self.0.lock().unwrap().clone()
    }
}

fn ranges(hub: &Hub) -> Vec<String> {
    hub.requests()
        .iter()
        .filter_map(|r| r.header("range").map(str::to_owned))
        .collect()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".part"))
        .collect()
}

#[tokio::test]
async fn the_real_weights_come_through_the_hub_api_checked_and_loadable() {
    let weights = art_testkit::embedder::weights_dir();
    let names: Vec<&str> = MINILM.files.iter().map(|f| f.name).collect();
    let hub = Hub::serving(MINILM.repo, &weights, &names).await;
    let dir = tempfile::tempdir().unwrap();
    let seen = Seen::default();
    fetch(
        &MINILM,
        &hub.url(),
        dir.path(),
        &|d, t| seen.hear(d, t),
        &never,
    )
    .await
    .unwrap();
    assert!(MINILM.is_in(dir.path()));
    assert!(leftovers(dir.path()).is_empty());
    let seen = seen.all();
    assert!(
        seen.windows(2).all(|w| w[0].0 <= w[1].0),
        "progress only grows"
    );
    assert_eq!(seen.last(), Some(&(MINILM.size(), MINILM.size())));
    // The weights went through the CDN hop.
    let lines: Vec<String> = hub
        .requests()
        .iter()
        .map(|r| r.request_line.clone())
        .collect();
    assert!(lines.iter().any(|l| l.starts_with(
        "GET /sentence-transformers/all-MiniLM-L6-v2/resolve/main/model.safetensors"
    )));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("GET /cdn/model.safetensors"))
    );
    super::super::minilm::MiniLm::load(dir.path()).unwrap();

    // Already there: nothing is fetched again.
    let before = hub.requests().len();
    fetch(&MINILM, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap();
    assert_eq!(hub.requests().len(), before);
}

#[tokio::test]
async fn a_transfer_cut_halfway_resumes_with_a_range() {
    let (model, files) = small_model();
    let hub = Hub::start(model.repo, files).await;
    hub.cut_next(2);
    let dir = tempfile::tempdir().unwrap();
    fetch(&model, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap();
    assert!(model.is_in(dir.path()));
    let ranges = ranges(&hub);
    assert!(!ranges.is_empty(), "resumed, not restarted");
    assert!(
        ranges
            .iter()
            .all(|r| r.starts_with("bytes=") && r != "bytes=0-")
    );
}

#[tokio::test]
async fn a_stopped_download_keeps_its_part_and_the_next_one_resumes_it() {
    let (model, files) = small_model();
    let hub = Hub::start(model.repo, files).await;
    let dir = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let progress = |done: u64, _| {
        if done > 100 {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let stopped = fetch(&model, &hub.url(), dir.path(), &progress, &|| {
        stop.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(stopped, Err(DownloadError::Stopped));
    assert!(!dir.path().join("model.safetensors").exists());
    let part = std::fs::metadata(dir.path().join("model.safetensors.part"))
        .unwrap()
        .len();
    assert!(part > 0);
    fetch(&model, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap();
    assert!(model.is_in(dir.path()));
    // Asked of the hub and of the CDN it sends on to, from where the part ends.
    assert_eq!(
        ranges(&hub),
        [format!("bytes={part}-"), format!("bytes={part}-")]
    );
    assert!(leftovers(dir.path()).is_empty());
}

#[tokio::test]
async fn a_corrupted_file_is_deleted_and_fetched_again_once() {
    let (model, files) = small_model();
    let hub = Hub::start(model.repo, files.clone()).await;
    hub.corrupt_next(1);
    let dir = tempfile::tempdir().unwrap();
    fetch(&model, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap();
    assert!(model.is_in(dir.path()));

    let hub = Hub::start(model.repo, files).await;
    hub.corrupt_always();
    let dir = tempfile::tempdir().unwrap();
    let err = fetch(&model, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DownloadError::Corrupt { file, .. } if file == "config.json"),
        "{err}"
    );
    assert!(err.to_string().contains("did not match its SHA-256"));
    // Nothing corrupt is left to be loaded, nor a part to be resumed.
    assert!(!dir.path().join("config.json").exists());
    assert!(leftovers(dir.path()).is_empty());
}

#[tokio::test]
async fn offline_missing_and_changed_files_are_said_plainly() {
    let (model, files) = small_model();
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: refused at once, said with the words-only fallback.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let err = fetch(&model, &url, dir.path(), &|_, _| {}, &never)
        .await
        .unwrap_err();
    assert!(matches!(err, DownloadError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("use words only"), "{err}");

    let hub = Hub::start("another/repo", files.clone()).await;
    let err = fetch(&model, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap_err();
    assert!(
        matches!(err, DownloadError::Refused { status: 404, .. }),
        "{err}"
    );
    assert_eq!(hub.requests().len(), 1, "a 404 is not retried");

    let hub = Hub::start(model.repo, files).await;
    hub.state_other_hashes();
    let err = fetch(&model, &hub.url(), dir.path(), &|_, _| {}, &never)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DownloadError::Changed { file, .. } if file == "model.safetensors"),
        "{err}"
    );
    assert!(!dir.path().join("model.safetensors").exists());
}
