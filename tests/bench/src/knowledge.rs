//! Knowledge: how well and how fast the agent's `search_knowledge` finds the passage that
//! answers a question, over a real public corpus — the Debian Reference (Debian's
//! `debian-reference-en`, its whole-book PDF), which `cargo xtask bench knowledge`
//! unpacks into `target/` — with the 52 questions of `tests/bench/knowledge/
//! questions.json`, each with a phrase found once in the book that its answer contains.
//! A passage answers a question when its text contains that phrase (case and spacing
//! aside), whoever cut it.
//!
//! Figures: ingestion (pages per second, read and embedded), recall@5 and MRR for words
//! (BM25) alone, vectors alone and the hybrid the tool runs, the hybrid's query latency,
//! and a query over 100,000 passages (embedding the question included).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use art::knowledge::chunk::Chunk;
use art::knowledge::embed::minilm::{DIMENSION, MODEL, MiniLm};
use art::knowledge::embed::{Embedder, embed_waiting};
use art::knowledge::store::Read;
use art::knowledge::{DATABASE_FILE, KnowledgeStore, add, index_next};
use art_testkit::bench::{Budget, Figure, Results};

/// Passages a search returns, as the agent's tool does by default.
const K: usize = 5;

/// Passages in the scale test.
const SCALE: usize = 100_000;

/// One question and the phrase its answer contains.
#[derive(serde::Deserialize)]
struct Question {
    q: String,
    a: String,
}

/// Lower case, every run of white space one space, typographic quotes plain.
fn normal(text: &str) -> String {
    text.replace(['“', '”'], "\"")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The book, where xtask unpacked it (or `ART_BENCH_CORPUS`).
fn corpus() -> Result<PathBuf, String> {
    let path = std::env::var_os("ART_BENCH_CORPUS").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(
                "../../target/bench-corpus/usr/share/debian-reference/debian-reference.en.pdf",
            )
        },
        PathBuf::from,
    );
    path.is_file().then_some(path.clone()).ok_or_else(|| {
        format!(
            "the corpus is not at {}: run `cargo xtask bench knowledge`",
            path.display()
        )
    })
}

