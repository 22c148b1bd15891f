//! A user's day with the real app and a fake Ollama: create a thread, set the provider
//! and the calculator, ask a question that makes the agent plan a calculator call, watch
//! the plan card, the tool card and the streamed answer; invalid settings are refused;
//! restart and find everything again; rename, search and jump, delete. Also: a provider
//! error in plain words, and an API key saved through the form lands in the keychain and
//! nowhere in the data directory.

use art_testkit::e2e::AppSession;
use art_testkit::fake::scripts::{MODEL, Protocol, router, text_reply};
use art_testkit::fake::{FakeServer, Reply};

/// The Return key, as WebDriver types it.
pub(crate) const ENTER: char = '\u{E006}';

pub(crate) const PLAN: &str = r#"{"title": "Add two numbers", "intent": "Add 19 and 23", "plan": ["Add the numbers with the calculator", "Answer with the sum"], "toolCalls": [{"callId": "c1", "toolName": "calculator", "arguments": {"expression": "19 + 23"}}]}"#;

/// A planning answer with no tool calls.
pub(crate) fn plan_without_tools(intent: &str) -> String {
    format!(r#"{{"title": "Reply", "intent": "{intent}", "plan": ["Answer"], "toolCalls": []}}"#)
}

/// A fake Ollama (model list and version routed) answering chats with `replies`.
pub(crate) async fn fake_ollama(replies: Vec<Reply>) -> FakeServer {
    FakeServer::start_at(0, Some(router(Protocol::Ollama)), replies)
        .await
        .unwrap()
}

/// Point the Ollama the app manages (the Models page's, whose models the pickers list)
/// at `base_url`, as its address field does; what the app answers (the address it
/// keeps, or why it refused).
pub(crate) async fn ollama_address(app: &AppSession, base_url: &str) -> serde_json::Value {
    app.eval_async(
        "const done = arguments[arguments.length - 1];
         window.__TAURI__.core.invoke('ollama_address', { baseUrl: arguments[0] })
             .then(done, e => done('refused: ' + JSON.stringify(e)));",
        vec![base_url.into()],
    )
    .await
}

/// The app, started and connected to its backend.
pub(crate) async fn launched() -> AppSession {
    let app = AppSession::launch().await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    app
}

/// A new thread on the Ollama at `base_url` with the calculator, settings closed again.
pub(crate) async fn new_thread(app: &AppSession, base_url: &str) {
    app.click("#new-thread").await;
    configure(app, base_url).await;
    app.click("#settings-button").await;
}

pub(crate) async fn configure(app: &AppSession, base_url: &str) {
    app.click("#settings-button").await;
    // The address first: choosing the provider lists its models from it (with the
    // default address the app would ask a local Ollama the test did not start).
    app.type_into("#base-url-input", base_url).await;
    app.select("#provider-select", "ollama").await;
    app.type_into("#model-input", MODEL).await;
    app.click("#tool-list input[data-tool=\"calculator\"]")
        .await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
}

#[tokio::test(flavor = "current_thread")]
async fn plan_tool_answer_restart_rename_search_delete() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "The sum of 19 and 23 is **42**.", 8),
    ])
    .await;
    let app = launched().await;
    app.click("#new-thread").await;
    app.wait_for("#thread").await;
    configure(&app, &ollama.url()).await;
    // The model list came from the fake Ollama's /api/tags.
    app.wait_for("#model-options option[value=\"fake-model:latest\"]")
        .await;

    // Out-of-range settings are refused, the problem shown at its field.
    app.type_into("#temperature", "5").await;
    app.click("#save-settings").await;
    let problem = app
        .wait_for_text(
            ".field-problem[data-field=\"generation.temperature\"]",
            "0 to 2",
        )
        .await;
    assert!(problem.contains('5'), "{problem}");
    app.screenshot("thread-settings").await;
    app.type_into("#temperature", "").await;
    app.select("#state-saving", "implicit").await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;

    app.type_into("#composer-input", "What is 19 + 23?").await;
    app.click("#send-button").await;
    let plan = app.wait_for_text(".plan-card", "Add the numbers").await;
    assert!(
        plan.contains("Add two numbers") && plan.contains("Answer with the sum"),
        "{plan}"
    );
    let tool = app
        .wait_for_text(".tool-card.ok[data-tool=\"calculator\"]", "42")
        .await;
    assert!(tool.contains("19 + 23"), "{tool}");
    let answer = app.wait_for_text(".message.ai .answer", "is 42").await;
    assert!(answer.contains("The sum of 19 and 23"), "{answer}");
    // Markdown rendered: the bold is an element, not asterisks.
    app.wait_for(".message.ai .answer strong").await;
    app.wait_for_text(".answer-footer", MODEL).await;
    app.screenshot("thread-run").await;

    // Restart on the same data: the thread, its settings and its history are there.
    let data = app.close_keeping_data().await;
    let path = data.path().to_path_buf();
    let app = AppSession::launch_with(data, &path).await;
    app.click(".thread-item .thread-title").await;
    app.wait_for_text(".message.user .bubble", "What is 19 + 23?")
        .await;
    app.wait_for_text(".message.ai .answer", "is 42").await;
    app.wait_for_text(".plan-card", "Add two numbers").await;
    app.wait_for_text(".tool-card.ok", "calculator").await;
    app.click("#settings-button").await;
    app.wait_for("#tool-list input[data-tool=\"calculator\"]:checked")
        .await;
    app.wait_for("#state-saving option[value=\"implicit\"]:checked")
        .await;
    app.click("#settings-button").await;

    // Rename in place, then search and jump.
    app.click(".thread-item .rename").await;
    app.type_into(".thread-item .rename-input", "Arithmetic")
        .await;
    app.click(".thread-item .rename-save").await;
    app.wait_for_text("#thread-title", "Arithmetic").await;
    app.click("#providers-button").await;
    // A tool call is found by its arguments and jumps to the answer of its run.
    app.type_into("#search-input", &format!("expression{ENTER}"))
        .await;
    let hit = app
        .wait_for_text("#search-results .search-hit", "calculator")
        .await;
    assert!(hit.contains("19 + 23"), "{hit}");
    app.click("#search-results .search-hit").await;
    app.wait_for_text("#thread-title", "Arithmetic").await;
    app.wait_for_text(".message.ai.focused .answer", "is 42")
        .await;
    app.click("#providers-button").await;
    app.type_into("#search-input", &format!("sum 42{ENTER}"))
        .await;
    app.click("#search-results .search-hit").await;
    app.wait_for_text("#thread-title", "Arithmetic").await;
    app.wait_for(".message.ai.focused").await;
    app.screenshot("thread-history").await;

    // Delete with confirmation.
    app.click(".thread-item .delete").await;
    app.click(".thread-item .confirm-delete").await;
    app.wait_gone(".thread-item").await;
    app.wait_for_text("#thread-list", "No threads yet").await;
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_provider_that_is_not_running_is_explained() {
    let closed = FakeServer::start(vec![]).await;
    let url = closed.url();
    drop(closed);
    let app = launched().await;
    new_thread(&app, &url).await;
    app.type_into("#composer-input", "Hello?").await;
    app.click("#send-button").await;
    let error = app.wait_for_text(".run-error", "ollama serve").await;
    assert!(error.contains("not reachable"), "{error}");
    // Shown as every failure is: plain words first, the code for reference.
    app.wait_for_text(
        ".run-error .error-card .error-headline",
        "Ollama is not running",
    )
    .await;
    app.wait_for_text(".run-error .error-card .error-code", "OLLAMA_NOT_RUNNING")
        .await;
    // The question stays, marked as not answered, with Retry.
    app.wait_for_text(".message.user.failed .question-failed", "Not answered")
        .await;
    app.screenshot("thread-provider-error").await;

    // Ollama starts where the thread looks for it; Retry asks again.
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    let _ollama = FakeServer::start_at(
        port,
        Some(router(Protocol::Ollama)),
        vec![
            text_reply(Protocol::Ollama, "Just say hello.", 8),
            text_reply(Protocol::Ollama, "Hello, now that I am up!", 8),
        ],
    )
    .await
    .unwrap();
    app.click(".message.user.failed .retry-button").await;
    app.wait_for_text(".message.ai .answer", "now that I am up")
        .await;
    app.wait_gone(".message.user.failed").await;
    assert_eq!(app.count(".message.user").await, 1, "the question, once");
    assert_eq!(
        app.count(".run-error").await,
        0,
        "a plain answer is no error"
    );
    app.screenshot("thread-retried").await;
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn an_api_key_goes_to_the_keychain_and_nowhere_else() {
    const KEY: &str = "sk-e2e-SENTINEL-4f1c9a";
    let app = launched().await;
    app.click("#providers-button").await;
    let row = "[data-provider=\"openrouter\"]";
    app.wait_for_text(&format!("{row} .key-state"), "no key")
        .await;
    app.type_into(&format!("{row} .key-input"), KEY).await;
    app.click(&format!("{row} .save-key")).await;
    app.wait_for_text(&format!("{row} .key-state"), "key set")
        .await;
    // The input is cleared and the page never shows the key.
    assert!(!app.page_text().await.contains("SENTINEL"));
    let entry = keyring::Entry::new("org.artworkbench.desktop", "openrouter").unwrap();
    assert_eq!(entry.get_password().unwrap(), KEY);
    app.screenshot("providers").await;
    app.click(&format!("{row} .delete-key")).await;
    app.wait_for_text(&format!("{row} .key-state"), "no key")
        .await;
    assert!(entry.get_password().is_err(), "deleted from the keychain");
    let data = app.close_keeping_data().await;
    for file in walk(data.path()) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(8).any(|w| w == b"SENTINEL"),
            "the key is in {}",
            file.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path))
        } else {
            files.push(path)
        }
    }
    files
}

