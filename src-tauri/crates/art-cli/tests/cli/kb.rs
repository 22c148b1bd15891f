//! `art kb`: a folder becomes a searchable collection (each document with its state,
//! hidden files and links left out), and the agent's `search_knowledge` tool finds the
//! passage with its document and page, for the answer to cite.

use std::path::{Path, PathBuf};

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, router, text_reply, tool_call_reply};

use crate::commands::{art, stderr, stdout};

/// A folder as a user would add it: notes, a report, a photo, a hidden file and a link
/// that loops back to the folder.
fn folder(root: &Path) -> PathBuf {
    let dir = root.join("orchard");
    std::fs::create_dir_all(dir.join("more")).unwrap();
    std::fs::write(
        dir.join("notes.md"),
        "# Orchard\n\n## Pruning\n\nPrune the apple trees in late winter.\n",
    )
    .unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../tests/fixtures/documents/ghostscript-three-pages.pdf"),
        dir.join("more/report.pdf"),
    )
    .unwrap();
    std::fs::write(dir.join("photo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    std::fs::write(dir.join(".secret.md"), "hidden irrigation").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&dir, dir.join("more/loop")).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_becomes_a_collection_that_finds_the_page() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let dir = folder(data.path());
    let made = art(&home, &["kb", "create", "Orchard"]).await;
    assert!(made.status.success(), "{}", stderr(&made));
    let again = art(&home, &["kb", "create", "orchard"]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("exists already"),
        "{}",
        stderr(&again)
    );

    // The search model as the app would have downloaded it.
    art_testkit::embedder::install_in(&home);
    let added = art(&home, &["kb", "add", "Orchard", dir.to_str().unwrap()]).await;
    assert!(added.status.success(), "{}", stderr(&added));
    let notes = stderr(&added);
    assert!(notes.contains("art: 3 files queued in Orchard"), "{notes}");
    assert!(notes.contains("to search by meaning"), "{notes}");
    assert!(!notes.contains("downloading"), "{notes}");
    assert!(
        notes.contains("art: indexed notes.md: 1 passage"),
        "{notes}"
    );
    assert!(notes.contains("art: indexed report.pdf:"), "{notes}");
    assert!(
        notes.contains("art: skipped photo.png: an image"),
        "{notes}"
    );
    assert!(
        !notes.contains("secret"),
        "hidden files are left out: {notes}"
    );
    assert!(
        stdout(&added).contains("Orchard: 2 ready, 1 skipped;"),
        "{}",
        stdout(&added)
    );

    let status = stdout(&art(&home, &["kb", "status", "orchard"]).await);
    assert!(status.contains("  ready     /"), "{status}");
    assert!(status.contains("  skipped   /"), "{status}");
    assert!(status.contains("report.pdf  3 pages,"), "{status}");

    let found = art(&home, &["kb", "search", "irrigation cost", "-k", "2"]).await;
    let shown = stdout(&found);
    assert!(shown.starts_with("[1] report.pdf, p"), "{shown}");
    assert!(shown.contains("Irrigation cost 310 euros"), "{shown}");
    // No word in common with the passage: found by its meaning.
    let meant = art(
        &home,
        &[
            "kb",
            "search",
            "cutting back branches during the cold months",
            "-k",
            "1",
        ],
    )
    .await;
    let shown = stdout(&meant);
    assert!(
        shown.starts_with("[1] notes.md, lines 1–5, §Pruning"),
        "{shown}"
    );
    assert!(!stderr(&meant).contains("words only"), "{}", stderr(&meant));
    // Nothing related, by words or by meaning: said so.
    let none = stdout(&art(&home, &["kb", "search", "zeppelin"]).await);
    assert!(
        none.contains("Nothing in the knowledge collections matches"),
        "{none}"
    );
    let wrong = art(&home, &["kb", "search", "x", "--collection", "Nope"]).await;
    assert!(stderr(&wrong).contains("there is no collection \"Nope\""));

    let removed = art(&home, &["kb", "remove", "Orchard"]).await;
    assert!(
        stdout(&removed).starts_with("Removed Orchard ("),
        "{}",
        stdout(&removed)
    );
    let listed = stdout(&art(&home, &["kb", "list"]).await);
    assert!(listed.contains("No collections yet"), "{listed}");
}

/// The agent calls `search_knowledge`; the passage reaches the model with its document
/// and page and the instruction to cite it. Searched by meaning as `art kb search` (and
/// the app) search: the same passages in the same order, none said to be unembedded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_searches_knowledge_and_reads_where_the_passage_is() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let dir = folder(data.path());
    art(&home, &["kb", "create", "Orchard"]).await;
    // The search model as the app would have downloaded it: the passages are embedded.
    art_testkit::embedder::install_in(&home);
    let added = art(&home, &["kb", "add", "Orchard", dir.to_str().unwrap()]).await;
    assert!(added.status.success(), "{}", stderr(&added));

    let plan = r#"{"title": "Costs", "intent": "look up costs", "steps": [{"id": "1", "description": "Search the documents", "tools": ["search_knowledge"]}], "toolCalls": []}"#;
    let server = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 32),
            tool_call_reply(
                Protocol::Ollama,
                &[(
                    "k1",
                    "search_knowledge",
                    serde_json::json!({ "query": "irrigation cost", "k": 2 }),
                )],
            ),
            text_reply(Protocol::Ollama, "Found it.", 16),
            text_reply(Protocol::Ollama, "Irrigation cost 310 euros [1].", 16),
        ],
    )
    .await
    .unwrap();
    let url = server.url();
    let mut args = super::ask_new("Costs", &url, "What did irrigation cost?");
    args.extend(["--tools", "search_knowledge"]);
    let out = art(&home, &args).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("310 euros [1]"));
    // The search printed as its sources, numbered as the answer cites them.
    let printed = stdout(&out);
    assert!(
        printed.contains("passage(s)\n  [1] report.pdf, p. 2"),
        "{printed}"
    );
    assert!(
        !printed.contains("\"ref\""),
        "no JSON on the terminal: {printed}"
    );

    let after_tool = server
        .requests()
        .into_iter()
        .filter(|r| r.request_line.contains("/api/chat"))
        .nth(2)
        .expect("the model was asked after the search")
        .json();
    let tool = after_tool["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the search's result")
        .clone();
    let content = tool["content"].as_str().unwrap();
    assert!(content.contains("\"document\":\"report.pdf\""), "{content}");
    // A passage stays on its page: the citation names it.
    assert!(content.contains("\"place\":\"p. 2\""), "{content}");
    assert!(content.contains("Irrigation cost 310 euros"), "{content}");
    assert!(
        content.contains("Cite the passages you use as [ref]"),
        "{content}"
    );
    // By meaning too, as every front end searches: not "matched by their words only".
    assert!(!content.contains("not embedded"), "{content}");
    let searched: serde_json::Value = serde_json::from_str(content).unwrap();
    let in_run: Vec<String> = searched["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "[{}] {}, {}",
                r["ref"],
                r["document"].as_str().unwrap(),
                r["place"].as_str().unwrap()
            )
        })
        .collect();
    let by_kb = art(&home, &["kb", "search", "irrigation cost", "-k", "2"]).await;
    assert!(!stderr(&by_kb).contains("words only"), "{}", stderr(&by_kb));
    let listed = stdout(&by_kb);
    let in_kb: Vec<&str> = listed.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(in_run.len(), in_kb.len(), "{in_run:?}\n{listed}");
    for (run, kb) in in_run.iter().zip(&in_kb) {
        assert!(kb.starts_with(run.as_str()), "{run} / {kb}");
    }
}

