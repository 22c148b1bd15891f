//! The desktop bench's data: the app's database seeded with a 5,000-message thread (with
//! plan and tool observations), a short thread and threads set to stream from the fake
//! Ollama; and the 3,000-line answer that fake streams.

use std::path::Path;
use std::sync::Arc;

use art::context::{ConversationManager, StateManager};
use art::observation::{NewObservation, ObservationManager};
use art::paths::DATABASE_FILE;
use art::sockets::Sockets;
use art::storage::sqlite::SqliteStorage;
use art_testkit::fake::scripts::MODEL;
use art_types::provider::BASE_URL_OPTION;
use art_types::{
    ConversationMessage, MessageRole, MessageStatus, ObservationType, ProviderConfig,
    StateSavingStrategy, ThreadConfig,
};
use serde_json::{Value, json};

use super::{LINES, RAMP, RUNS, STREAMS};

/// Edits along the long thread, each a branch beside its question.
const BRANCHES: usize = 50;

/// Ids of the seeded threads.
pub struct Seeded {
    /// The 5,000-message thread.
    pub long: String,
    /// A one-message thread (opened before each timed open of `long`).
    pub short: String,
    /// Threads configured to stream from the fake Ollama.
    pub streams: Vec<String>,
}

/// Message `i` of the long thread.
fn message(thread: &str, i: usize, role: MessageRole, content: String) -> ConversationMessage {
    ConversationMessage {
        message_id: format!("m{i:04}"),
        thread_id: thread.to_owned(),
        role,
        content,
        timestamp: 1_700_000_000_000 + i as i64 * 1_000,
        status: MessageStatus::Complete,
        metadata: json!({ "traceId": format!("run{}", i / 2), "model": MODEL }),
        parent_id: None,
        attachments: Vec::new(),
    }
}

/// The answer of run `n`: a sum, every tenth with a code block.
fn answer(n: usize) -> String {
    if n.is_multiple_of(10) {
        format!(
            "Answer {n}: here is the function.\n\n```rust\nfn double(x: u64) -> u64 {{\n    // run {n}\n    x * 2\n}}\n```\n\nIt returns **twice** its input."
        )
    } else {
        format!(
            "Answer {n}: the sum is **{}**, computed with the calculator.",
            n * 2
        )
    }
}

