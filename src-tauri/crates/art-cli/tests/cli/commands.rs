//! The `art` command line, run as a real process on a temporary data directory against
//! a fake Ollama over TCP: a run prints its plan, tool call and answer; threads are
//! listed; exports are written and import into another data directory; mistakes get a
//! clear message and a failing exit status.

use std::path::Path;
use std::process::Output;

use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};
use art_testkit::fake::{FakeServer, Reply};
use art_testkit::otlp::{Fault, OtlpReceiver};

use crate::ask_new;

pub(crate) const PLAN: &str = r#"{"title": "Add two numbers", "intent": "Add 19 and 23", "plan": ["Add with the calculator", "Answer"], "toolCalls": [{"callId": "c1", "toolName": "calculator", "arguments": {"expression": "19 + 23"}}]}"#;

/// Run `art --data-dir DIR ARGS…` to its end (a download of the search model it was not
/// given fails at once: its hub is a local port nothing listens on).
pub(crate) async fn art(dir: &Path, args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
    command.arg("--data-dir").arg(dir).args(args);
    command.env("HF_ENDPOINT", art_testkit::embedder::NO_HUB);
    tokio::task::spawn_blocking(move || command.output().expect("art runs"))
        .await
        .unwrap()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_threads_export_import() {
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, PLAN, 16),
            text_reply(Protocol::Ollama, "The sum is 42.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let out = art(
        data.path(),
        &[
            "run",
            "--new",
            "Sums",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "--tools",
            "calculator",
            "What is 19 + 23?",
        ],
    )
    .await;
    let printed = stdout(&out);
    assert!(out.status.success(), "{printed}\n{}", stderr(&out));
    assert!(printed.contains("Plan: Add 19 and 23"), "{printed}");
    assert!(printed.contains("1. Add with the calculator"), "{printed}");
    assert!(
        printed.contains("Tool calculator {\"expression\":\"19 + 23\"}: ok → "),
        "{printed}"
    );
    assert!(printed.contains("\"result\":42"), "{printed}");
    assert!(printed.contains("The sum is 42."), "{printed}");

    let out = art(data.path(), &["threads"]).await;
    assert!(stdout(&out).contains("Sums"), "{}", stdout(&out));
    let thread = stdout(&out).split_whitespace().next().unwrap().to_owned();

    // Every format, to a file.
    for (format, name) in [
        ("jsonl", "t.jsonl"),
        ("otlp", "t.otlp.jsonl"),
        ("markdown", "t.md"),
    ] {
        let file = data.path().join(name);
        let out = art(
            data.path(),
            &[
                "export",
                "--format",
                format,
                "--thread",
                &thread,
                "-o",
                file.to_str().unwrap(),
            ],
        )
        .await;
        assert!(out.status.success(), "{format}: {}", stderr(&out));
        assert!(stderr(&out).contains("observation(s)"), "{}", stderr(&out));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains("19 + 23") || format == "otlp",
            "{format}: {text}"
        );
        if format != "markdown" {
            for line in text.lines() {
                serde_json::from_str::<serde_json::Value>(line).expect("JSON lines");
            }
        }
    }
    let markdown = std::fs::read_to_string(data.path().join("t.md")).unwrap();
    assert!(markdown.contains("**Tool `calculator`** (ok"), "{markdown}");
    // Protobuf, as the collector's file exporter writes it: one length-prefixed
    // message per run, the lengths adding up to the file.
    let pb = data.path().join("t.otlp.pb");
    let out = art(
        data.path(),
        &[
            "export",
            "--format",
            "otlp-proto",
            "--thread",
            &thread,
            "-o",
            pb.to_str().unwrap(),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&pb).unwrap();
    let len = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(4 + len, bytes.len(), "one run, one message");

    // Straight to a collector, with a header; then one that keeps failing.
    let collector = OtlpReceiver::start().await;
    let url = collector.url();
    let push = |url: String| {
        let thread = thread.clone();
        let data = data.path().to_owned();
        async move {
            let args = [
                "export", "--format", "otlp", "--thread", &thread, "--to", &url,
            ];
            let header = ["--header", "x-api-key=sk-cli-header-12345678"];
            art(&data, &[&args[..], &header[..]].concat()).await
        }
    };
    let out = push(url.clone()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let spans = collector.taken();
    assert!(spans >= 5, "the run's spans: {spans}");
    assert!(
        stderr(&out).contains(&format!(
            "Sent {spans} span(s) of 1 run(s) to {url}/v1/traces"
        )),
        "{}",
        stderr(&out)
    );
    let request = &collector.received()[0];
    assert_eq!(request.header("x-api-key"), Some("sk-cli-header-12345678"));
    assert_eq!(request.content_encoding.as_deref(), Some("gzip"));
    let busy = vec![("Retry-After".to_owned(), "0".to_owned())];
    collector.script((0..6).map(|_| Fault::Status(503, busy.clone(), "busy".into())));
    let out = push(url.clone()).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "sent 0 of {spans} spans; then gave up after 6 tries"
        )),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("HTTP 503"), "{}", stderr(&out));
    assert_eq!(collector.taken(), spans, "nothing more was taken");

    // Into another data directory, where it is listed.
    let other = tempfile::tempdir().unwrap();
    let file = data.path().join("t.jsonl");
    let out = art(other.path(), &["import", file.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Imported 1 thread(s)"),
        "{}",
        stderr(&out)
    );
    let out = art(other.path(), &["threads"]).await;
    assert!(stdout(&out).contains(&thread), "{}", stdout(&out));
    // A second import of the same file is refused.
    let out = art(other.path(), &["import", file.to_str().unwrap()]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("already in this database"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_get_clear_messages_and_failing_status() {
    let data = tempfile::tempdir().unwrap();
    let out = art(data.path(), &["run", "--thread", "nope", "hello"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));

    let out = art(
        data.path(),
        &["run", "--new", "T", "--tools", "hammer", "hi"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no tool named \"hammer\""),
        "{}",
        stderr(&out)
    );

    let out = art(
        data.path(),
        &["run", "--new", "T", "--context-window", "100", "hi"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("context window is 512 to"),
        "{}",
        stderr(&out)
    );

    let out = art(data.path(), &["import", "/no/such/file.jsonl"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot import"), "{}", stderr(&out));

    let out = art(data.path(), &["export", "--format", "otlp", "-o", "x"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--thread"), "{}", stderr(&out));

    let out = art(
        data.path(),
        &[
            "export",
            "--format",
            "markdown",
            "--all",
            "--to",
            "http://127.0.0.1:9",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("use --format otlp"),
        "{}",
        stderr(&out)
    );
    let out = art(
        data.path(),
        &[
            "export",
            "--format",
            "otlp",
            "--all",
            "--to",
            "localhost:4318",
        ],
    )
    .await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not an http://"), "{}", stderr(&out));

    let out = art(
        data.path(),
        &["export", "--format", "yaml", "--all", "-o", "x"],
    )
    .await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("yaml"), "{}", stderr(&out));

    let target = data.path().join("x.json");
    let out = art(
        data.path(),
        &[
            "export",
            "--format",
            "otlp",
            "--thread",
            "nope",
            "-o",
            target.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no thread nope"), "{}", stderr(&out));
    assert!(!target.exists(), "no half-written file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_is_a_failed_run() {
    let down = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![Reply::error(
            404,
            r#"{"error":"model \"fake-model\" not found, try pulling it first"}"#,
        )],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = down.url();
    let out = art(
        data.path(),
        &[
            "run",
            "--new",
            "Broken",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "hi",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("not found"), "{}", stderr(&out));
}

#[test]
fn every_command_has_help() {
    for command in [
        &["--help"][..],
        &["run", "--help"],
        &["export", "--help"],
        &["import", "--help"],
        &["threads", "--help"],
        &["retry", "--help"],
        &["drop", "--help"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_art"))
            .args(command)
            .output()
            .unwrap();
        assert!(out.status.success(), "{command:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{command:?}"
        );
    }
}

/// Run `art --data-dir DIR ARGS…` with its standard output closed before it writes
/// (the reader of a pipe that went away, as in `art threads | head -0`).
async fn art_into_closed_pipe(dir: &Path, args: &[&str]) -> Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
    command
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("art starts");
        drop(child.stdout.take()); // the reader is gone
        child.wait_with_output().expect("art ends")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_ends_quietly_and_a_plain_answer_is_no_error() {
    // No plan, just an answer: the model's planning output is plain text.
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, "Hello there.", 8),
            text_reply(Protocol::Ollama, "Hello there.", 8),
            text_reply(Protocol::Ollama, "Hello again.", 8),
            text_reply(Protocol::Ollama, "Hello again.", 8),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let out = art(data.path(), &ask_new("Plain", &url, "Hi")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello there."), "{}", stdout(&out));
    assert!(
        !stderr(&out).contains("Error") && !stderr(&out).contains("UNPARSEABLE"),
        "a plain answer is not an error: {}",
        stderr(&out)
    );

    // `art run … | (exit 0)`: the run still ends well and is recorded.
    let out = art_into_closed_pipe(data.path(), &ask_new("Piped", &url, "Hi again")).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let piped = listed.lines().find(|l| l.contains("Piped")).unwrap_or("");
    assert!(piped.contains(" 2 messages"), "{listed}");

    // `art threads | head -0`.
    let out = art_into_closed_pipe(data.path(), &["threads"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_ends_its_line_before_what_follows() {
    let thought = "<think>Add them up</think>";
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, &format!("{thought}{PLAN}"), 16),
            text_reply(Protocol::Ollama, "<think>It is 42</think>The sum is 42.", 8),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let out = art(
        data.path(),
        &[
            "run",
            "--new",
            "Thinking",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "--tools",
            "calculator",
            "--thinking",
            "What is 19 + 23?",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let thinking = stderr(&out);
    assert!(thinking.contains("Add them up\n"), "{thinking:?}");
    assert!(thinking.contains("It is 42\n"), "{thinking:?}");
    assert!(stdout(&out).contains("The sum is 42."), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_question_is_left_out_then_asked_again_or_dropped() {
    let refused = || {
        Reply::error(
            400,
            r#"{"error":"request (5000 tokens) exceeds the available context size (4096 tokens)"}"#,
        )
    };
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        // No tools: each run is one call.
        vec![
            refused(),
            text_reply(Protocol::Ollama, "Hello.", 8),
            text_reply(Protocol::Ollama, "Long answer.", 8),
            refused(),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let out = art(data.path(), &ask_new("Long", &url, "A very long question")).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("context size"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("art retry --thread"),
        "{}",
        stderr(&out)
    );
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();

    // The thread still answers, without sending the failed question again.
    let out = art(data.path(), &["run", "--thread", &thread, "Hi"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent: Vec<String> = ollama
        .requests()
        .iter()
        .filter(|r| r.request_line.contains("/api/chat"))
        .map(|r| r.body.clone())
        .collect();
    assert!(sent.len() >= 2, "{sent:?}");
    assert!(
        sent[1..]
            .iter()
            .all(|b| !b.contains("A very long question")),
        "{sent:?}"
    );

    // Asked again: the failed one is replaced by the new run.
    let out = art(data.path(), &["retry", "--thread", &thread]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Long answer."), "{}", stdout(&out));
    let listed = stdout(&art(data.path(), &["threads"]).await);
    assert!(listed.contains(" 4 messages"), "{listed}");
    let out = art(data.path(), &["retry", "--thread", &thread]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no failed question"),
        "{}",
        stderr(&out)
    );

    // Or dropped.
    let out = art(
        data.path(),
        &["run", "--thread", &thread, "Another long one"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let out = art(data.path(), &["drop", "--thread", &thread]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("removed the failed question"),
        "{}",
        stderr(&out)
    );
    let listed = stdout(&art(data.path(), &["threads"]).await);
    assert!(listed.contains(" 4 messages"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_make_branches_to_list_switch_and_fork() {
    // No tools: each run is one call, the answer's.
    let run = |answer: &'static str| [text_reply(Protocol::Ollama, answer, 4)];
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        [run("One."), run("Two."), run("Two, edited.")].concat(),
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let out = art(data.path(), &ask_new("Chat", &url, "First?")).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let out = art(data.path(), &["run", "--thread", &thread, "Second?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // `art branches`: the active branch, one message a line, its id first.
    let branch = stdout(&art(data.path(), &["branches", "--thread", &thread]).await);
    let lines: Vec<&str> = branch.lines().collect();
    assert_eq!(lines.len(), 4, "{branch}");
    let id = |line: &str| line.split_whitespace().next().unwrap().to_owned();
    let (first_answer, second) = (id(lines[1]), id(lines[2]));
    assert!(
        lines[2].contains("you") && lines[2].contains("Second?"),
        "{branch}"
    );

    // Edit & resend from the command line: a branch beside the second question.
    let out = art(
        data.path(),
        &[
            "run",
            "--thread",
            &thread,
            "--edit",
            &second,
            "Second, edited?",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Two, edited."), "{}", stdout(&out));
    let branch = stdout(&art(data.path(), &["branches", "--thread", &thread]).await);
    // Each alternative labelled with its run's model.
    assert!(
        branch.contains(&format!("(ollama:{MODEL}) Second, edited? [2 of 2]"))
            && branch.contains(&format!("1 of 2: {second}  (ollama:{MODEL}) Second?")),
        "{branch}"
    );
    let listed = stdout(&art(data.path(), &["threads"]).await);
    assert!(listed.contains(" 6 messages"), "nothing removed: {listed}");
    // The model read the active branch only.
    let last = ollama.requests().last().unwrap().body.clone();
    assert!(
        last.contains("Second, edited?") && !last.contains("Two."),
        "{last}"
    );

    // Back to the first version.
    let out = art(
        data.path(),
        &["switch", "--thread", &thread, "--message", &second],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("assistant Two.\n"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("Second? [1 of 2]"),
        "{}",
        stdout(&out)
    );

    // Fork after the first answer: a new thread that says where it came from.
    let out = art(
        data.path(),
        &["fork", "--thread", &thread, "--message", &first_answer],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let fork = stdout(&out).trim().to_owned();
    let listed = stdout(&art(data.path(), &["threads"]).await);
    assert!(
        listed.contains(&format!("forked from {thread} at {first_answer}")),
        "{listed}"
    );
    let forked = stdout(&art(data.path(), &["branches", "--thread", &fork]).await);
    assert_eq!(forked.lines().count(), 2, "{forked}");
    assert!(
        forked.contains("First?") && forked.contains("One."),
        "{forked}"
    );

    // Mistakes: an unknown message, an edit without a thread.
    let out = art(
        data.path(),
        &["switch", "--thread", &thread, "--message", "nope"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not in this thread"),
        "{}",
        stderr(&out)
    );
    let out = art(data.path(), &["run", "--edit", &second, "x"]).await;
    assert!(!out.status.success());
    // Only your own questions can be edited (the app's rule, in `art`): an answer is
    // refused before any branch is made or any model asked.
    let asked = ollama.requests().len();
    let before = stdout(&art(data.path(), &["branches", "--thread", &thread]).await);
    let out = art(
        data.path(),
        &["run", "--thread", &thread, "--edit", &first_answer, "x"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("only your own messages can be edited"),
        "{}",
        stderr(&out)
    );
    let after = stdout(&art(data.path(), &["branches", "--thread", &thread]).await);
    assert_eq!(before, after, "the thread is unchanged");
    assert_eq!(ollama.requests().len(), asked, "no model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_sums_runs_and_prices_cost_them() {
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![text_reply(Protocol::Ollama, "The sum is 42.", 4)],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let out = art(data.path(), &ask_new("Sums", &url, "What is 19 + 23?")).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let out = art(data.path(), &["usage"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let model = table
        .lines()
        .find(|l| l.starts_with(&format!("{MODEL} (ollama)")))
        .unwrap_or_else(|| panic!("{table}"));
    let columns: Vec<&str> = model.split_whitespace().collect();
    assert_eq!(columns[2], "1", "one run: {model}");
    assert!(model.ends_with('—'), "no cost without a price: {model}");
    assert!(stderr(&out).contains("not guessed"), "{}", stderr(&out));

    // A price for the model: the run gets a cost.
    let out = art(
        data.path(),
        &[
            "price",
            "set",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--input",
            "1",
            "--output",
            "2",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&art(data.path(), &["usage", "--by", "provider"]).await);
    let line = table.lines().find(|l| l.starts_with("ollama")).unwrap();
    assert!(line.contains("$0.0000"), "{table}");
    let listed = stdout(&art(data.path(), &["price", "list"]).await);
    assert!(
        listed.contains(&format!("ollama/{MODEL}  in $1/M  out $2/M")),
        "{listed}"
    );

    // Per thread, per day, and mistakes.
    let table = stdout(&art(data.path(), &["usage", "--by", "thread"]).await);
    assert!(table.contains(" Sums "), "{table}");
    let table = stdout(&art(data.path(), &["usage", "--by", "day"]).await);
    assert_eq!(table.lines().count(), 3, "heading, today, total: {table}");
    let out = art(data.path(), &["usage", "--since", "yesterday"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("YYYY-MM-DD"), "{}", stderr(&out));
    let out = art(
        data.path(),
        &[
            "price",
            "set",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--input",
            "-1",
            "--output",
            "2",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("0 to 10000"), "{}", stderr(&out));
    let out = art(
        data.path(),
        &["price", "remove", "--provider", "x", "--model", "y"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
}

/// A thread's settings from the command line: printed, changed and checked as the app
/// checks them (nothing invalid saved, every problem named); an unknown provider is
/// refused before anything is created, with the list, in any case; `art threads` says
/// which model each thread uses and which waits for a decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_settings_are_read_and_changed_from_the_cli() {
    let data = tempfile::tempdir().unwrap();
    let refused = art(
        data.path(),
        &[
            "run",
            "--new",
            "Typo",
            "--provider",
            "olama",
            "--model",
            "m",
            "Hi?",
        ],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("there is no provider named \"olama\"; the providers are: ")
            && stderr(&refused).contains("ollama"),
        "{}",
        stderr(&refused)
    );
    let listed = stdout(&art(data.path(), &["threads"]).await);
    assert!(
        listed.contains("No threads yet"),
        "nothing was created: {listed}"
    );
    assert!(
        listed.contains("art run --new TITLE --provider"),
        "{listed}"
    );

    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![text_reply(Protocol::Ollama, "The sum is 42.", 4)],
    )
    .await
    .unwrap();
    let url = ollama.url();
    // Any case names a provider.
    let made = art(
        data.path(),
        &[
            "run",
            "--new",
            "Sums",
            "--provider",
            "Ollama",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "What is 6*7?",
        ],
    )
    .await;
    assert!(made.status.success(), "{}", stderr(&made));
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    assert!(listed.contains(&format!("(ollama/{MODEL})")), "{listed}");

    let shown = stdout(&art(data.path(), &["config", "--thread", &thread]).await);
    assert!(shown.contains("provider        ollama"), "{shown}");
    assert!(shown.contains(&format!("base URL        {url}")), "{shown}");
    let changed = art(
        data.path(),
        &[
            "config",
            "--thread",
            &thread,
            "--tools",
            "calculator",
            "--policy",
            "calculator=asks",
            "--plan-review",
            "on",
            "--structured-plans",
            "off",
            "--search-first",
            "on",
            "--tool-calling",
            "text",
            "--max-tokens",
            "512",
            "--system-prompt",
            "Be brief.",
        ],
    )
    .await;
    assert!(changed.status.success(), "{}", stderr(&changed));
    let shown = stdout(&changed);
    assert!(shown.contains("Saved."), "{shown}");
    assert!(
        shown.contains("tools           calculator (asks first)"),
        "{shown}"
    );
    assert!(shown.contains("plan review     on"), "{shown}");
    assert!(shown.contains("plan schema     off"), "{shown}");
    assert!(shown.contains("search first    on"), "{shown}");
    assert!(shown.contains("tool calling    text"), "{shown}");
    assert!(shown.contains("max tokens      512"), "{shown}");
    assert!(shown.contains("system prompt   \"Be brief.\""), "{shown}");

    // Checked as the app checks: every problem named, nothing saved.
    let wrong = art(
        data.path(),
        &[
            "config",
            "--thread",
            &thread,
            "--tools",
            "nope",
            "--step-calls",
            "0",
            "--model",
            "",
        ],
    )
    .await;
    assert_eq!(wrong.status.code(), Some(1));
    let said = stderr(&wrong);
    assert!(said.contains("nothing was saved"), "{said}");
    assert!(
        said.contains("enabledTools") && said.contains("limits.stepIterations"),
        "{said}"
    );
    assert!(
        said.contains("providerConfig.modelId: choose a model"),
        "{said}"
    );
    let shown = stdout(&art(data.path(), &["config", "--thread", &thread]).await);
    assert!(
        shown.contains("tools           calculator (asks first)"),
        "{shown}"
    );
    // A misspelt provider cannot be set either; the right one fixes the thread.
    let wrong = art(
        data.path(),
        &["config", "--thread", &thread, "--provider", "OpenAl"],
    )
    .await;
    assert!(
        stderr(&wrong).contains("the providers are:"),
        "{}",
        stderr(&wrong)
    );
}

/// A relative `--data-dir` is taken from the current folder (as any path a command is
/// given); an empty one is refused naming the flag the user gave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_data_dir_is_taken_from_the_current_folder() {
    let cwd = tempfile::tempdir().unwrap();
    let run = |dir: &'static str| {
        let cwd = cwd.path().to_owned();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_art"))
                .current_dir(&cwd)
                .args(["--data-dir", dir, "threads"])
                .env_remove("ART_WORKBENCH_DATA_DIR")
                .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB)
                .output()
                .unwrap()
        })
    };
    let listed = run("here/data").await.unwrap();
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        cwd.path()
            .join("here/data")
            .join(art::paths::DATABASE_FILE)
            .is_file(),
        "the database is in the folder given"
    );
    let empty = run("").await.unwrap();
    assert!(!empty.status.success());
    assert!(stderr(&empty).contains("--data-dir"), "{}", stderr(&empty));
}

/// A thread without tools answers in one streamed call: one request reaches the server,
/// the footer says there was no plan and when the first token came; `--plan-first on`
/// brings the planning call back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_without_tools_answers_in_one_call_and_the_footer_says_so() {
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, "The capital of France is Paris.", 4),
            text_reply(
                Protocol::Ollama,
                r#"{"title": "Capitals", "intent": "name one", "steps": []}"#,
                16,
            ),
            text_reply(Protocol::Ollama, "Madrid.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let chats = || {
        ollama
            .requests()
            .into_iter()
            .filter(|r| r.request_line.contains("/api/chat"))
            .count()
    };
    let out = art(
        data.path(),
        &crate::ask_new("Geography", &url, "What is the capital of France?"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(
        printed.contains("The capital of France is Paris."),
        "{printed}"
    );
    assert!(!printed.contains("Plan"), "{printed}");
    assert!(
        printed.contains("1 LLM calls, 0 tool calls, no plan"),
        "{printed}"
    );
    assert!(printed.contains("first token "), "{printed}");
    assert_eq!(chats(), 1);

    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let shown = stdout(&art(data.path(), &["config", "--thread", &thread]).await);
    assert!(
        shown.contains("plans           no: answers in one call"),
        "{shown}"
    );
    let set = art(
        data.path(),
        &["config", "--thread", &thread, "--plan-first", "on"],
    )
    .await;
    assert!(set.status.success(), "{}", stderr(&set));
    let out = art(data.path(), &["run", "--thread", &thread, "And of Spain?"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(printed.contains("Madrid."), "{printed}");
    assert!(!printed.contains("no plan"), "{printed}");
    assert_eq!(chats(), 3, "a planning call, then the answer");
}