/// A folder added with `--sync` follows its files: `art kb sync` reads what changed and
/// takes out what was deleted, and `art kb status` names the folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synced_folder_follows_its_files() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let dir = folder(data.path());
    art(&home, &["kb", "create", "Orchard"]).await;
    let added = art(
        &home,
        &["kb", "add", "Orchard", "--sync", dir.to_str().unwrap()],
    )
    .await;
    assert!(added.status.success(), "{}", stderr(&added));
    let status = stdout(&art(&home, &["kb", "status", "Orchard"]).await);
    assert!(
        status.contains(&format!("kept in sync: {}", dir.display())),
        "{status}"
    );

    let quiet = art(&home, &["kb", "sync"]).await;
    assert!(
        stderr(&quiet).contains("art: 0 files new or changed, 0 gone"),
        "{}",
        stderr(&quiet)
    );
    std::fs::write(
        dir.join("notes.md"),
        "# Orchard\n\n## Pruning\n\nPrune the pear trees after the harvest, not before.\n",
    )
    .unwrap();
    std::fs::remove_file(dir.join("photo.png")).unwrap();
    let synced = art(&home, &["kb", "sync"]).await;
    let notes = stderr(&synced);
    assert!(
        notes.contains("art: 1 file new or changed, 1 gone"),
        "{notes}"
    );
    assert!(notes.contains("art: indexed notes.md:"), "{notes}");
    let found = stdout(&art(&home, &["kb", "search", "pear harvest"]).await);
    assert!(found.starts_with("[1] notes.md, "), "{found}");
    assert!(found.contains("pear trees after the harvest"), "{found}");
    let status = stdout(&art(&home, &["kb", "status", "Orchard"]).await);
    assert!(!status.contains("photo.png"), "{status}");
}

