//! The `art` binary as a user runs it: real processes on temporary data directories
//! against fake providers over TCP. `commands`: each subcommand's output, exports and
//! imports, mistakes; `attachments`: `art run --attach`; `concurrent`: several processes writing one data directory at once;
//! `conformance`: `art` against the official MCP conformance suite (client mode);
//! `defaults`: what new threads start with (`art config --new-threads`);
//! `kb`: knowledge collections and the `search_knowledge` tool;
//! `crash`: `art run` killed with SIGKILL at any moment loses nothing but its last tokens
//! (`cargo xtask stress` runs more trials).

mod attachments;
mod commands;
mod compare;
mod concurrent;
mod conformance;
mod crash;
mod defaults;
mod kb;
mod mcp;
mod models;

use art_testkit::fake::scripts::MODEL;

/// `art run` arguments asking `question` in a new thread `title` on the fake Ollama at
/// `url` (saved as the thread's provider).
fn ask_new<'a>(title: &'a str, url: &'a str, question: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--new",
        title,
        "--provider",
        "ollama",
        "--model",
        MODEL,
        "--base-url",
        url,
        question,
    ]
}
