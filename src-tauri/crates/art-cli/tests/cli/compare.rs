//! `art diff` and `art replay` against the real binary and a fake Ollama over TCP: two
//! runs compared, and a run replayed on another model with its tools answered from the
//! record, or run again.

use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};
use art_testkit::fake::{FakeServer, Reply};

use crate::commands::{PLAN, art, stderr, stdout};

/// The id of the thread `art threads` lists first (the only one, in these tests).
async fn first_thread(data: &std::path::Path) -> String {
    let threads = art(data, &["threads"]).await;
    stdout(&threads)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// The run id a run's footer names (`… · run ID`).
fn run_id(printed: &str) -> String {
    printed
        .rsplit_once(" · run ")
        .map(|(_, id)| id.trim().to_owned())
        .unwrap_or_else(|| panic!("no run id in: {printed}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_compares_two_runs_as_markdown_and_json() {
    let other_plan = PLAN
        .replace("19 + 23", "19 + 24")
        .replace("\"Answer\"", "\"Check the sum\", \"Answer\"");
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, PLAN, 16),
            text_reply(Protocol::Ollama, "The sum is 42.", 4),
            text_reply(Protocol::Ollama, &other_plan, 16),
            text_reply(Protocol::Ollama, "The sum is 43.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let ask = |thread: Option<String>| {
        let mut args: Vec<String> = [
            "run",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "--tools",
            "calculator",
        ]
        .map(str::to_owned)
        .to_vec();
        match thread {
            Some(t) => args.extend(["--thread".to_owned(), t]),
            None => args.extend(["--new".to_owned(), "Sums".to_owned()]),
        }
        args.push("What is 19 + 23?".to_owned());
        args
    };
    let first = art(
        data.path(),
        &ask(None).iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    assert!(first.status.success(), "{}", stderr(&first));
    let a = run_id(&stdout(&first));
    let thread = first_thread(data.path()).await;
    let second = art(
        data.path(),
        &ask(Some(thread))
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    )
    .await;
    assert!(second.status.success(), "{}", stderr(&second));
    let b = run_id(&stdout(&second));
    assert_ne!(a, b);

    // Piped, by default: no markup, the answers as `-` / `+` lines.
    let out = art(data.path(), &["diff", &a, &b]).await;
    let plain = stdout(&out);
    assert!(out.status.success(), "{plain}\n{}", stderr(&out));
    assert!(
        !plain.contains("<del>") && !plain.contains('\x1b'),
        "{plain}"
    );
    assert!(plain.contains("- + Check the sum (B only)"), "{plain}");
    assert!(
        plain.contains("\n- The sum is 42.\n+ The sum is 43."),
        "{plain}"
    );
    let out = art(data.path(), &["diff", &a, &b, "--format", "md"]).await;
    let md = stdout(&out);
    assert!(out.status.success(), "{md}\n{}", stderr(&out));
    let runs_row = format!("| Run | `{a}` | `{b}` |");
    let models_row = format!("| Model | ollama:{MODEL} | ollama:{MODEL} |");
    for expected in [
        runs_row.as_str(),
        models_row.as_str(),
        "| Ended | success | success |",
        "| Model calls | 2 | 2 |",
        "| Question | What is 19 + 23? | What is 19 + 23? |",
        "- + <ins>Check the sum</ins> (B only)",
        "### 1. `calculator` — arguments differ, results differ",
        "| `expression` | `\"19 + 23\"` | `\"19 + 24\"` |",
        "The sum is <del>42.</del><ins>43.</ins>",
    ] {
        assert!(md.contains(expected), "{expected:?} not in:\n{md}");
    }
    let out = art(data.path(), &["diff", &a, &b, "--format", "json"]).await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["a"]["traceId"], a.as_str());
    assert_eq!(json["tools"][0]["arguments"][0]["b"], "19 + 24");
    assert_eq!(json["tools"][0]["b"]["result"]["result"], 43.0);

    // A run that is not there: said, and a failing status.
    let out = art(data.path(), &["diff", &a, "no-such-run"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no run no-such-run"),
        "{}",
        stderr(&out)
    );
}

/// The replay's plan: the recorded call, and one the run never made.
fn replay_plan() -> String {
    PLAN.replace(
        "}}]}",
        r#"}}, {"callId": "c2", "toolName": "calculator", "arguments": {"expression": "2 + 2"}}]}"#,
    )
}

/// A fake Ollama answering a first run in a new thread with the calculator (it asks
/// 19 + 23 and answers 42), then `more`; the server, the data directory and the first
/// run's id.
async fn first_run(more: Vec<Reply>) -> (FakeServer, tempfile::TempDir, String) {
    let mut replies = vec![
        text_reply(Protocol::Ollama, PLAN, 16),
        text_reply(Protocol::Ollama, "The sum is 42.", 4),
    ];
    replies.extend(more);
    let ollama = FakeServer::start_at(0, Some(router(Protocol::Ollama)), replies)
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let mut ask = crate::ask_new("Sums", &url, "What is 19 + 23?");
    ask.splice(1..1, ["--tools", "calculator"]);
    let first = art(data.path(), &ask).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let original = run_id(&stdout(&first));
    (ollama, data, original)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_replayed_on_another_model_answers_from_the_record_or_runs_again() {
    // The replay's plan makes the recorded call and one the run never made.
    let replay_plan = replay_plan();
    let (_ollama, data, original) = first_run(vec![
        text_reply(Protocol::Ollama, &replay_plan, 16),
        // The step goes on once after its failed call (the model reads the error).
        text_reply(Protocol::Ollama, "2 + 2 was not recorded.", 4),
        text_reply(Protocol::Ollama, "42, and 2 + 2 was not recorded.", 4),
        text_reply(Protocol::Ollama, &replay_plan, 16),
        text_reply(Protocol::Ollama, "42 and 4.", 4),
        text_reply(Protocol::Ollama, &replay_plan, 16),
        text_reply(Protocol::Ollama, "The calculator is not there.", 4),
        text_reply(Protocol::Ollama, "No calculator to ask.", 4),
    ])
    .await;

    // Recorded, on another model of the thread's provider (reached where the thread
    // reaches it), with the calculator not even enabled: the recorded call gets its
    // recorded result, so nothing ran; the other is answered "not recorded".
    let out = art(
        data.path(),
        &[
            "replay",
            "--trace",
            &original,
            "--model",
            "ollama:other:7b",
            "--recorded",
            "--tools",
            "current_time",
        ],
    )
    .await;
    assert!(
        out.status.success() || out.status.code() == Some(3),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("tools answered from the record"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("`calculator` (called by the run) is not offered to the model now"),
        "{}",
        stderr(&out)
    );
    let recorded = run_id(&stdout(&out));
    let diff = art(
        data.path(),
        &["diff", &original, &recorded, "--format", "json"],
    )
    .await;
    let json: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("JSON");
    assert_eq!(json["b"]["model"], "other:7b", "{json:#}");
    assert_eq!(json["tools"][0]["edit"], "same", "{json:#}");
    assert_eq!(json["tools"][0]["b"]["result"]["result"], 42.0);
    assert_eq!(json["tools"][1]["edit"], "added");
    assert_eq!(json["tools"][1]["b"]["failed"], true);
    let md = stdout(&art(data.path(), &["diff", &original, &recorded]).await);
    assert!(md.contains("not recorded"), "{md}");

    // Live: the tools run again (the thread's calculator, 2 + 2 worked out).
    let out = art(data.path(), &["replay", "--trace", &original]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let live = run_id(&stdout(&out));
    let diff = art(data.path(), &["diff", &original, &live, "--format", "json"]).await;
    let json: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("JSON");
    assert_eq!(json["tools"][1]["b"]["result"]["result"], 4.0, "{json:#}");

    // The replays are branches beside the original, and their traces name it.
    let branches = stdout(&art(data.path(), &["threads"]).await);
    let thread = branches.split_whitespace().next().unwrap().to_owned();
    let listed = art(data.path(), &["branches", "--thread", &thread]).await;
    // The live replay's question is shown, the third beside the original's.
    assert!(stdout(&listed).contains("[3 of 3]"), "{}", stdout(&listed));
    let file = data.path().join("replays.jsonl");
    let export = art(
        data.path(),
        &[
            "export",
            "--format",
            "otlp",
            "--thread",
            &thread,
            "-o",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert!(export.status.success(), "{}", stderr(&export));
    let spans = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        spans.matches(r#""key":"art.replay.of""#).count(),
        2,
        "{spans}"
    );
    assert!(spans.contains(&format!(r#"{{"stringValue":"{original}"}}"#)));

    // Live without the calculator: said before it starts; the calls the model makes to
    // it fail (nothing answers them from the record), and the model reads why.
    let out = art(
        data.path(),
        &["replay", "--trace", &original, "--tools", "current_time"],
    )
    .await;
    assert!(
        stderr(&out).contains("`calculator` (called by the run) is not available now"),
        "{}",
        stderr(&out)
    );
    let without = run_id(&stdout(&out));
    let diff = art(
        data.path(),
        &["diff", &original, &without, "--format", "json"],
    )
    .await;
    let json: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("JSON");
    assert_eq!(json["tools"][0]["b"]["failed"], true, "{json:#}");
    assert_eq!(json["tools"][1]["b"]["failed"], true, "{json:#}");

    // A run that is not there cannot be replayed.
    let out = art(data.path(), &["replay", "--trace", "no-such-run"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no run no-such-run"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_record_lacks_runs_once_approved_and_a_waiting_run_is_replayed_once_ended() {
    let replay_plan = replay_plan();
    let (_ollama, data, original) = first_run(vec![
        text_reply(Protocol::Ollama, &replay_plan, 16),
        text_reply(Protocol::Ollama, "42 and 4.", 4),
        text_reply(Protocol::Ollama, PLAN, 16),
        text_reply(Protocol::Ollama, PLAN, 16),
        text_reply(Protocol::Ollama, "It was never worked out.", 4),
        text_reply(Protocol::Ollama, "The sum was not recorded.", 4),
    ])
    .await;
    let thread = first_thread(data.path()).await;

    // The call the run made is answered from the record without asking; the one it
    // did not make asks first, and runs once approved.
    let out = art(
        data.path(),
        &[
            "replay",
            "--trace",
            &original,
            "--recorded",
            "--unmatched",
            "ask",
            "--approve",
            "all",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let replay = run_id(&stdout(&out));
    let diff = art(
        data.path(),
        &["diff", &original, &replay, "--format", "json"],
    )
    .await;
    let json: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("JSON");
    assert_eq!(json["tools"][0]["edit"], "same", "{json:#}");
    assert_eq!(json["tools"][1]["b"]["result"]["result"], 4.0, "{json:#}");

    // A run waiting for a decision is not replayed while it waits…
    let asks = art(
        data.path(),
        &["config", "--thread", &thread, "--policy", "calculator=asks"],
    )
    .await;
    assert!(asks.status.success(), "{}", stderr(&asks));
    let waiting = art(
        data.path(),
        &["run", "--thread", &thread, "What is 19 + 23?"],
    )
    .await;
    assert_eq!(waiting.status.code(), Some(4), "{}", stderr(&waiting));
    let waiting = stderr(&waiting)
        .split_once("art: run ")
        .and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
        .expect("the waiting run's id");
    let out = art(data.path(), &["replay", "--trace", &waiting, "--recorded"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("waits for your decision"),
        "{}",
        stderr(&out)
    );
    // …and once stopped (its call never ran), replayed from its record: the call it
    // never made is "not recorded".
    let stop = art(data.path(), &["stop", "--thread", &thread]).await;
    assert!(stop.status.success(), "{}", stderr(&stop));
    let out = art(data.path(), &["replay", "--trace", &waiting, "--recorded"]).await;
    assert!(
        out.status.success() || out.status.code() == Some(3),
        "{}",
        stderr(&out)
    );
    let replay = run_id(&stdout(&out));
    let diff = art(
        data.path(),
        &["diff", &waiting, &replay, "--format", "json"],
    )
    .await;
    let json: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("JSON");
    assert_eq!(json["tools"][0]["b"]["failed"], true, "{json:#}");
    let md = stdout(&art(data.path(), &["diff", &waiting, &replay]).await);
    assert!(md.contains("not recorded"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_asks_two_local_models_in_turn_and_prints_columns_then_figures() {
    // No tools in the thread: the question and each column are one call each.
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, "Hello.", 4),
            text_reply(Protocol::Ollama, "The sum is 42.", 4),
            text_reply(Protocol::Ollama, "It is 42.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let url = ollama.url();
    let first = art(data.path(), &crate::ask_new("Sums", &url, "Hi")).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let thread = first_thread(data.path()).await;
    let model_a = format!("ollama:{MODEL}");
    let compare = [
        "compare",
        "--thread",
        &thread,
        "--model",
        &model_a,
        "--model",
        "ollama:qwen3",
        "What is 19 + 23?",
    ];
    let out = art(data.path(), &compare).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let a = printed
        .find(&format!("── 1. {model_a} ──"))
        .expect(&printed);
    let b = printed.find("── 2. ollama:qwen3 ──").expect(&printed);
    let sum = printed.find("The sum is 42.").expect(&printed);
    let it = printed.find("It is 42.").expect(&printed);
    assert!(a < sum && sum < b && b < it, "columns in order: {printed}");
    let table = printed.find("FIRST TOKEN").expect(&printed);
    assert!(table > it, "the figures last");
    let rows: Vec<&str> = printed[table..].lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{printed}");
    for row in &rows {
        assert!(row.contains("success"), "{row}");
    }
    assert!(
        stderr(&out).contains(&format!("ollama:qwen3 waits for {model_a}")),
        "says the local model queues: {}",
        stderr(&out)
    );
    // The thread shows the first column's answer; the second is a branch beside it.
    let shown = art(data.path(), &["branches", "--thread", &thread]).await;
    let shown = stdout(&shown);
    assert!(
        shown.contains("The sum is 42.") && !shown.contains("It is 42."),
        "{shown}"
    );
    // The two copies of the question are told apart by their models.
    assert!(
        shown.contains(&format!("({model_a}) What is 19 + 23?"))
            && shown.contains("(ollama:qwen3) What is 19 + 23?"),
        "{shown}"
    );
    // Each column is a run `art diff` can take.
    let ids: Vec<&str> = rows
        .iter()
        .map(|row| row.split_whitespace().last().unwrap())
        .collect();
    let diff = art(data.path(), &["diff", ids[0], ids[1]]).await;
    assert!(diff.status.success(), "{}", stderr(&diff));
    assert!(stdout(&diff).contains("First token"), "{}", stdout(&diff));
}

#[tokio::test]
async fn compare_refuses_too_few_models_and_unknown_providers() {
    let data = tempfile::tempdir().unwrap();
    for (args, said) in [
        (
            vec!["compare", "--thread", "t", "--model", "ollama:a", "Q?"],
            "give 2 to 4 models",
        ),
        (
            vec![
                "compare", "--thread", "t", "--model", "ollama:a", "--model", "nope:b", "Q?",
            ],
            "nope",
        ),
        (
            vec![
                "compare", "--thread", "t", "--model", "ollama:a", "--model", "ollama", "Q?",
            ],
            "PROVIDER:MODEL",
        ),
    ] {
        let out = art(data.path(), &args).await;
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
}

/// Columns of one provider kind at two servers (`PROVIDER@URL:MODEL`): each column asks
/// its own server, as one would compare LM Studio with llama.cpp; the figures name each
/// column with its server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_asks_each_column_at_its_own_server() {
    let home = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![text_reply(Protocol::Ollama, "Hello.", 4)],
    )
    .await
    .unwrap();
    let server = |answer: &'static str| async move {
        FakeServer::start_at(
            0,
            Some(router(Protocol::OpenAi)),
            vec![text_reply(Protocol::OpenAi, answer, 4)],
        )
        .await
        .unwrap()
    };
    let (lm_studio, llama_cpp) = (
        server("From LM Studio.").await,
        server("From llama.cpp.").await,
    );
    let data = tempfile::tempdir().unwrap();
    let first = art(data.path(), &crate::ask_new("Sums", &home.url(), "Hi")).await;
    assert!(first.status.success(), "{}", stderr(&first));
    let thread = first_thread(data.path()).await;
    let a = format!("openai@{}/v1:qwen2.5", lm_studio.url());
    let b = format!("openai@{}/v1:smollm2", llama_cpp.url());
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
    command
        .arg("--data-dir")
        .arg(data.path())
        .args(["compare", "--thread", &thread, "--model", &a, "--model", &b])
        .arg("Who are you?")
        .env("OPENAI_API_KEY", "sk-local-servers-take-any")
        .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let printed = stdout(&out);
    assert!(out.status.success(), "{printed}\n{}", stderr(&out));
    let column_a = printed.find(&format!("── 1. {a} ──")).expect(&printed);
    let column_b = printed.find(&format!("── 2. {b} ──")).expect(&printed);
    let said_a = printed.find("From LM Studio.").expect(&printed);
    let said_b = printed.find("From llama.cpp.").expect(&printed);
    assert!(
        column_a < said_a && said_a < column_b && column_b < said_b,
        "{printed}"
    );
    for (server, model) in [(&lm_studio, "qwen2.5"), (&llama_cpp, "smollm2")] {
        let chats: Vec<_> = server
            .requests()
            .into_iter()
            .filter(|r| r.request_line.contains("/chat/completions"))
            .collect();
        assert_eq!(chats.len(), 1, "{model}: one call each (no tools: no plan)");
        assert_eq!(chats[0].json()["model"], model);
    }
}