/// Without the search model, and no way to download it, passages are searchable by their
/// words and the command says why; with a hub (the local stand-in, serving the real
/// weights), the next `art kb` downloads it once and embeds what was left to words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_model_is_downloaded_once_and_until_then_words_are_searched() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let dir = folder(data.path());
    art(&home, &["kb", "create", "Orchard"]).await;
    let offline = art(&home, &["kb", "add", "Orchard", dir.to_str().unwrap()]).await;
    assert!(offline.status.success(), "{}", stderr(&offline));
    let notes = stderr(&offline);
    assert!(notes.contains("art: indexed notes.md"), "{notes}");
    assert!(
        notes.contains("cannot download the embedding model from http://127.0.0.1:9"),
        "{notes}"
    );
    assert!(notes.contains("Searches use words only"), "{notes}");
    assert!(notes.contains("set HF_ENDPOINT to a mirror"), "{notes}");
    // Nothing embedded: the collection does not claim to be searched by meaning.
    let summary = stdout(&offline);
    assert!(
        summary.contains("by words only: none embedded with all-MiniLM-L6-v2"),
        "{summary}"
    );
    assert!(!summary.contains("by meaning with"), "{summary}");
    let listed = stdout(&art(&home, &["kb", "list"]).await);
    assert!(listed.contains("by words only"), "{listed}");
    let found = art(&home, &["kb", "search", "irrigation cost", "-k", "1"]).await;
    assert!(
        stdout(&found).starts_with("[1] report.pdf"),
        "{}",
        stdout(&found)
    );
    assert!(
        stderr(&found).contains("matched by their words only"),
        "{}",
        stderr(&found)
    );

    let weights = art_testkit::embedder::weights_dir();
    let names = ["config.json", "tokenizer.json", "model.safetensors"];
    let hub =
        art_testkit::hub::Hub::serving("sentence-transformers/all-MiniLM-L6-v2", &weights, &names)
            .await;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
    command
        .arg("--data-dir")
        .arg(&home)
        .args(["kb", "reindex", "Orchard"])
        .env("HF_ENDPOINT", hub.url());
    let online = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let notes = stderr(&online);
    assert!(online.status.success(), "{notes}");
    assert!(
        notes.contains("art: downloading the search model"),
        "{notes}"
    );
    assert!(notes.contains("to search by meaning"), "{notes}");
    let model = home.join("models/all-MiniLM-L6-v2/model.safetensors");
    assert_eq!(std::fs::metadata(model).unwrap().len(), 90_868_376);
    let found = art(&home, &["kb", "search", "irrigation cost", "-k", "1"]).await;
    assert!(!stderr(&found).contains("words only"), "{}", stderr(&found));
    // Downloaded once: searching never fetches.
    let fetched = hub.requests().len();
    art(&home, &["kb", "search", "pruning"]).await;
    assert_eq!(hub.requests().len(), fetched);
}

