//! Several `art` processes on one data directory at once, as when the app is open and a
//! script runs `art` beside it: eight processes write at the same moment (six runs on new
//! threads, each saving the thread's settings, and two imports) while a ninth is killed
//! with SIGKILL in the middle of its answer. Every one of the eight must succeed (each
//! waits its turn for the write lock instead of failing with "database is locked"), and
//! the database must be whole afterwards, holding everything they wrote.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};

/// Runs and imports started at once.
const RUNS: usize = 6;
const IMPORTS: usize = 2;

fn art(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_art"));
    command.arg("--data-dir").arg(dir);
    command
}

/// A new thread asking to be greeted, with the calculator: settings saved, then a run.
fn run_args<'a>(title: &'a str, url: &'a str) -> Vec<&'a str> {
    let mut args = super::ask_new(title, url, "Say hello");
    args.extend(["--tools", "calculator"]);
    args
}

/// Run to the end, letting the runtime's other tasks (the fake servers) go on meanwhile.
fn output(command: &mut Command) -> Output {
    tokio::task::block_in_place(|| command.output().expect("art runs"))
}

fn done(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Two native export files, one thread each, written in a separate data directory.
async fn exports(dir: &Path) -> Vec<std::path::PathBuf> {
    let server = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        (0..2 * IMPORTS)
            .map(|_| text_reply(Protocol::Ollama, "Imported hello.", 8))
            .collect(),
    )
    .await
    .unwrap();
    let url = server.url();
    let mut files = Vec::new();
    for i in 0..IMPORTS {
        let title = format!("Exported {i}");
        let out = output(art(dir).args(run_args(&title, &url)));
        assert!(out.status.success(), "{}", done(&out));
    }
    let listed = output(art(dir).arg("threads"));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for (i, line) in listed.lines().enumerate() {
        let thread = line.split_whitespace().next().unwrap();
        let file = dir.join(format!("thread-{i}.jsonl"));
        let out = output(
            art(dir)
                .args(["export", "--format", "jsonl", "--thread", thread, "-o"])
                .arg(&file),
        );
        assert!(out.status.success(), "{}", done(&out));
        files.push(file);
    }
    assert_eq!(files.len(), IMPORTS, "{listed}");
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_at_once_all_succeed_and_a_killed_one_harms_nobody() {
    let seed = tempfile::tempdir().unwrap();
    let files = exports(seed.path()).await;
    // Every run asks twice at most (planning, answer); any reply serves any request.
    let server = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        (0..2 * RUNS)
            .map(|_| text_reply(Protocol::Ollama, "Hello from a busy database.", 6))
            .collect(),
    )
    .await
    .unwrap();
    // The victim's model streams slowly, so it is killed mid-answer.
    let slow = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, "Planning is quick.", 64),
            text_reply(Protocol::Ollama, &"word ".repeat(400), 8)
                .delayed(Duration::from_millis(10)),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let (url, slow_url) = (server.url(), slow.url());

    let mut victim = art(data.path())
        .args(run_args("Victim", &slow_url))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut children = Vec::new();
    for i in 0..RUNS {
        let child = art(data.path())
            .args(run_args(&format!("Writer {i}"), &url))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        children.push((format!("run {i}"), child));
    }
    for (i, file) in files.iter().enumerate() {
        let child = art(data.path())
            .arg("import")
            .arg(file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        children.push((format!("import {i}"), child));
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    victim.kill().unwrap(); // SIGKILL, in the middle of its writes
    tokio::task::block_in_place(|| victim.wait()).unwrap();

    let mut failed = Vec::new();
    for (name, child) in children {
        let out = tokio::task::block_in_place(|| child.wait_with_output()).unwrap();
        if !out.status.success() {
            failed.push(format!("{name}: {}", done(&out)));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));

    // Whole, and holding what every survivor wrote.
    let db = data.path().join(art::paths::DATABASE_FILE);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let listed = output(art(data.path()).arg("threads"));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for i in 0..RUNS {
        assert!(listed.contains(&format!("Writer {i}")), "{listed}");
    }
    for i in 0..IMPORTS {
        assert!(listed.contains(&format!("Exported {i}")), "{listed}");
    }
    // The killed run's thread takes the next question.
    let thread = listed
        .lines()
        .find(|l| l.contains("Victim"))
        .and_then(|l| l.split_whitespace().next());
    if let Some(thread) = thread {
        let again = FakeServer::start_at(
            0,
            Some(router(Protocol::Ollama)),
            vec![
                text_reply(Protocol::Ollama, "Back again.", 8),
                text_reply(Protocol::Ollama, "Back again.", 8),
            ],
        )
        .await
        .unwrap();
        let again_url = again.url();
        let out = output(
            art(data.path())
                .args(["run", "--thread", thread, "--provider", "ollama"])
                .args(["--model", MODEL, "--base-url", &again_url, "Still there?"]),
        );
        assert!(out.status.success(), "{}", done(&out));
    }
}

/// One run per thread, whatever process runs it: a second `art run` on a thread that is
/// answering in another process is refused (and stores nothing), then the thread takes
/// questions again once the first is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_answers_one_question_at_a_time_across_processes() {
    let slow = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        // No tools: each run is one call, its answer.
        vec![
            text_reply(Protocol::Ollama, "slow answer in many words ", 2)
                .delayed(Duration::from_millis(40)),
            text_reply(Protocol::Ollama, "Second answer.", 64),
        ],
    )
    .await
    .unwrap();
    let url = slow.url();
    let data = tempfile::tempdir().unwrap();
    let first = art(data.path())
        .args(super::ask_new("Busy", &url, "First?"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first run is answering once its answer call has reached the model.
    for _ in 0..200 {
        let asked = slow
            .requests()
            .iter()
            .filter(|r| r.request_line.contains("/api/chat"))
            .count();
        if asked == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let listed = output(art(data.path()).arg("threads"));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let second = |question: &'static str| {
        output(
            art(data.path())
                .args(["run", "--thread", &thread, "--provider", "ollama"])
                .args(["--model", MODEL, "--base-url", &url, question]),
        )
    };
    let refused = second("Meanwhile?");
    assert_eq!(refused.status.code(), Some(1), "{}", done(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("is answering already"),
        "{}",
        done(&refused)
    );
    let first = tokio::task::block_in_place(|| first.wait_with_output()).unwrap();
    assert!(first.status.success(), "{}", done(&first));
    let after = second("Now?");
    assert!(after.status.success(), "{}", done(&after));
    let listed = output(art(data.path()).arg("threads"));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains("    4 messages"),
        "the refused question was not stored: {listed}"
    );
}

/// Processes started on one thread at the same moment.
const RACERS: usize = 4;
/// Races run, one after another on the same thread.
const RACES: usize = 50;

/// Several `art run` on one thread started together: exactly one is admitted, every
/// time — the claim is one atomic write, not a check and then a write. The admitted run
/// hangs on its model (so nothing a loser does can pass for a run that already ended);
/// the others must all be refused; then the winner is killed, and the next race also
/// takes over the dead process's claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_runs_on_one_thread_admit_exactly_one_every_time() {
    use art_testkit::fake::{Ending, Reply};
    let setup = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, "Ready.", 64),
            text_reply(Protocol::Ollama, "Ready.", 64),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let made = output(art(data.path()).args(super::ask_new("Race", &setup.url(), "Ready?")));
    assert!(made.status.success(), "{}", done(&made));
    let listed = output(art(data.path()).arg("threads"));
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let thread = listed.split_whitespace().next().unwrap().to_owned();

    // Every admitted run's first model call gets headers and then silence.
    let hang = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        (0..RACES)
            .map(|_| Reply::ndjson("", 1).ending(Ending::Hang))
            .collect(),
    )
    .await
    .unwrap();
    let url = hang.url();
    for race in 0..RACES {
        let mut racers: Vec<_> = (0..RACERS)
            .map(|i| {
                art(data.path())
                    .args(["run", "--thread", &thread, "--provider", "ollama"])
                    .args(["--model", MODEL, "--base-url", &url])
                    .arg(format!("Race {race}, runner {i}?"))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // The refused leave at once; the admitted one waits on its model.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut refused = Vec::new();
        while refused.len() < RACERS - 1 && std::time::Instant::now() < deadline {
            let mut at = 0;
            while at < racers.len() {
                if matches!(racers[at].try_wait(), Ok(Some(_))) {
                    let child = racers.swap_remove(at);
                    refused.push(tokio::task::block_in_place(|| child.wait_with_output()).unwrap());
                } else {
                    at += 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for out in &refused {
            assert_eq!(out.status.code(), Some(1), "race {race}: {}", done(out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("is answering already"),
                "race {race}: {}",
                done(out)
            );
        }
        assert_eq!(
            racers.len(),
            1,
            "race {race}: {} runs admitted at once",
            racers.len()
        );
        // The winner is at its model (one more chat request), then it is killed.
        let asked = || {
            hang.requests()
                .iter()
                .filter(|r| r.request_line.contains("/api/chat"))
                .count()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while asked() < race + 1 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(asked(), race + 1, "race {race}: one model call per race");
        let mut winner = racers.pop().unwrap();
        winner.kill().unwrap();
        tokio::task::block_in_place(|| winner.wait()).unwrap();
    }
}