#[tokio::test(flavor = "current_thread")]
async fn stop_keeps_the_partial_answer_marked_stopped() {
    let counting: String = (1..=100).map(|n| format!("{n} ")).collect();
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, &plan_without_tools("Count slowly"), 64),
        // About 8 s if nobody stops it.
        text_reply(Protocol::Ollama, &counting, 40).delayed(std::time::Duration::from_millis(60)),
    ])
    .await;
    let app = launched().await;
    new_thread(&app, &ollama.url()).await;
    app.type_into("#composer-input", "Count to a hundred, slowly.")
        .await;
    app.click("#send-button").await;
    app.wait_for_text(".message.ai.live .answer", "3 ").await;
    // Esc is the Stop shortcut.
    app.press("#composer-input", "\u{E00C}").await;
    app.wait_for("#send-button").await;
    // The words that arrived stay, marked as stopped; the thread takes a new message.
    let footer = app
        .wait_for_text(".message.ai .answer-footer", "stopped")
        .await;
    assert!(footer.contains(MODEL), "{footer}");
    let kept = app.wait_for_text(".message.ai .answer", "1 2 3").await;
    assert!(
        !kept.contains("100"),
        "the answer was cut at the stop: {kept}"
    );
    app.screenshot("thread-stopped").await;
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn regenerate_and_edit_make_branches_to_switch_search_and_fork() {
    let plan = plan_without_tools;
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, &plan("Greet"), 64),
        text_reply(Protocol::Ollama, "First answer.", 8),
        text_reply(Protocol::Ollama, &plan("Greet again"), 64),
        text_reply(Protocol::Ollama, "Second answer.", 8),
        text_reply(Protocol::Ollama, &plan("Add"), 64),
        text_reply(
            Protocol::Ollama,
            "Three and four make 7.\n\n```python\nprint(3 + 4)  # 7\n```\n",
            8,
        ),
    ])
    .await;
    let exports = tempfile::tempdir().unwrap();
    let app = AppSession::launch_exporting(exports.path()).await;
    app.wait_for_text("#backend-status.ready", "connected")
        .await;
    new_thread(&app, &ollama.url()).await;
    app.type_into("#composer-input", "Say something.").await;
    app.click("#send-button").await;
    app.wait_for_text(".message.ai .answer", "First answer.")
        .await;

    // Regenerate: a new answer on a branch beside the old one, which stays.
    app.click("#regenerate-button").await;
    app.wait_for_text(".message.ai .answer", "Second answer.")
        .await;
    app.wait_for("#regenerate-button").await;
    app.wait_for_text(".message.user .branch-position", "2 / 2")
        .await;
    let text = app.page_text().await;
    assert!(!text.contains("First answer."), "{text}");
    assert_eq!(app.count(".message.user").await, 1);
    assert_eq!(app.count(".message.ai .answer").await, 1);
    // ‹ shows the first answer again, › the second.
    app.click(".message.user .branch-prev").await;
    app.wait_for_text(".message.ai .answer", "First answer.")
        .await;
    app.wait_for_text(".message.user .branch-position", "1 / 2")
        .await;
    app.click(".message.user .branch-next").await;
    app.wait_for_text(".message.ai .answer", "Second answer.")
        .await;

    // Edit & resend: a third branch with the new question and its answer.
    app.click(".message.user .edit-button").await;
    app.type_into(".message.user .edit-input", "What is 3 + 4?")
        .await;
    app.click(".message.user .resend-button").await;
    app.wait_for_text(".message.ai .answer", "make 7").await;
    app.wait_for_text(".message.user .bubble", "What is 3 + 4?")
        .await;
    app.wait_for("#regenerate-button").await;
    app.wait_for_text(".message.user .branch-position", "3 / 3")
        .await;
    // (The thread is titled from its first question, "Say something.": only the
    // messages are read here.)
    let shown = app
        .eval_async(
            "const done = arguments[arguments.length - 1]; \
             done([...document.querySelectorAll('.message')].map(m => m.innerText).join('\\n'));",
            Vec::new(),
        )
        .await;
    let text = shown.as_str().unwrap_or_default();
    assert!(
        !text.contains("Say something.") && !text.contains("Second answer."),
        "{text}"
    );
    assert_eq!(app.count(".message.user").await, 1);
    assert_eq!(app.count(".message.ai .answer").await, 1);
    // The finished answer's code is highlighted and has its own Copy button.
    app.wait_for_text(".code-block .code-lang", "python").await;
    app.wait_for(".code-block code .hl-comment").await;
    app.click(".code-block .code-copy").await;
    app.wait_for_text(".code-block .code-copy", "Copied").await;
    app.screenshot("thread-edited").await;

    // Search finds an answer on another branch and opens that branch.
    app.type_into("#search-input", &format!("second answer{ENTER}"))
        .await;
    app.click("#search-results .search-hit").await;
    app.wait_for_text(".message.ai .answer", "Second answer.")
        .await;
    app.wait_for_text(".message.user .branch-position", "2 / 3")
        .await;
    app.screenshot("thread-branches").await;

    // Exported from the Trace panel: the Markdown follows the branch shown and lists the
    // others, the native JSONL holds all three.
    app.click("#trace-button").await;
    app.select("#export-format", "markdown").await;
    app.select("#export-scope", "thread").await;
    app.click("#export-button").await;
    app.wait_for_text("#export-done", ".md").await;
    let transcript = std::fs::read_to_string(exported(exports.path(), ".md")).unwrap();
    let (shown, others) = transcript
        .split_once("## Other branches")
        .unwrap_or_else(|| panic!("{transcript}"));
    assert!(
        shown.contains("Second answer.") && !shown.contains("First answer."),
        "{shown}"
    );
    assert!(
        others.contains("2 others are kept")
            && others.contains("“What is 3 + 4?”")
            && others.contains("“Say something.”"),
        "{others}"
    );
    app.select("#export-format", "jsonl").await;
    app.click("#export-button").await;
    app.wait_for_text("#export-done", ".jsonl").await;
    let jsonl = std::fs::read_to_string(exported(exports.path(), ".jsonl")).unwrap();
    let questions: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "USER")
        .collect();
    assert_eq!(questions.len(), 3, "every branch is in the file");
    assert!(
        questions
            .iter()
            .all(|q| q["message"].get("parentId").is_none()),
        "all three start the thread"
    );
    app.click("#trace-button").await;

    // Fork from the answer: a new thread with the history up to it, and a way back.
    app.click(".message.ai .fork-button").await;
    let origin = app.wait_for_text("#forked-from", "Forked from").await;
    assert_eq!(app.count(".thread-item").await, 2, "{origin}");
    app.wait_for_text(".message.ai .answer", "Second answer.")
        .await;
    assert_eq!(app.count(".message.user").await, 1);
    assert_eq!(
        app.count(".branch-switch").await,
        0,
        "the fork has one branch"
    );
    app.click("#forked-from").await;
    app.wait_for_text(".message.user .branch-position", "2 / 3")
        .await;
    assert_eq!(app.count("#forked-from").await, 0);
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_library_prompt_is_kept_edited_and_reaches_the_model() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, &plan_without_tools("Greet"), 64),
        text_reply(Protocol::Ollama, "Ahoy!", 8),
    ])
    .await;
    let app = launched().await;

    // Create, with the empty name refused at its field first.
    app.click("#prompts-button").await;
    app.click("#new-prompt").await;
    app.type_into("#prompt-content", "Talk like a pirate.")
        .await;
    app.click("#save-prompt").await;
    app.wait_for(".field-problem[data-field=\"name\"]").await;
    app.type_into("#prompt-name", "Pirate").await;
    app.click("#save-prompt").await;
    app.wait_for("#prompt-saved").await;
    app.wait_for(".library-item[data-name=\"Pirate\"]").await;

    // Duplicate, then delete the copy (with confirmation).
    app.click("#duplicate-prompt").await;
    app.wait_for(".library-item.active[data-name=\"Pirate (copy)\"]")
        .await;
    app.click("#delete-prompt").await;
    app.click("#confirm-delete-prompt").await;
    app.wait_gone(".library-item[data-name=\"Pirate (copy)\"]")
        .await;
    assert_eq!(app.count(".library-item").await, 1);
    app.click(".library-item[data-name=\"Pirate\"]").await;
    app.screenshot("prompt-library").await;

    // A thread picks it; its text goes to the model as the system prompt.
    app.click("#new-thread").await;
    configure(&app, &ollama.url()).await;
    app.select_label("#library-prompt", "Pirate").await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;
    app.type_into("#composer-input", "Hello?").await;
    app.click("#send-button").await;
    app.wait_for_text(".message.ai .answer", "Ahoy!").await;
    let chat = ollama
        .requests()
        .into_iter()
        .find(|r| r.request_line.contains("/api/chat"))
        .expect("a chat request");
    let system = chat.json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(system.contains("Talk like a pirate."), "{system}");
    app.close().await;
}