/// `art kb add` killed while it indexes a large folder: the next `art kb sync` takes up
/// the queue where it was (the dead process's claim included), every document is read
/// once, no passage is left without its document or counted twice, and SQLite finds the
/// database and its full-text index sound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_indexing_it_resumes_without_losing_or_doubling_a_passage() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    const FILES: usize = 400;
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let dir = data.path().join("notes");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..FILES {
        let mut text = format!("# Field {i}\n\n");
        for line in 0..120 {
            text.push_str(&format!(
                "Row {line} of field {i} gave {} crates.\n",
                line * i % 97
            ));
        }
        std::fs::write(dir.join(format!("field-{i:03}.md")), text).unwrap();
    }
    let made = art(&home, &["kb", "create", "Fields"]).await;
    assert!(made.status.success(), "{}", stderr(&made));

    // Killed once a tenth of the files are in (the rest queued, one maybe half read).
    let mut child = Command::new(env!("CARGO_BIN_EXE_art"))
        .arg("--data-dir")
        .arg(&home)
        .args(["kb", "add", "Fields", dir.to_str().unwrap()])
        .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let indexed = tokio::task::spawn_blocking(move || {
        lines
            .map_while(Result::ok)
            .filter(|l| l.starts_with("art: indexed"))
            .take(FILES / 10)
            .count()
    })
    .await
    .unwrap();
    assert_eq!(indexed, FILES / 10, "indexing had begun");
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed, not finished");

    let resumed = art(&home, &["kb", "sync"]).await;
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let conn = rusqlite::Connection::open(home.join("knowledge.db")).unwrap();
    let one = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(one("SELECT count(*) FROM documents"), FILES as i64);
    assert_eq!(
        one("SELECT count(*) FROM documents WHERE state = 'ready' AND claimed_by IS NULL"),
        FILES as i64,
        "each read to the end"
    );
    assert_eq!(
        one("SELECT count(*) FROM chunks"),
        one("SELECT sum(chunks) FROM documents"),
        "no passage counted twice or left over"
    );
    assert_eq!(
        one("SELECT count(*) FROM chunks WHERE document NOT IN (SELECT id FROM documents)"),
        0,
        "no orphan passage"
    );
    assert_eq!(
        one("SELECT count(*) FROM documents WHERE chunks = 0"),
        0,
        "none empty"
    );
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    // The full-text index agrees with the passages (FTS5 raises an error if not).
    conn.execute(
        "INSERT INTO chunk_text (chunk_text, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .unwrap();
    let found = stdout(&art(&home, &["kb", "search", "field 399 crates", "-k", "1"]).await);
    assert!(found.contains("field-399.md"), "{found}");
}

/// A fake Ollama whose `/api/embed` embeds each input by its letters (26 numbers): texts
/// that share letters come out close, enough to search by.
async fn letters_ollama() -> FakeServer {
    use art_testkit::fake::Reply;
    let embed: art_testkit::fake::Router = Box::new(|request| {
        if !request.request_line.starts_with("POST /api/embed ") {
            return None;
        }
        let body = request.json();
        let vectors: Vec<Vec<f32>> = body["input"]
            .as_array()?
            .iter()
            .map(|text| {
                let mut v = vec![0.01f32; 26];
                for c in text.as_str().unwrap_or_default().to_lowercase().bytes() {
                    if c.is_ascii_lowercase() {
                        v[usize::from(c - b'a')] += 1.0;
                    }
                }
                v
            })
            .collect();
        Some(Reply::json(
            &serde_json::json!({ "model": body["model"], "embeddings": vectors }).to_string(),
        ))
    });
    FakeServer::start_at(0, Some(embed), Vec::new())
        .await
        .unwrap()
}

