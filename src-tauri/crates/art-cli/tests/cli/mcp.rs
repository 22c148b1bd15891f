//! `art mcp …` and `art run` with MCP tools, against the real servers the tests use
//! (`mcp-server-time` from PyPI, server-everything from npm): each command starts what
//! it needs and leaves no process behind.

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, router, text_reply};
use art_testkit::mcp::{MARKER_VAR, everything_script, marker, servers_dir, settle};

use crate::ask_new;
use crate::commands::{art, stderr, stdout};

/// `art mcp add time -- <mcp-server-time>`, the server marked so its processes can be
/// counted; the marker and the command's output.
async fn add_time(data: &std::path::Path) -> (String, std::process::Output) {
    let mark = marker();
    let env = format!("{MARKER_VAR}={mark}");
    let time = servers_dir().join("venv/bin/mcp-server-time");
    let args = [
        "mcp",
        "add",
        "time",
        "--env",
        &env,
        "--",
        time.to_str().unwrap(),
    ];
    let out = art(data, &args).await;
    (mark, out)
}

/// `art mcp add everything …` arguments: server-everything over stdio, marked `mark`,
/// with `env` (`NAME=value`) besides.
fn add_everything(mark: &str, env: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["mcp", "add", "everything", "--env"]
        .map(str::to_owned)
        .into();
    args.push(format!("{MARKER_VAR}={mark}"));
    for variable in env {
        args.extend(["--env".to_owned(), (*variable).to_owned()]);
    }
    args.extend([
        "--".to_owned(),
        "node".to_owned(),
        everything_script(),
        "stdio".to_owned(),
    ]);
    args
}