/// A thread that reviews its plans: the plan waits with its steps one a line; the user
/// drops the second step and runs it; the one step left runs its calculator call.
#[tokio::test(flavor = "current_thread")]
async fn a_plan_waits_for_review_and_runs_as_edited() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, PLAN, 24),
        text_reply(Protocol::Ollama, "It is **42**.", 8),
    ])
    .await;
    let app = launched().await;
    new_thread(&app, &ollama.url()).await;
    app.click("#settings-button").await;
    app.click("#plan-checkpoint").await;
    app.wait_for("#plan-checkpoint:checked").await;
    app.click("#save-settings").await;
    app.wait_for("#settings-saved").await;
    app.click("#settings-button").await;

    app.type_into("#composer-input", "What is 19 + 23?").await;
    app.click("#send-button").await;
    app.wait_for(".plan-review .plan-review-steps").await;
    let steps = app
        .wait_for_text(".plan-card .plan-steps", "Answer with the sum")
        .await;
    assert!(
        steps.contains("Add the numbers with the calculator"),
        "{steps}"
    );
    app.screenshot("plan-review").await;
    assert_eq!(
        app.count(".tool-card").await,
        0,
        "nothing ran before the review"
    );
    app.type_into(
        ".plan-review .plan-review-steps",
        "Add the numbers with the calculator",
    )
    .await;
    app.click(".plan-review button.run-plan").await;
    app.wait_for_text(".message.ai .answer", "It is 42.").await;
    app.wait_for(".tool-card.ok[data-tool=\"calculator\"]")
        .await;
    app.wait_for_text(".plan-reviewed", "You edited this plan")
        .await;
    assert_eq!(
        app.count(".plan-steps li").await,
        1,
        "the dropped step is gone"
    );
    app.wait_for(".plan-steps li[data-status=\"done\"]").await;
    app.screenshot("plan-reviewed").await;
    app.close().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_usage_page_sums_runs_and_a_price_costs_them() {
    let ollama = fake_ollama(vec![
        text_reply(Protocol::Ollama, &plan_without_tools("Greet"), 64),
        text_reply(Protocol::Ollama, "Hello there.", 8),
    ])
    .await;
    let app = launched().await;
    new_thread(&app, &ollama.url()).await;
    app.type_into("#composer-input", "Say hello.").await;
    app.click("#send-button").await;
    app.wait_for_text(".message.ai .answer", "Hello there.")
        .await;
    // The thread's header says what its runs used.
    app.wait_for_text("#thread-usage", "1 run").await;

    app.click("#usage-button").await;
    let model = format!("#usage-table tr[data-key=\"ollama/{MODEL}\"]");
    let row = app.wait_for_text(&model, MODEL).await;
    assert!(row.contains("(ollama)"), "{row}");
    app.wait_for_text("#usage-cost", "—").await;
    app.wait_for(&format!("#usage-chart rect[data-model=\"ollama/{MODEL}\"]"))
        .await;
    // A price for the model, from its row: its run gets a cost.
    app.click(&format!("{model} .set-price")).await;
    let named = app
        .eval_async(
            r#"const [done] = arguments;
               done([document.getElementById("price-provider").value, document.getElementById("price-model").value]);"#,
            Vec::new(),
        )
        .await;
    assert_eq!(named, serde_json::json!(["ollama", MODEL]));
    app.type_into("#price-input", "2.5").await;
    app.type_into("#price-output", "10").await;
    app.click("#save-price").await;
    app.wait_for(&format!("#price-table tr[data-model=\"ollama/{MODEL}\"]"))
        .await;
    app.wait_for_text("#usage-cost", "$").await;
    app.screenshot("usage").await;
    // A price out of range is refused with why.
    app.type_into("#price-input", "-1").await;
    app.click("#save-price").await;
    app.wait_for_text("#price-problem", "0 to 10000").await;
    // Per day: today's row.
    app.select("#usage-by", "day").await;
    app.wait_for("#usage-table tbody tr").await;
    assert_eq!(app.count("#usage-table tbody tr").await, 1);
    app.close().await;
}

/// The file an export with this ending wrote into `dir`.
fn exported(dir: &std::path::Path, ending: &str) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(ending))
        .unwrap_or_else(|| panic!("no {ending} file in {}", dir.display()))
}