/// `art --data-dir DIR ARGS…` with Ollama at `ollama`.
async fn art_with_ollama(dir: &Path, ollama: &str, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
    command.arg("--data-dir").arg(dir).args(args);
    command
        .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB)
        .env("OLLAMA_HOST", ollama);
    tokio::task::spawn_blocking(move || command.output().expect("art runs"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_embedded_by_ollama_is_searched_by_meaning_and_can_change_model() {
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("data");
    let dir = folder(data.path());
    let ollama = letters_ollama().await;
    let url = ollama.url();
    let made = art_with_ollama(
        &home,
        &url,
        &[
            "kb",
            "create",
            "Orchard",
            "--embedder",
            "ollama:nomic-embed-text",
        ],
    )
    .await;
    assert!(made.status.success(), "{}", stderr(&made));
    let added = art_with_ollama(
        &home,
        &url,
        &["kb", "add", "Orchard", dir.to_str().unwrap()],
    )
    .await;
    let notes = stderr(&added);
    assert!(
        notes.contains("passages with ollama:nomic-embed-text to search by meaning"),
        "{notes}"
    );
    let requests = ollama.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.json()["model"] == "nomic-embed-text")
    );

    let found = art_with_ollama(
        &home,
        &url,
        &["kb", "search", "prune the apple trees", "-k", "1"],
    )
    .await;
    assert!(
        stdout(&found).starts_with("[1] notes.md"),
        "{}",
        stdout(&found)
    );
    assert!(!stderr(&found).contains("words only"), "{}", stderr(&found));

    // To the built-in model: re-embedded now, and Ollama no longer asked.
    art_testkit::embedder::install_in(&home);
    let changed = art_with_ollama(
        &home,
        &url,
        &["kb", "embedder", "Orchard", "builtin:all-MiniLM-L6-v2"],
    )
    .await;
    assert!(changed.status.success(), "{}", stderr(&changed));
    assert!(
        stderr(&changed).contains("with builtin:all-MiniLM-L6-v2 to search by meaning"),
        "{}",
        stderr(&changed)
    );
    let asked = ollama.requests().len();
    let meant = art_with_ollama(
        &home,
        &url,
        &[
            "kb",
            "search",
            "cutting back branches during the cold months",
            "-k",
            "1",
        ],
    )
    .await;
    assert!(
        stdout(&meant).starts_with("[1] notes.md"),
        "{}",
        stdout(&meant)
    );
    assert_eq!(ollama.requests().len(), asked);
    // The list names the model, the change complete (nothing answers "meanwhile").
    let listed = stdout(&art_with_ollama(&home, &url, &["kb", "list"]).await);
    assert!(
        listed.contains("passages; by meaning with all-MiniLM-L6-v2 (built-in)")
            && !listed.contains("meanwhile"),
        "{listed}"
    );

    // Ollama gone: a collection that uses it is still searched, by its words.
    let unknown = art_with_ollama(
        &home,
        "http://127.0.0.1:9",
        &["kb", "embedder", "Orchard", "ollama:nomic-embed-text"],
    )
    .await;
    assert!(unknown.status.success(), "{}", stderr(&unknown));
    assert!(
        stderr(&unknown).contains("ollama:nomic-embed-text is unavailable"),
        "{}",
        stderr(&unknown)
    );
    let words = art_with_ollama(
        &home,
        "http://127.0.0.1:9",
        &["kb", "search", "irrigation cost"],
    )
    .await;
    assert!(
        stdout(&words).contains("Irrigation cost 310 euros"),
        "{}",
        stdout(&words)
    );
}
