//! Wire transcripts of each provider's streaming protocol (`fixtures/<provider>/`), as
//! constants: what a real server sends for a text answer, tool calls and thinking, byte
//! for byte. Adapter tests feed them through the fake server, split at every boundary.
//! Also [`files_under`]: what a folder holds after a test.

/// OpenAI Chat Completions (SSE; DeepSeek and OpenRouter speak it too).
pub mod openai {
    /// A plain text answer with usage.
    pub const TEXT: &str = include_str!("../fixtures/openai/text.sse");
    /// Two tool calls streamed as argument deltas.
    pub const TOOL_CALLS: &str = include_str!("../fixtures/openai/tool_calls.sse");
    /// Reasoning deltas (`reasoning_content`) before the answer.
    pub const REASONING: &str = include_str!("../fixtures/openai/reasoning.sse");
}

/// Anthropic Messages (SSE).
pub mod anthropic {
    /// A plain text answer with usage.
    pub const TEXT: &str = include_str!("../fixtures/anthropic/text.sse");
    /// Thinking with its signature, then a `tool_use` block.
    pub const THINKING_TOOL_USE: &str = include_str!("../fixtures/anthropic/thinking_tool_use.sse");
}

/// Gemini `streamGenerateContent` (SSE).
pub mod gemini {
    /// A plain text answer with usage.
    pub const TEXT: &str = include_str!("../fixtures/gemini/text.sse");
    /// A function call.
    pub const FUNCTION_CALL: &str = include_str!("../fixtures/gemini/function_call.sse");
}

/// Ollama's native `/api/chat` (NDJSON).
pub mod ollama {
    /// A plain text answer with the final counts.
    pub const CHAT: &str = include_str!("../fixtures/ollama/chat.ndjson");
    /// A tool call.
    pub const TOOL_CALL: &str = include_str!("../fixtures/ollama/tool_call.ndjson");
}

/// Databases written by released builds, to prove each still opens and upgrades.
pub mod db {
    use std::path::PathBuf;

    /// A database written by the build of 2026-11-24 (schema v3, before branches): two
    /// threads — one with a calculator run and a plain one, renamed; one plain — their
    /// runs' observations, settings, agent state and a library prompt.
    pub fn release_2026_11_24() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/db/release-2026-11-24.sqlite3")
    }
}

/// Every file under `dir`, at any depth (none when it does not exist): what a store or
/// an export directory holds after a test.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .flat_map(|e| match e.path() {
            p if p.is_dir() => files_under(&p),
            p => vec![p],
        })
        .collect()
}
