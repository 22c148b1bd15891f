//! Attachments: what a file adds between "send" and the request reaching the provider,
//! through the whole stack (the agent, the Ollama adapter, HTTP to a fake server on
//! this machine, which notes when each chat request has arrived whole), and PDF pages
//! extracted per second. Fixed inputs: a 4,000 × 3,000 JPEG of 3.3 MB made the same
//! way every time, `tests/fixtures/documents/ghostscript-hundred-pages.pdf` (100 pages of
//! 40 lines) and the pdfTeX fixture. Budgets: ≤ 150 ms added for the photo, ≥ 200 pages/s.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::attachments::{Attachments, BlobStore, document, sniff::Format};
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::secrets::MemoryStore;
use art::storage::sqlite::SqliteStorage;
use art_testkit::bench::{Budget, Figure, Results};
use art_testkit::fake::scripts::{Protocol, text_reply};
use art_testkit::fake::{FakeServer, Reply};
use art_testkit::framework::adapters as wire;
use art_types::Attachment;

use crate::framework::{ms, runtime};

const RUNS: usize = 15;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/documents")
        .join(name)
}

/// A 4,000 × 3,000 photo-like JPEG (noise over gradients: it compresses as a photo
/// does, to 3.3 MB), the same bytes every time.
fn photo() -> Vec<u8> {
    let mut seed: u32 = 0x2545_F491;
    let image = image::RgbImage::from_fn(4000, 3000, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let noise = (seed % 16) as u8;
        image::Rgb([
            ((x / 16) as u8).wrapping_add(noise),
            ((y / 12) as u8).wrapping_add(noise / 2),
            (((x + y) / 28) as u8).wrapping_add(noise),
        ])
    });
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 92);
    image::DynamicImage::ImageRgb8(image)
        .write_with_encoder(encoder)
        .unwrap();
    out
}

/// When each chat request arrived whole at the fake server.
type Arrivals = Arc<Mutex<Vec<Instant>>>;

/// A fake Ollama answering `runs` runs (no tools: each one call, the answer), noting
/// arrivals.
async fn server(runs: usize, arrivals: Arrivals) -> FakeServer {
    let replies: Vec<Reply> = (0..runs)
        .map(|_| text_reply(Protocol::Ollama, "Seen.", 64))
        .collect();
    let router = Box::new(move |request: &art_testkit::fake::Recorded| {
        if request.request_line.contains("/api/chat") {
            arrivals.lock().unwrap().push(Instant::now());
        }
        // Model details and the scripted replies answer.
        None
    });
    FakeServer::start_at(0, Some(router), replies)
        .await
        .unwrap()
}

/// What is attached, and when.
enum Given {
    Nothing,
    /// Attached before "send" (the app: when the file is picked).
    Before(Attachment),
    /// Attached at "send" (`art run --attach`): read, checked, extracted, stored.
    AtSend(PathBuf),
}

/// Send → the first chat request arrived, for `RUNS` runs of `given`.
fn send_to_request(given: &dyn Fn(&Arc<Attachments>) -> Given) -> Vec<Duration> {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let arrivals: Arrivals = Arc::default();
    rt.block_on(async {
        let server = server(RUNS + 1, Arc::clone(&arrivals)).await;
        let store = Arc::new(
            Attachments::open(dir.path().join("attachments"), BlobStore::DEFAULT_LIMIT).unwrap(),
        );
        let providers = Arc::new(ProviderManager::new(
            builtin_entries(),
            Arc::new(BuiltinFactory::default()),
            Arc::new(MemoryStore::new()),
            ManagerOptions::default(),
        ));
        let storage = Arc::new(SqliteStorage::open(dir.path().join("art.sqlite3")).unwrap());
        let art = ArtInstance::builder(storage, providers)
            .attachments(Arc::clone(&store))
            .build()
            .unwrap();
        let mut times = Vec::new();
        // The first run warms up (connection, model details asked once per adapter).
        for i in 0..=RUNS {
            let thread = wire::thread_at(&art, "ollama", "llava", &server.url(), &[]).await;
            // Room for the 100 pages (the fake model reports 32,768 tokens).
            let mut config = art.state.thread_config(&thread).await.unwrap();
            config.context_window = Some(1_000_000);
            art.state.set_thread_config(&thread, &config).await.unwrap();
            let given = given(&store);
            let before = arrivals.lock().unwrap().len();
            let sent = Instant::now();
            let mut props = wire::ask(&thread, "What is in it?");
            props.attachments = match given {
                Given::Nothing => Vec::new(),
                Given::Before(attachment) => vec![attachment],
                Given::AtSend(path) => {
                    let store = Arc::clone(&store);
                    vec![
                        tokio::task::spawn_blocking(move || store.add_file(&path))
                            .await
                            .unwrap()
                            .unwrap(),
                    ]
                }
            };
            let out = art.process(props, CancellationToken::new()).await.unwrap();
            assert!(out.metadata.error.is_none(), "{:?}", out.metadata.error);
            let arrived = arrivals.lock().unwrap()[before];
            if i > 0 {
                times.push(arrived - sent);
            }
        }
        times
    })
}

