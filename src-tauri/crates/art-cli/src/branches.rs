//! `art branches`, `art switch` and `art fork`: a thread's active branch with the
//! alternatives beside it, showing another, and a new thread from part of one.

use art::context::MessageOptions;
use art::standard::Standard;
use art_types::{BranchPoint, ConversationMessage, MessageRole};

use crate::out::{noteln, sayln};

/// The first line of a message, at most 60 characters.
fn gist(m: &ConversationMessage) -> String {
    let line = m
        .content
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let line = line.trim();
    let mut gist: String = line.chars().take(60).collect();
    if gist.len() < line.len() {
        gist.push('…');
    }
    gist
}

fn who(role: MessageRole) -> &'static str {
    match role {
        MessageRole::User => "you",
        MessageRole::Ai => "assistant",
        MessageRole::Tool => "tool",
        MessageRole::System => "system",
    }
}

/// `m`'s first line, after the model of its run when it has alternatives (`(ollama:qwen3)
/// What is 19 + 23?`).
async fn labelled(stack: &Standard, m: &ConversationMessage) -> String {
    match art::compare::model_of(&stack.art, m).await {
        Some(model) => format!("({model}) {}", gist(m)),
        None => gist(m),
    }
}

/// `art branches`: the active branch, one message a line, and at each message with
/// alternatives the others' ids (for `art switch`), each labelled with its run's model.
pub async fn list(stack: &Standard, thread: &str) -> anyhow::Result<()> {
    let conversation = &stack.art.conversation;
    let path = conversation.path(thread, MessageOptions::default()).await?;
    let points = conversation.branches(thread).await?;
    let place = |id: &str| -> Option<(&BranchPoint, usize)> {
        points
            .iter()
            .find_map(|p| p.position(id).map(|(i, _)| (p, i)))
    };
    for m in path.iter().filter(|m| m.role != MessageRole::Tool) {
        let mark = match place(&m.message_id) {
            Some((point, i)) => format!(" [{} of {}]", i + 1, point.alternatives.len()),
            None => String::new(),
        };
        let text = match place(&m.message_id) {
            Some(_) => labelled(stack, m).await,
            None => gist(m),
        };
        sayln!("{}  {:<9} {text}{mark}", m.message_id, who(m.role));
        if let Some((point, _)) = place(&m.message_id) {
            for (i, other) in point.alternatives.iter().enumerate() {
                if *other == m.message_id {
                    continue;
                }
                match conversation.message(thread, other).await? {
                    Some(o) => sayln!(
                        "    {} of {}: {other}  {}",
                        i + 1,
                        point.alternatives.len(),
                        labelled(stack, &o).await
                    ),
                    None => sayln!("    {} of {}: {other}", i + 1, point.alternatives.len()),
                }
            }
        }
    }
    if path.is_empty() {
        noteln!("art: thread {thread} has no messages yet");
    }
    Ok(())
}

/// `art switch`: the thread shows (and its next question follows) the branch through
/// the message.
pub async fn switch(stack: &Standard, thread: &str, message: &str) -> anyhow::Result<()> {
    stack.art.switch_branch(thread, message).await?;
    noteln!("art: thread {thread} now shows the branch through {message}");
    list(stack, thread).await
}

/// `art fork`: a new thread with the history up to the message and the same settings;
/// prints its id.
pub async fn fork(stack: &Standard, thread: &str, message: &str) -> anyhow::Result<()> {
    let fork = stack.art.fork_thread(thread, message).await?;
    noteln!(
        "art: forked {} message(s) of thread {thread} into a new thread",
        fork.message_count
    );
    sayln!("{}", fork.thread_id);
    Ok(())
}