fn questions() -> Result<Vec<Question>, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("knowledge/questions.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Recall@K and mean reciprocal rank of ranked passage texts against the answers.
fn score(ranked: &[Vec<String>], questions: &[Question]) -> (f64, f64) {
    let mut found = 0.0;
    let mut reciprocal = 0.0;
    for (texts, question) in ranked.iter().zip(questions) {
        let answer = normal(&question.a);
        if let Some(rank) = texts.iter().position(|t| normal(t).contains(&answer)) {
            found += 1.0;
            reciprocal += 1.0 / (rank as f64 + 1.0);
        }
    }
    let n = questions.len() as f64;
    (found / n, reciprocal / n)
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub fn run() -> Result<(), String> {
    let mut results = Results::new("knowledge", "cargo xtask bench knowledge");
    let book = corpus()?;
    let questions = questions()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store = KnowledgeStore::open(&dir.path().join(DATABASE_FILE)).map_err(|e| e.to_string())?;
    let collection = store
        .create("Debian Reference")
        .map_err(|e| e.to_string())?;
    let weights = art_testkit::embedder::weights_dir();

    // Ingestion: read and cut (searchable by words), then embedded (by meaning).
    eprintln!("  reading {}", book.display());
    let started = Instant::now();
    add(&store, &collection.id, std::slice::from_ref(&book), false).map_err(|e| e.to_string())?;
    while index_next(&store).map_err(|e| e.to_string())?.is_some() {}
    let read = started.elapsed().as_secs_f64();
    let document = store
        .documents(&collection.id)
        .map_err(|e| e.to_string())?
        .remove(0);
    let pages = f64::from(document.pages.unwrap_or(0));
    eprintln!(
        "  {pages} pages, {} passages in {read:.1} s; embedding",
        document.chunks
    );
    let loaded = Instant::now();
    let embedder: Arc<dyn Embedder> = Arc::new(MiniLm::load(&weights).map_err(|e| e.to_string())?);
    let load = loaded.elapsed().as_secs_f64();
    let embedding = Instant::now();
    embed_waiting(&store, embedder.as_ref(), |_, _| {}, || true).map_err(|e| e.to_string())?;
    let embed = embedding.elapsed().as_secs_f64();
    store.set_embedder(Arc::clone(&embedder));
    results.add(
        Figure::new(
            "knowledge/ingest_pages_per_s",
            &format!(
                "Ingestion of the Debian Reference PDF ({pages} pages, {} passages): read, cut, indexed and embedded (the model's load apart)",
                document.chunks
            ),
            "pages/s",
            vec![pages / (read + embed)],
        ),
    );
    results.add(Figure::new(
        "knowledge/read_pages_per_s",
        "Of which read, cut and indexed for words (searchable from then on)",
        "pages/s",
        vec![pages / read],
    ));
    results.add(Figure::new(
        "knowledge/embed_passages_per_s",
        "Passages embedded per second (all-MiniLM-L6-v2 on candle, 2 cores)",
        "passages/s",
        vec![document.chunks as f64 / embed],
    ));

    // Quality: words alone, vectors alone, the hybrid.
    let texts = |hits: Vec<art_types::knowledge::Hit>| hits.into_iter().map(|h| h.text).collect();
    let mut words = Vec::new();
    let mut vectors = Vec::new();
    let mut hybrid = Vec::new();
    let mut latency = Vec::new();
    let set = store
        .vector_set(&collection.id, MODEL, DIMENSION)
        .map_err(|e| e.to_string())?;
    let source = store.texts(&collection.id).map_err(|e| e.to_string())?;
    let by_id: std::collections::HashMap<i64, String> = source.iter().cloned().collect();
    for question in &questions {
        words.push(texts(
            store
                .search_words(&collection.id, &question.q, K)
                .map_err(|e| e.to_string())?,
        ));
        let query = embedder.embed(&[&question.q]).map_err(|e| e.to_string())?;
        let nearest: Vec<String> = set
            .nearest(&query[0], K)
            .into_iter()
            .filter_map(|(id, _)| by_id.get(&id).cloned())
            .collect();
        vectors.push(nearest);
        let timed = Instant::now();
        let found = store
            .search_scoped(&question.q, &[], None, K)
            .map_err(|e| e.to_string())?;
        latency.push(timed.elapsed().as_secs_f64() * 1000.0);
        hybrid.push(texts(found.hits));
    }
    for (name, ranked, label) in [
        ("words", &words, "Words alone (BM25, SQLite FTS5)"),
        (
            "vectors",
            &vectors,
            "Vectors alone (all-MiniLM-L6-v2, cosine)",
        ),
        (
            "hybrid",
            &hybrid,
            "Hybrid: both, fused by reciprocal rank (what the tool runs)",
        ),
    ] {
        let (recall, mrr) = score(ranked, &questions);
        results.add(Figure::new(
            &format!("knowledge/recall_at_5_{name}"),
            &format!("{label}: recall@5 over {} questions", questions.len()),
            "share",
            vec![recall],
        ));
        results.add(Figure::new(
            &format!("knowledge/mrr_{name}"),
            &format!("{label}: mean reciprocal rank"),
            "MRR",
            vec![mrr],
        ));
    }
    let (hybrid_recall, _) = score(&hybrid, &questions);
    let ours = Ours {
        pages_per_s: pages / (read + embed),
        query_p50: percentile(&latency, 0.5),
        recall: hybrid_recall,
    };
    let query_p95 = percentile(&latency, 0.95);
    results.add(Figure::new(
        "knowledge/query_ms",
        "A hybrid query over the book, embedding the question included",
        "ms",
        latency,
    ));
    results.add(Figure::new(
        "knowledge/query_ms_p95",
        "The same queries' 95th percentile",
        "ms",
        vec![query_p95],
    ));
    results.add(Figure::new(
        "knowledge/peak_rss_mb",
        "Peak memory of the process so far (VmHWM: the book read, embedded and searched)",
        "MB",
        vec![peak_rss_mb()],
    ));
    if let Some(peer) = std::env::var_os("ART_KNOWLEDGE_PEER") {
        peer_figures(&mut results, Path::new(&peer), &book, &ours)?;
    }

    // Scale: 100,000 passages (the book's, repeated, their vectors jittered).
    eprintln!("  {SCALE} passages");
    let big = scale_store(dir.path(), &source, &set)?;
    big.set_embedder(Arc::clone(&embedder));
    let mut at_scale = Vec::new();
    for (i, question) in questions
        .iter()
        .cycle()
        .take(questions.len() * 2)
        .enumerate()
    {
        let timed = Instant::now();
        big.search_scoped(&question.q, &[], None, K)
            .map_err(|e| e.to_string())?;
        // The first pass loads the vectors into memory: not a query users wait on twice.
        if i >= questions.len() {
            at_scale.push(timed.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let p95 = percentile(&at_scale, 0.95);
    eprintln!("  p95 at {SCALE}: {p95:.1} ms");
    results.add(Figure::new(
        "knowledge/query_ms_100k",
        &format!("A hybrid query over {SCALE} passages, embedding the question included"),
        "ms",
        at_scale,
    ));
    results.add(
        Figure::new(
            "knowledge/query_ms_100k_p95",
            &format!("The same queries over {SCALE} passages: 95th percentile"),
            "ms",
            vec![p95],
        )
        .budget(Budget::AtMost(50.0)),
    );
    results.note(&format!(
        "Release build, one process, 2 cores. The corpus is {} (Debian package \
         debian-reference-en); a passage answers a question when it contains the question's \
         phrase. Embedder load {load:.2} s, apart from ingestion (as the peer's imports and model load).",
        book.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}

/// Our figures the peer's are held against.
struct Ours {
    pages_per_s: f64,
    query_p50: f64,
    recall: f64,
}

/// This process's peak resident memory (Linux `VmHWM`), in MB; 0 where not known.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Open WebUI's default pipeline (`tests/bench/knowledge/openwebui_pipeline.py`, installed
/// by xtask in `peer`) on the same book and questions, in a process of its own; its
/// figures beside ours, and the budgets that compare them.
fn peer_figures(
    results: &mut Results,
    peer: &Path,
    book: &Path,
    ours: &Ours,
) -> Result<(), String> {
    eprintln!("  the peer: Open WebUI's pipeline");
    let questions = Path::new(env!("CARGO_MANIFEST_DIR")).join("knowledge/questions.json");
    let out = std::process::Command::new(peer.join("venv/bin/python"))
        .arg(peer.join("openwebui_pipeline.py"))
        .arg(book)
        .arg(&questions)
        .output()
        .map_err(|e| format!("the peer did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the peer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let figures: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("the peer's figures: {e}"))?;
    let number = |key: &str| figures[key].as_f64().unwrap_or(f64::NAN);
    // Reading, cutting, embedding and storing, as ours: the interpreter's imports and the
    // model's load left out on both sides (a server has them done before a file comes).
    let pages_per_s = number("pages") / (number("ingest_s") - number("load_s"));
    let queries: Vec<f64> = figures["query_ms"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default();
    let query_p50 = percentile(&queries, 0.5);
    let label =
        "Open WebUI's pipeline (pypdf, 1000-character splits, sentence-transformers, ChromaDB)";
    results.add(Figure::new(
        "knowledge/peer/ingest_pages_per_s",
        &format!("{label}: ingestion, {} splits", number("chunks")),
        "pages/s",
        vec![pages_per_s],
    ));
    let query_p95 = percentile(&queries, 0.95);
    results.add(Figure::new(
        "knowledge/peer/query_ms",
        &format!("{label}: a query (embedding included)"),
        "ms",
        queries,
    ));
    results.add(Figure::new(
        "knowledge/peer/query_ms_p95",
        &format!("{label}: the queries' 95th percentile"),
        "ms",
        vec![query_p95],
    ));
    results.add(Figure::new(
        "knowledge/peer/recall_at_5",
        &format!("{label}: recall@5"),
        "share",
        vec![number("recall_at_5")],
    ));
    results.add(Figure::new(
        "knowledge/peer/mrr",
        &format!("{label}: mean reciprocal rank"),
        "MRR",
        vec![number("mrr")],
    ));
    results.add(Figure::new(
        "knowledge/peer/peak_rss_mb",
        &format!("{label}: peak memory"),
        "MB",
        vec![number("peak_rss_mb")],
    ));
    results.add(
        Figure::new(
            "knowledge/ingest_vs_peer",
            "Our ingestion ÷ the peer's (pages per second)",
            "×",
            vec![ours.pages_per_s / pages_per_s],
        )
        .budget(Budget::AtLeast(1.0)),
    );
    results.add(
        Figure::new(
            "knowledge/query_vs_peer",
            "Our query latency ÷ the peer's (medians)",
            "×",
            vec![ours.query_p50 / query_p50],
        )
        .budget(Budget::AtMost(0.5)),
    );
    results.add(
        Figure::new(
            "knowledge/recall_minus_peer",
            "Our recall@5 (hybrid) less the peer's",
            "share",
            vec![ours.recall - number("recall_at_5")],
        )
        .budget(Budget::AtLeast(0.0)),
    );
    Ok(())
}

/// A second database of [`SCALE`] passages: the book's passages repeated in documents of
/// 100, each with its vector slightly moved (and made unit length again), so that every
/// passage is distinct to the scan.
fn scale_store(
    dir: &Path,
    source: &[(i64, String)],
    set: &art::knowledge::embed::vectors::VectorSet,
) -> Result<KnowledgeStore, String> {
    let path = dir.join("scale");
    std::fs::create_dir_all(&path).map_err(|e| e.to_string())?;
    let big = KnowledgeStore::open(&path.join(DATABASE_FILE)).map_err(|e| e.to_string())?;
    let c = big.create("Scale").map_err(|e| e.to_string())?;
    let files: Vec<(String, String)> = (0..SCALE / 100)
        .map(|i| (format!("/scale/{i}.md"), format!("{i}.md")))
        .collect();
    big.queue_many(&c.id, &files).map_err(|e| e.to_string())?;
    let mut seed: u32 = 0x9E37_79B9;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        (seed % 2001) as f32 / 1000.0 - 1.0
    };
    let mut n = 0;
    while let Some(claimed) = big.claim().map_err(|e| e.to_string())? {
        let chunks: Vec<Chunk> = (0..100u32)
            .map(|ord| {
                let (_, text) = &source[(n + ord as usize) % source.len()];
                Chunk {
                    ord,
                    text: text.clone(),
                    tokens: 200,
                    headings: Vec::new(),
                    pages: None,
                    lines: (1, 1),
                }
            })
            .collect();
        let read = Read {
            size: 1,
            modified: 0,
            sha256: String::new(),
            pages: None,
        };
        big.store(claimed.id, &read, &chunks)
            .map_err(|e| e.to_string())?;
        n += 100;
    }
    // Vectors for the new passages, from their originals'.
    let vectors: std::collections::HashMap<i64, &[f32]> = set.iter().collect();
    let originals: std::collections::HashMap<&str, Vec<f32>> = source
        .iter()
        .filter_map(|(id, text)| vectors.get(id).map(|v| (text.as_str(), v.to_vec())))
        .collect();
    loop {
        let batch = big.to_embed(MODEL, 5_000).map_err(|e| e.to_string())?;
        if batch.is_empty() {
            break;
        }
        let rows: Vec<(i64, Vec<f32>)> = batch
            .into_iter()
            .map(|(id, text)| {
                let mut v: Vec<f32> = originals
                    .get(text.as_str())
                    .cloned()
                    .unwrap_or_else(|| vec![1.0; DIMENSION]);
                for x in &mut v {
                    *x += next() * 0.05;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                (id, v.into_iter().map(|x| x / norm).collect())
            })
            .collect();
        big.put_vectors(MODEL, &rows).map_err(|e| e.to_string())?;
    }
    Ok(big)
}