/// The `art` command line as a user runs it: from the process being started to the fake
/// Ollama having read the first chat request whole, for `RUNS` runs each without and
/// with `photo` attached (taken in turns, so that a drift of the machine touches both;
/// the first of each a warm-up). Every run starts a new thread in one data directory.
fn cli_send_to_request(cli: &Path, photo: &Path) -> (Vec<Duration>, Vec<Duration>) {
    let rt = runtime();
    let data = tempfile::tempdir().unwrap();
    let arrivals: Arrivals = Arc::default();
    let server = rt.block_on(server(2 * (RUNS + 1), Arc::clone(&arrivals)));
    let url = server.url();
    let (mut bare, mut attached) = (Vec::new(), Vec::new());
    for i in 0..=RUNS {
        for with_photo in [false, true] {
            let mut art = std::process::Command::new(cli);
            art.arg("--data-dir")
                .arg(data.path())
                .args(["run", "--new", &format!("run {i}"), "--provider", "ollama"])
                .args(["--model", "llava", "--base-url", &url, "--approve", "none"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            if with_photo {
                art.arg("--attach").arg(photo);
            }
            art.arg("What is in it?");
            let before = arrivals.lock().unwrap().len();
            let started = Instant::now();
            let status = art.status().unwrap();
            assert!(status.success(), "art run: {status}");
            let arrived = arrivals.lock().unwrap()[before];
            if i > 0 {
                let times = if with_photo { &mut attached } else { &mut bare };
                times.push(arrived - started);
            }
        }
    }
    drop(server);
    (bare, attached)
}

/// Median of `values`.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// Pages per second extracting `pdf` (`pages` pages), once per run.
fn pages_per_second(pdf: &Path) -> (Vec<f64>, u32) {
    let bytes = std::fs::read(pdf).unwrap();
    let pages = document::extract("bench.pdf", Format::Pdf, &bytes)
        .unwrap()
        .pages
        .unwrap();
    let rates = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let text = document::extract("bench.pdf", Format::Pdf, &bytes).unwrap();
            assert!(!text.text.is_empty());
            f64::from(pages) / started.elapsed().as_secs_f64()
        })
        .collect();
    (rates, pages)
}

pub fn run() -> Result<(), String> {
    let mut results = Results::new("attachments", "cargo xtask bench attachments");
    let photo = photo();
    let photo_mb = photo.len() as f64 / 1e6;
    let files = tempfile::tempdir().map_err(|e| e.to_string())?;
    let photo_path = files.path().join("photo.jpg");
    std::fs::write(&photo_path, &photo).map_err(|e| e.to_string())?;
    let hundred = fixture("ghostscript-hundred-pages.pdf");

    eprintln!("  send → request: no attachment");
    let bare = ms(&send_to_request(&|_| Given::Nothing));
    eprintln!("  send → request: the photo, attached before");
    let bytes = photo.clone();
    let before = ms(&send_to_request(&move |store| {
        Given::Before(store.add_bytes("photo.jpg", &bytes).unwrap())
    }));
    eprintln!("  `art run` → request: without and with the photo");
    let cli = PathBuf::from(std::env::var("ART_CLI").map_err(|_| "ART_CLI is not set")?);
    let (cli_bare, cli_photo) = cli_send_to_request(&cli, &photo_path);
    let (cli_bare, cli_photo) = (ms(&cli_bare), ms(&cli_photo));
    eprintln!("  send → request: the 100-page PDF, attached at send");
    let pdf_path = hundred.clone();
    let pdf_at_send = ms(&send_to_request(&move |_| Given::AtSend(pdf_path.clone())));
    let floor = median(&bare);
    let added = |values: &[f64]| values.iter().map(|v| v - floor).collect::<Vec<_>>();
    results.add(Figure::new(
        "attachments/send_to_request_bare",
        "Send → request at the provider, no attachment (the floor)",
        "ms",
        bare,
    ));
    results.add(
        Figure::new(
            "attachments/photo_added_attached_before",
            &format!(
                "Added by a {photo_mb:.1} MB 4000×3000 photo attached before sending (the app)"
            ),
            "ms",
            added(&before),
        )
        .budget(Budget::AtMost(150.0)),
    );
    results.add(Figure::new(
        "attachments/cli_send_to_request_bare",
        "`art run` started → request at the provider, no attachment (the command line's floor)",
        "ms",
        cli_bare.clone(),
    ));
    let cli_floor = median(&cli_bare);
    results.add(
        Figure::new(
            "attachments/photo_added_at_send",
            "Added by the same photo given to `art run --attach` (read, decoded, scaled, stored)",
            "ms",
            cli_photo.iter().map(|v| v - cli_floor).collect(),
        )
        .budget(Budget::AtMost(150.0)),
    );
    results.add(Figure::new(
        "attachments/pdf100_added_at_send",
        "Added by a 100-page PDF attached at send (extraction included)",
        "ms",
        added(&pdf_at_send),
    ));
    let (ghostscript, pages) = pages_per_second(&hundred);
    results.add(
        Figure::new(
            "attachments/pdf_pages_per_s_ghostscript",
            &format!("PDF text extracted, ghostscript, {pages} pages"),
            "pages/s",
            ghostscript,
        )
        .budget(Budget::AtLeast(200.0)),
    );
    let (pdftex, pages) = pages_per_second(&fixture("pdftex-shared-mime-info.pdf"));
    results.add(
        Figure::new(
            "attachments/pdf_pages_per_s_pdftex",
            &format!("PDF text extracted, pdfTeX, {pages} pages"),
            "pages/s",
            pdftex,
        )
        .budget(Budget::AtLeast(200.0)),
    );
    results.note(
        "Send → request: from `ArtInstance::process` being called to the fake Ollama having \
         read the first chat request whole (local TCP, release build, a new thread per \
         run, the first run a warm-up); \"added\" is each run less the median without an \
         attachment. The photo is sent as the 1568 × 1176 JPEG copy made when it is \
         attached; the request carries it base64 twice over (planning, then the answer: \
         only the first is timed). `art run`: the release command line as a process, from \
         its start to the same request (a new thread each run; runs without and with the \
         photo taken in turns); the photo is read while the data directory opens.",
    );
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}