/// The app's database with a 5,000-message thread, a short one, and threads set up to
/// stream from the fake Ollama at `base_url`.
pub async fn seed(dir: &Path, base_url: &str) -> Seeded {
    let storage = Arc::new(SqliteStorage::open(dir.join(DATABASE_FILE)).expect("database"));
    let sockets = Arc::new(Sockets::default());
    let conversation = ConversationManager::new(storage.clone(), sockets.clone());
    let observations = ObservationManager::new(storage.clone(), sockets);
    let state = StateManager::new(storage, StateSavingStrategy::Explicit);
    let new_thread = |title: &'static str| {
        let conversation = &conversation;
        async move {
            let t = conversation
                .create_thread(Some(title))
                .await
                .expect("thread");
            t.thread_id
        }
    };
    let long = new_thread("Long thread").await;
    let messages: Vec<ConversationMessage> = (0..RUNS)
        .flat_map(|n| {
            [
                message(
                    &long,
                    2 * n,
                    MessageRole::User,
                    format!("Question {n}: what is {n} + {n}?"),
                ),
                message(&long, 2 * n + 1, MessageRole::Ai, answer(n)),
            ]
        })
        .collect();
    conversation
        .add_messages(&long, &messages)
        .await
        .expect("messages");
    // 50 edits along the way, each a branch of a question and its answer; the long branch
    // is the one shown (its newest message is what the timed open waits for).
    for k in 0..BRANCHES {
        let question = format!("m{:04}", k * 100);
        conversation
            .branch_beside(&long, &question)
            .await
            .expect("branch");
        let edited: Vec<ConversationMessage> = [MessageRole::User, MessageRole::Ai]
            .into_iter()
            .enumerate()
            .map(|(j, role)| ConversationMessage {
                message_id: format!("b{k}-{j}"),
                role,
                content: format!("Edited {k}, part {j}"),
                timestamp: messages[2 * RUNS - 1].timestamp + 1 + (2 * k + j) as i64,
                ..messages[0].clone()
            })
            .collect();
        conversation
            .add_messages(&long, &edited)
            .await
            .expect("branch messages");
    }
    conversation
        .switch_to(&long, &format!("m{:04}", 2 * RUNS - 1))
        .await
        .expect("the long branch");
    let news = (0..RUNS)
        .flat_map(|n| {
            let trace = format!("run{n}");
            let plan = json!({ "title": "Add", "intent": format!("Add {n} and {n}"), "plan": ["Add with the calculator", "Answer"] });
            let call = json!({ "callId": format!("c{n}"), "toolName": "calculator", "arguments": { "expression": format!("{n} + {n}") } });
            let result = json!({ "callId": format!("c{n}"), "toolName": "calculator", "status": "success", "output": { "value": n * 2 } });
            [
                NewObservation::new(&long, &trace, ObservationType::Plan, plan),
                NewObservation::new(&long, &trace, ObservationType::ToolCall, call),
                NewObservation::new(&long, &trace, ObservationType::ToolExecution, result),
            ]
        })
        .collect();
    observations.record_all(news).await.expect("observations");

    let short = new_thread("Short thread").await;
    let hello = message(&short, 0, MessageRole::User, "Hello".into());
    conversation
        .add_messages(&short, &[hello])
        .await
        .expect("message");

    // The measured streams', then one per step of the ramp.
    let mut options = serde_json::Map::new();
    options.insert(BASE_URL_OPTION.into(), Value::String(base_url.to_owned()));
    let ollama = ProviderConfig {
        provider_name: "ollama".into(),
        model_id: MODEL.into(),
        adapter_options: options,
    };
    let streams = configured(&conversation, &state, &ollama, STREAMS + RAMP.len()).await;
    Seeded {
        long,
        short,
        streams,
    }
}

/// `count` new threads titled "Streaming", each asking `provider`.
async fn configured(
    conversation: &ConversationManager,
    state: &StateManager,
    provider: &ProviderConfig,
    count: usize,
) -> Vec<String> {
    let mut threads = Vec::new();
    for _ in 0..count {
        let thread = conversation
            .create_thread(Some("Streaming"))
            .await
            .expect("thread")
            .thread_id;
        let config = ThreadConfig {
            provider_config: provider.clone(),
            ..ThreadConfig::default()
        };
        state
            .set_thread_config(&thread, &config)
            .await
            .expect("config");
        threads.push(thread);
    }
    threads
}

/// A database in `dir` with `count` threads asking `provider` (each titled
/// "Streaming").
pub async fn threads_on(dir: &Path, provider: &ProviderConfig, count: usize) -> Vec<String> {
    let storage = Arc::new(SqliteStorage::open(dir.join(DATABASE_FILE)).expect("database"));
    let conversation = ConversationManager::new(storage.clone(), Arc::new(Sockets::default()));
    let state = StateManager::new(storage, StateSavingStrategy::Explicit);
    configured(&conversation, &state, provider, count).await
}

/// The streamed answer: 3,000 lines, each carrying its marker `L0000`…, in paragraphs
/// of ten lines with a Rust code block every 500 lines.
pub fn long_answer() -> String {
    answer_of(LINES)
}

/// The first `lines` lines of the long answer.
pub fn answer_of(lines: usize) -> String {
    let mut text = String::new();
    for i in 0..lines {
        if i % 500 == 250 {
            text.push_str("```rust\n");
            for j in 0..10 {
                text.push_str(&format!("let x{j} = {j} * 2; // L{:04}\n", i + j));
            }
            text.push_str("```\n\n");
        }
        if (250..260).contains(&(i % 500)) {
            continue;
        }
        text.push_str(&format!(
            "L{i:04} the agent streams this line of its long answer.\n"
        ));
        if i % 10 == 9 {
            text.push('\n');
        }
    }
    text
}