/// [`art`] with owned arguments.
async fn art_owned(data: &std::path::Path, args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    art(data, &args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_list_tools_call_and_remove() {
    let data = tempfile::tempdir().unwrap();
    let (mark, out) = add_time(data.path()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("time  ready (2 tools)  stdio"),
        "{}",
        stdout(&out)
    );
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let out = art(data.path(), &["mcp", "tools", "time"]).await;
    let listed = stdout(&out);
    assert!(
        listed.contains("time__get_current_time  Get current time"),
        "{listed}"
    );
    let out = art(
        data.path(),
        &[
            "mcp",
            "call",
            "time",
            "get_current_time",
            r#"{"timezone": "Asia/Tokyo"}"#,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"timezone\": \"Asia/Tokyo\""),
        "{}",
        stdout(&out)
    );
    // An image is described for the model; `--json` gives all of it.
    let out = art(
        data.path(),
        &["mcp", "call", "everything", "get-tiny-image"],
    )
    .await;
    assert!(
        stdout(&out).contains("[image: image/png, "),
        "{}",
        stdout(&out)
    );
    let out = art(
        data.path(),
        &["mcp", "call", "everything", "get-tiny-image", "--json"],
    )
    .await;
    let whole: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert!(
        whole["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "image")
    );
    // Wrong arguments are refused before the call, naming the problem.
    let out = art(
        data.path(),
        &[
            "mcp",
            "call",
            "time",
            "get_current_time",
            r#"{"timezone": 7}"#,
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("INVALID_TOOL_ARGUMENTS"),
        "{}",
        stderr(&out)
    );

    let out = art(data.path(), &["mcp", "disable", "everything"]).await;
    assert!(out.status.success());
    let out = art(data.path(), &["mcp", "list"]).await;
    let listed = stdout(&out);
    assert!(listed.contains("everything  disabled"), "{listed}");
    assert!(listed.contains("time  ready (2 tools)"), "{listed}");
    let out = art(data.path(), &["mcp", "remove", "time"]).await;
    assert!(out.status.success());
    assert!(!stdout(&art(data.path(), &["mcp", "list"]).await).contains("time"));
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_get_clear_messages() {
    let data = tempfile::tempdir().unwrap();
    let out = art(
        data.path(),
        &["mcp", "add", "files", "--", "/nowhere/npx", "-y", "server"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("files  failed: `/nowhere/npx` not found"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("install Node.js"), "{}", stderr(&out));
    let out = art(data.path(), &["mcp", "add", "Bad_Name", "--", "x"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("invalid server name"),
        "{}",
        stderr(&out)
    );
    let json = r#"{"mcpServers": {"My Time": {"command": "uvx", "args": ["mcp-server-time"]}, "old": {"type": "sse", "url": "http://h/sse"}}}"#;
    let file = data.path().join("claude.json");
    std::fs::write(&file, json).unwrap();
    let out = art(data.path(), &["mcp", "import", file.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(1), "one was skipped");
    assert!(
        stdout(&out).contains("Added my-time (named `My Time` in the file)."),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("skipped `old`: the older HTTP+SSE transport"),
        "{}",
        stderr(&out)
    );
    let out = art(data.path(), &["mcp", "remove", "nothing"]).await;
    assert!(stderr(&out).contains("there is no MCP server named `nothing`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_calls_a_thread_s_mcp_tool_and_ends_its_server() {
    let plan = r#"{"title": "Time", "intent": "Tell the time in Tokyo", "plan": ["Ask the time server"], "toolCalls": [{"callId": "c1", "toolName": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]}"#;
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "It is evening in Tokyo.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let (mark, out) = add_time(data.path()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let url = ollama.url();
    let mut args = ask_new("Tokyo", &url, "What time is it in Tokyo?");
    args.splice(1..1, ["--tools", "time__get_current_time"]);
    // An MCP tool asks first: without a terminal to ask on, the run waits (exit 4).
    let out = art(data.path(), &args).await;
    let printed = stdout(&out);
    assert_eq!(out.status.code(), Some(4), "{printed}\n{}", stderr(&out));
    assert!(
        printed
            .contains("Waiting for approval: time__get_current_time {\"timezone\":\"Asia/Tokyo\"}"),
        "{printed}"
    );
    assert!(
        stderr(&out).contains("art approve --thread"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        settle(&mark, 5).await,
        0,
        "the waiting run's server outlived it"
    );
    // Approved from another process, the run goes on where it stopped.
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let out = art(data.path(), &["approve", "--thread", &thread]).await;
    let printed = stdout(&out);
    assert!(out.status.success(), "{printed}\n{}", stderr(&out));
    assert!(
        printed.contains("Tool time__get_current_time approved"),
        "{printed}"
    );
    assert!(
        printed.contains("Tool time__get_current_time {\"timezone\":\"Asia/Tokyo\"}: ok"),
        "{printed}"
    );
    assert!(printed.contains("It is evening in Tokyo."), "{printed}");
    // The synthesis call carried the server's answer.
    let synthesis = ollama
        .requests()
        .into_iter()
        .filter(|r| r.request_line.contains("/api/chat"))
        .nth(1)
        .unwrap();
    assert!(
        synthesis.body.contains("Asia/Tokyo") && synthesis.body.contains("day_of_week"),
        "{}",
        synthesis.body
    );
    assert_eq!(settle(&mark, 5).await, 0, "the run's server outlived it");

    // `--approve none`: the call is denied, the model told, the run partial (exit 3).
    let denied = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "The user said no.", 4),
            text_reply(Protocol::Ollama, "I was not allowed to ask.", 4),
        ],
    )
    .await
    .unwrap();
    let url = denied.url();
    let model = art_testkit::fake::scripts::MODEL;
    let out = art(
        data.path(),
        &[
            "run",
            "--thread",
            &thread,
            "--provider",
            "ollama",
            "--model",
            model,
            "--base-url",
            &url,
            "--approve",
            "none",
            "Again?",
        ],
    )
    .await;
    let printed = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{printed}\n{}", stderr(&out));
    assert!(
        printed.contains("Tool time__get_current_time denied"),
        "{printed}"
    );
    assert!(printed.contains("I was not allowed to ask."), "{printed}");

    // Disabled, its tool is unavailable and the run says so instead of failing.
    art(data.path(), &["mcp", "disable", "time"]).await;
    let again = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "I could not ask.", 4),
        ],
    )
    .await
    .unwrap();
    let url = again.url();
    let out = art(
        data.path(),
        &[
            "run",
            "--thread",
            &thread,
            "--provider",
            "ollama",
            "--model",
            art_testkit::fake::scripts::MODEL,
            "--base-url",
            &url,
            "And now?",
        ],
    )
    .await;
    let printed = stdout(&out);
    assert!(
        printed.contains("time__get_current_time") && printed.contains("not running"),
        "{printed}\n{}",
        stderr(&out)
    );
}

/// A stdio server gets a small safe part of our environment and its own configured
/// variables — never the provider keys a CLI user exports, nor any other secret of the
/// shell (server-everything's `get-env` prints everything it was given).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_never_sees_the_keys_in_our_environment() {
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let data_dir = data.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_art"))
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["mcp", "call", "everything", "get-env", "{}"])
            .env("OPENAI_API_KEY", "sk-SENTINEL-openai-0123456789abcdef")
            .env("ANTHROPIC_API_KEY", "sk-ant-SENTINEL-0123456789abcdef")
            .env("SOME_SHELL_TOKEN", "SENTINEL-shell-token")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = stdout(&out);
    assert!(
        !seen.contains("SENTINEL"),
        "keys reached the server: {seen}"
    );
    assert!(
        !seen.contains("OPENAI_API_KEY") && !seen.contains("SOME_SHELL_TOKEN"),
        "{seen}"
    );
    assert!(seen.contains(&mark), "its configured variable: {seen}");
    assert!(seen.contains("PATH"), "enough to find programs: {seen}");
    assert_eq!(settle(&mark, 10).await, 0);
}

/// `art` on a terminal (a pseudo-terminal from `script`), its output read as it comes.
struct Terminal {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Terminal {
    fn start(data: &std::path::Path, args: &[&str]) -> Self {
        use std::io::Read;
        // `exec`: the shell `script` starts (`$SHELL`, else /bin/sh) must not stay as the
        // parent, or Ctrl-C kills that shell too and `script` reports 130 whatever `art`
        // answered (dash dies of SIGINT; bash happens to exec a single command itself).
        let mut line = format!(
            "exec {} --data-dir '{}'",
            env!("CARGO_BIN_EXE_art"),
            data.display()
        );
        for arg in args {
            line.push_str(&format!(" '{}'", arg.replace('\'', r"'\''")));
        }
        let mut child = std::process::Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("script (util-linux) runs");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Self { child, stdin, seen }
    }

    /// Wait until the output holds `needle` `times` times.
    async fn wait_for(&self, needle: &str, times: usize) -> String {
        for _ in 0..600 {
            let seen = self.seen.lock().unwrap().clone();
            if seen.matches(needle).count() >= times {
                return seen;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!(
            "never saw {needle:?} {times} times in:\n{}",
            self.seen.lock().unwrap()
        );
    }

    fn type_in(&mut self, text: &str) {
        use std::io::Write;
        self.stdin.write_all(text.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    async fn exit_code(mut self) -> (Option<i32>, String) {
        let status = tokio::task::block_in_place(|| self.child.wait()).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        (status.code(), self.seen.lock().unwrap().clone())
    }
}

/// Asked on the terminal: an edit that does not fit the tool's schema says why and asks
/// again (the run still waits); an edit that fits runs, and the line shows the
/// arguments that ran beside what the model proposed; Ctrl-C at the question leaves the
/// run waiting for `art approve` (exit 4) instead of doing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_question_re_asks_a_wrong_edit_and_ctrl_c_leaves_it_waiting() {
    let plan = r#"{"title": "Time", "intent": "Tell the time in Tokyo", "plan": ["Ask the time server"], "toolCalls": [{"callId": "c1", "toolName": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]}"#;
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "It is morning in Paris.", 4),
            text_reply(Protocol::Ollama, plan, 16),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let (mark, out) = add_time(data.path()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let url = ollama.url();
    let mut args = ask_new("Tokyo", &url, "What time is it in Tokyo?");
    args.splice(1..1, ["--tools", "time__get_current_time"]);
    let mut terminal = Terminal::start(data.path(), &args);
    terminal.wait_for("Run it?", 1).await;
    terminal.type_in("e\n{\"timezone\": 7}\n");
    let seen = terminal.wait_for("Run it?", 2).await;
    assert!(seen.contains("do not fit the tool"), "{seen}");
    terminal.type_in("e\n{\"timezone\": \"Europe/Paris\"}\n");
    let (code, seen) = terminal.exit_code().await;
    assert_eq!(code, Some(0), "{seen}");
    assert!(
        seen.contains(
            "Tool time__get_current_time {\"timezone\":\"Europe/Paris\"} (edited; the model \
             proposed {\"timezone\":\"Asia/Tokyo\"}): ok"
        ),
        "{seen}"
    );

    // Ctrl-C at the question: the run is left waiting, and says how to go on.
    let listed = stdout(&art(data.path(), &["threads"]).await);
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let again = [
        "run",
        "--thread",
        thread.as_str(),
        "What time is it in Tokyo now?",
    ];
    let mut terminal = Terminal::start(data.path(), &again);
    terminal.wait_for("Run it?", 1).await;
    terminal.type_in("\u{3}");
    let (code, seen) = terminal.exit_code().await;
    assert_eq!(code, Some(4), "{seen}");
    assert!(seen.contains("art approve --thread"), "{seen}");
    let waiting = art(data.path(), &["deny", "--thread", &thread]).await;
    assert!(
        !stderr(&waiting).contains("waits for a decision"),
        "the run still waited: {}",
        stderr(&waiting)
    );
    assert_eq!(settle(&mark, 10).await, 0);
}

/// `art mcp list` with a server that never answers: listed as not answering within
/// moments, beside the servers that work, instead of waiting out the handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_does_not_wait_for_a_hung_server() {
    use std::sync::Arc;
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    {
        let storage = Arc::new(
            art::storage::sqlite::SqliteStorage::open(data.path().join(art::paths::DATABASE_FILE))
                .unwrap(),
        );
        let store =
            art::tools::mcp::McpStore::new(storage, Arc::new(art::secrets::MemoryStore::default()));
        for (name, mode) in [("stuck", "hang-on-init"), ("fine", "ok")] {
            let config = art_testkit::mcp::fault(name, mode, &mark);
            store.save(&config, &Default::default()).await.unwrap();
        }
    }
    let started = std::time::Instant::now();
    let out = art(data.path(), &["mcp", "list"]).await;
    let listed = stdout(&out);
    assert!(out.status.success(), "{listed}\n{}", stderr(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(listed.contains("fine  ready (1 tool)"), "{listed}");
    assert!(
        listed.contains("stuck  not answering after 5 s (still starting, or hung"),
        "{listed}"
    );
    assert_eq!(
        settle(&mark, 10).await,
        0,
        "the hung server outlived `art mcp list`"
    );
}

/// `art --data-dir DATA ARGS…` where no OS keychain runs (no D-Bus session), with
/// `env` (`NAME`, value) besides; a browser that fails, should anything open one.
fn without_keychain(
    data: &std::path::Path,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
) -> tokio::task::JoinHandle<std::process::Output> {
    let data = data.to_owned();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_art"))
            .arg("--data-dir")
            .arg(&data)
            .args(&args)
            .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
            .env("BROWSER", "false")
            .envs(env)
            .output()
            .unwrap()
    })
}

/// Without an OS keychain (no D-Bus session), an HTTP server that asks no sign-in is
/// added, listed, called and removed as anywhere else: no keychain means "not signed
/// in". Signing in then says the keychain is needed, and why, before any browser opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_keychain_an_http_server_that_asks_no_sign_in_works() {
    let (mut server, port) = art_testkit::mcp::everything_over_http().await;
    let data = tempfile::tempdir().unwrap();
    let no_keychain = |args: &[&str]| {
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        without_keychain(data.path(), args, Vec::new())
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let added = no_keychain(&["mcp", "add", "remote", "--url", &url])
        .await
        .unwrap();
    assert!(
        added.status.success(),
        "{}\n{}",
        stdout(&added),
        stderr(&added)
    );
    assert!(
        stdout(&added).contains("remote  ready ("),
        "{}",
        stdout(&added)
    );
    let called = no_keychain(&[
        "mcp",
        "call",
        "remote",
        "echo",
        r#"{"message": "no keychain"}"#,
    ])
    .await
    .unwrap();
    assert!(called.status.success(), "{}", stderr(&called));
    assert!(
        stdout(&called).contains("Echo: no keychain"),
        "{}",
        stdout(&called)
    );
    let login = no_keychain(&["mcp", "login", "remote", "--no-browser"])
        .await
        .unwrap();
    assert_eq!(login.status.code(), Some(1), "{}", stdout(&login));
    let said = stderr(&login);
    assert!(
        said.contains("signing in needs the OS keychain") && said.contains("it is unavailable"),
        "{said}"
    );
    let removed = no_keychain(&["mcp", "remove", "remote"]).await.unwrap();
    assert!(removed.status.success(), "{}", stderr(&removed));
    let listed = no_keychain(&["mcp", "list"]).await.unwrap();
    assert!(!stdout(&listed).contains("remote"), "{}", stdout(&listed));
    server.kill().await.unwrap();
}

/// Without an OS keychain (no D-Bus session), a secret-named variable's value cannot be
/// kept: the message says how to pass it from the environment instead, and a server
/// added that way gets the value at start from `art`'s environment (nothing stored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_keychain_a_secret_comes_from_the_environment_at_start() {
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let no_keychain = |args: Vec<String>, token: Option<&str>| {
        let env = token
            .map(|t| ("GITHUB_TOKEN", t.to_owned()))
            .into_iter()
            .collect();
        without_keychain(data.path(), args, env)
    };
    let add = |value: &str| add_everything(&mark, &[&format!("GITHUB_TOKEN={value}")]);
    let refused = no_keychain(add("ghp_SENTINEL0123456789"), None)
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let said = stderr(&refused);
    assert!(said.contains("keychain is unavailable"), "{said}");
    assert!(
        said.contains("--env 'GITHUB_TOKEN=${env:GITHUB_TOKEN}'"),
        "{said}"
    );

    let added = no_keychain(add("${env:GITHUB_TOKEN}"), Some("ghp_FROM_ENV_42"))
        .await
        .unwrap();
    assert!(
        added.status.success(),
        "{}\n{}",
        stdout(&added),
        stderr(&added)
    );
    let call = ["mcp", "call", "everything", "get-env", "{}"]
        .map(str::to_owned)
        .to_vec();
    let seen = no_keychain(call, Some("ghp_FROM_ENV_42")).await.unwrap();
    assert!(seen.status.success(), "{}", stderr(&seen));
    assert!(
        stdout(&seen).contains("ghp_FROM_ENV_42"),
        "{}",
        stdout(&seen)
    );
    // Nothing of the value in the data directory.
    for entry in std::fs::read_dir(data.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
        assert!(!bytes.windows(11).any(|w| w == b"ghp_FROM_EN"));
    }
    // Not set at start: the server fails, saying which variable is missing.
    let call = ["mcp", "tools", "everything"].map(str::to_owned).to_vec();
    let missing = no_keychain(call, None).await.unwrap();
    assert!(
        stdout(&missing).contains("GITHUB_TOKEN is not set for this process"),
        "{}\n{}",
        stdout(&missing),
        stderr(&missing)
    );
    assert_eq!(settle(&mark, 10).await, 0);
}

/// `art` logs the framework's events on stderr as the app does: warnings by default,
/// information with `-v` (here an MCP server's own stderr line, logged by `art::mcp`)
/// or with `ART_WORKBENCH_LOG`, the app's variable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_logs_like_the_app() {
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let call = async |flags: &[&str], log: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_art"));
        command
            .arg("--data-dir")
            .arg(data.path())
            .args(flags)
            .args(["mcp", "call", "everything", "echo", r#"{"message": "hi"}"#])
            .env_remove("ART_WORKBENCH_LOG");
        if let Some(filter) = log {
            command.env("ART_WORKBENCH_LOG", filter);
        }
        let out = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains("Echo: hi"), "{}", stdout(&out));
        stderr(&out)
    };
    let quiet = call(&[], None).await;
    assert!(!quiet.contains("art::mcp"), "{quiet}");
    let verbose = call(&["-v"], None).await;
    assert!(
        verbose.contains("INFO art::mcp") && verbose.contains("server=everything"),
        "{verbose}"
    );
    let from_env = call(&[], Some("art::mcp=info")).await;
    assert!(from_env.contains("INFO art::mcp"), "{from_env}");
    assert_eq!(settle(&mark, 10).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_and_resources_on_the_terminal() {
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));

    let out = art(data.path(), &["mcp", "prompts", "everything"]).await;
    assert!(
        stdout(&out).contains("/args-prompt city [state]  A prompt with two arguments"),
        "{}",
        stdout(&out)
    );
    let out = art(
        data.path(),
        &["mcp", "prompt", "everything", "args-prompt", "city=Lyon"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "What's weather in Lyon?");
    // An embedded resource is framed with its name, as a question's document.
    let out = art(
        data.path(),
        &[
            "mcp",
            "prompt",
            "everything",
            "resource-prompt",
            "resourceType=Text",
            "resourceId=2",
        ],
    )
    .await;
    assert!(
        stdout(&out).contains("<document name=\"2.txt\">\nResource 2"),
        "{}",
        stdout(&out)
    );
    // A required argument left out, and an argument that is not NAME=VALUE.
    let out = art(data.path(), &["mcp", "prompt", "everything", "args-prompt"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("`args-prompt` needs city"),
        "{}",
        stderr(&out)
    );
    let out = art(
        data.path(),
        &["mcp", "prompt", "everything", "args-prompt", "Lyon"],
    )
    .await;
    assert!(
        stderr(&out).contains("`Lyon` is not NAME=VALUE"),
        "{}",
        stderr(&out)
    );

    let out = art(data.path(), &["mcp", "resources", "everything"]).await;
    let listed = stdout(&out);
    let uri = listed
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.ends_with("architecture.md"))
        })
        .unwrap_or_else(|| panic!("{listed}"))
        .to_owned();
    assert!(listed.contains("(text/markdown)"), "{listed}");
    assert!(
        listed.contains("demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource  (template, text/plain)"),
        "{listed}"
    );
    let out = art(data.path(), &["mcp", "read", "everything", &uri]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with('#'), "{}", stdout(&out));
    let file = data.path().join("architecture.md");
    let out = art(
        data.path(),
        &[
            "mcp",
            "read",
            "everything",
            &uri,
            "--out",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert!(stdout(&out).starts_with("Wrote "), "{}", stdout(&out));
    assert!(std::fs::read_to_string(&file).unwrap().starts_with('#'));
    let out = art(
        data.path(),
        &["mcp", "read", "everything", "demo://nowhere"],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the server answered with an error"),
        "{}",
        stderr(&out)
    );
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}

/// A run whose input has ended waits on a server's question for `art answer` from
/// another process; a value the question does not take is refused there (the run still
/// waits), the answer that fits reaches the server and the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_without_a_terminal_waits_for_art_answer() {
    let plan = r#"{"title": "Sign up", "intent": "Fill the form", "plan": ["Ask"], "toolCalls": [{"callId": "c1", "toolName": "everything__trigger-elicitation-request", "arguments": {}}]}"#;
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "You are signed up.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let url = ollama.url();
    let mut args = ask_new("Sign up", &url, "Sign me up");
    args.splice(
        1..1,
        [
            "--tools",
            "everything__trigger-elicitation-request",
            "--approve",
            "all",
        ],
    );
    // No answer yet: nothing waits.
    let early = art(data.path(), &["answer", "decline"]).await;
    assert_eq!(early.status.code(), Some(1));
    assert!(
        stderr(&early).contains("no question of an MCP server waits"),
        "{}",
        stderr(&early)
    );

    let err_file = data.path().join("run.stderr");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_art"))
        .arg("--data-dir")
        .arg(data.path())
        .args(&args)
        .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut said = String::new();
    for _ in 0..400 {
        said = std::fs::read_to_string(&err_file).unwrap_or_default();
        if said.contains("art answer") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(said.contains("answer it from another terminal"), "{said}");

    let wrong = art(data.path(), &["answer", "accept", "nickname=Ada"]).await;
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        stderr(&wrong).contains("has no field `nickname`"),
        "{}",
        stderr(&wrong)
    );
    let out = art(
        data.path(),
        &["answer", "accept", "name=Ada Lovelace", "integer=7"],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(
        printed.contains("asked: Please provide inputs") && printed.contains("You answered"),
        "{printed}"
    );
    let done = run.wait_with_output().await.unwrap();
    let printed = String::from_utf8_lossy(&done.stdout).into_owned();
    assert!(
        done.status.success(),
        "{printed}\n{}",
        std::fs::read_to_string(&err_file).unwrap()
    );
    assert!(printed.contains("Name: Ada Lovelace"), "{printed}");
    assert!(printed.contains("You are signed up."), "{printed}");
    // Answered: nothing waits any more.
    let late = art(data.path(), &["answer", "decline"]).await;
    assert_eq!(late.status.code(), Some(1));
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}

/// The process whose run waits on a server's question ends (its terminal closed, as the
/// app closes): the question is still there, and `art answer` goes on with the run itself —
/// the call runs again, the server's same question gets the answer without asking, and
/// the run ends with the answer that used it. Nothing waits afterwards, and no server
/// process is left.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_outlives_the_process_that_asked_it() {
    let plan = r#"{"title": "Sign up", "intent": "Fill the form", "plan": ["Ask"], "toolCalls": [{"callId": "c1", "toolName": "everything__trigger-elicitation-request", "arguments": {}}]}"#;
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "You are signed up.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let url = ollama.url();
    let mut args = ask_new("Sign up", &url, "Sign me up");
    args.splice(
        1..1,
        [
            "--tools",
            "everything__trigger-elicitation-request",
            "--approve",
            "all",
        ],
    );
    let err_file = data.path().join("run.stderr");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_art"))
        .arg("--data-dir")
        .arg(data.path())
        .args(&args)
        .env("HF_ENDPOINT", art_testkit::embedder::NO_HUB)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut said = String::new();
    for _ in 0..400 {
        said = std::fs::read_to_string(&err_file).unwrap_or_default();
        if said.contains("art answer") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(said.contains("answer it from another terminal"), "{said}");
    // The terminal closes: `art` ends, its server with it, the run kept on the question.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(run.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let closed = run.wait_with_output().await.unwrap();
    assert!(!closed.status.success());
    let said = std::fs::read_to_string(&err_file).unwrap();
    assert!(
        said.contains("goes on when the question is answered"),
        "{said}"
    );
    assert_eq!(settle(&mark, 5).await, 0, "the server went with `art`");

    // The run is kept on the question: nothing else may start in the thread.
    let listed = stdout(&art(data.path(), &["threads"]).await);
    assert!(
        listed.contains("[waits for your answer to everything's question"),
        "{listed}"
    );
    let thread = listed.split_whitespace().next().unwrap().to_owned();
    let busy = art(data.path(), &["run", "--thread", &thread, "Something else"]).await;
    assert_eq!(busy.status.code(), Some(1));
    assert!(
        stderr(&busy).contains("waits for your answer to MCP server `everything`"),
        "{}",
        stderr(&busy)
    );
    // A value the question does not take is refused, and it still waits.
    let wrong = art(data.path(), &["answer", "accept", "name=Ada", "integer=x"]).await;
    assert_eq!(wrong.status.code(), Some(1), "{}", stdout(&wrong));
    let out = art(
        data.path(),
        &["answer", "accept", "name=Ada Lovelace", "integer=7"],
    )
    .await;
    let printed = stdout(&out);
    assert!(out.status.success(), "{printed}\n{}", stderr(&out));
    assert!(printed.contains("its run goes on here"), "{printed}");
    assert!(printed.contains("Name: Ada Lovelace"), "{printed}");
    assert!(printed.contains("You are signed up."), "{printed}");
    // Answered: nothing waits any more, and the thread takes questions again.
    let late = art(data.path(), &["answer", "decline"]).await;
    assert_eq!(late.status.code(), Some(1));
    let waits = art(data.path(), &["threads"]).await;
    assert!(!stdout(&waits).contains("waits"), "{}", stdout(&waits));
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}

/// A long call's progress, as its server reports it, is printed on stderr as it comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_calls_progress_is_printed() {
    let plan = r#"{"title": "Wait", "intent": "Wait a little", "plan": ["Wait"], "toolCalls": [{"callId": "c1", "toolName": "everything__trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2}}]}"#;
    let ollama = FakeServer::start_at(
        0,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, plan, 16),
            text_reply(Protocol::Ollama, "Done waiting.", 4),
        ],
    )
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let mark = marker();
    let out = art_owned(data.path(), &add_everything(&mark, &[])).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let url = ollama.url();
    let mut args = ask_new("Wait", &url, "Wait a little");
    args.splice(
        1..1,
        [
            "--tools",
            "everything__trigger-long-running-operation",
            "--approve",
            "all",
        ],
    );
    let out = art(data.path(), &args).await;
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("everything__trigger-long-running-operation … 2 of 2"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("Done waiting."), "{}", stdout(&out));
    assert_eq!(settle(&mark, 5).await, 0, "processes left behind");
}
