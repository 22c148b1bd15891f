//! `art config --new-threads`: the settings every new thread starts with, set from the
//! command line and used by `art run --new` (as by the app's "+ New thread"), checked
//! as a thread's settings are.

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};

use crate::commands::{art, stderr, stdout};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_threads_start_with_the_default_model_and_tools() {
    let data = tempfile::tempdir().unwrap();
    let shown = stdout(&art(data.path(), &["config", "--new-threads"]).await);
    assert!(shown.contains("model           (none)"), "{shown}");

    // Checked as a thread's settings are: nothing saved when anything is wrong.
    let wrong = art(
        data.path(),
        &[
            "config",
            "--new-threads",
            "--provider",
            "ollama",
            "--tools",
            "nope",
        ],
    )
    .await;
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        stderr(&wrong).contains("nothing was saved"),
        "{}",
        stderr(&wrong)
    );
    let shown = stdout(&art(data.path(), &["config", "--new-threads"]).await);
    assert!(shown.contains("provider        (none)"), "{shown}");

    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(
                Protocol::Ollama,
                r#"{"title": "Hi", "intent": "Greet", "steps": []}"#,
                16,
            ),
            text_reply(Protocol::Ollama, "Hello there.", 4),
        ],
    )
    .await
    .unwrap();
    let url = ollama.url();
    let set = art(
        data.path(),
        &[
            "config",
            "--new-threads",
            "--provider",
            "ollama",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "--tools",
            "calculator",
        ],
    )
    .await;
    assert!(set.status.success(), "{}", stderr(&set));
    assert!(stdout(&set).contains("Saved."), "{}", stdout(&set));

    // A new thread needs no provider of its own: it starts with the default.
    let asked = art(data.path(), &["run", "--new", "Greeting", "Hi?"]).await;
    assert!(asked.status.success(), "{}", stderr(&asked));
    assert!(
        stdout(&asked).contains("Hello there."),
        "{}",
        stdout(&asked)
    );
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let shown = stdout(&art(data.path(), &["config", "--thread", &thread]).await);
    assert!(
        shown.contains(&format!("model           {MODEL}")),
        "{shown}"
    );
    assert!(shown.contains("tools           calculator"), "{shown}");

    // A thread's own settings are its own: the default changing later leaves it be.
    let changed = art(
        data.path(),
        &["config", "--new-threads", "--model", "other:1b"],
    )
    .await;
    assert!(changed.status.success(), "{}", stderr(&changed));
    let shown = stdout(&art(data.path(), &["config", "--thread", &thread]).await);
    assert!(
        shown.contains(&format!("model           {MODEL}")),
        "{shown}"
    );

    let neither = art(data.path(), &["config"]).await;
    assert_eq!(neither.status.code(), Some(2), "clap's usage error");
}
