//! Ready-made replies in each provider's wire protocol: a text answer streamed word by
//! word (with usage and the protocol's terminator), and a [`Router`] that answers the
//! model-list and version endpoints, so a fake server can stand in for a real provider
//! in end-to-end tests and in the `art-testkit serve` CLI.

use serde_json::json;

use super::{Recorded, Reply, Router};

/// The wire protocol a fake server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI Chat Completions (also DeepSeek, OpenRouter).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `streamGenerateContent`.
    Gemini,
    /// Ollama's native API.
    Ollama,
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" | "deepseek" | "openrouter" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "gemini" => Ok(Self::Gemini),
            "ollama" => Ok(Self::Ollama),
            other => Err(format!(
                "unknown provider {other:?}: use openai, deepseek, openrouter, anthropic, gemini or ollama"
            )),
        }
    }
}

/// The model every fake server offers.
pub const MODEL: &str = "fake-model";

/// Chat Completions chunks of `words`, then the end and `usage`.
fn openai_body(words: &[&str], usage: serde_json::Value) -> String {
    let mut body = String::new();
    for w in words {
        let chunk = json!({ "choices": [{ "index": 0, "delta": { "content": w }, "finish_reason": null }] });
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let end = json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] });
    let usage = json!({ "choices": [], "usage": usage });
    body.push_str(&format!("data: {end}\n\ndata: {usage}\n\ndata: [DONE]\n\n"));
    body
}

/// `text` as OpenRouter streams it, its usage saying what the call cost (US dollars)
/// as OpenRouter's usage accounting does.
pub fn openrouter_reply(text: &str, cost: f64) -> Reply {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let usage = json!({
        "prompt_tokens": 7,
        "completion_tokens": words.len(),
        "cost": cost,
        "cost_details": { "upstream_inference_cost": null },
    });
    Reply::sse(&openai_body(&words, usage), 64)
}

/// `text` as a streamed answer in `protocol`, one word per delta, in pieces of `piece`
/// bytes on the wire.
pub fn text_reply(protocol: Protocol, text: &str, piece: usize) -> Reply {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let count = words.len();
    match protocol {
        Protocol::OpenAi => {
            let usage = json!({ "prompt_tokens": 7, "completion_tokens": count });
            Reply::sse(&openai_body(&words, usage), piece)
        }
        Protocol::Anthropic => {
            let event =
                |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
            let mut body = event(
                "message_start",
                json!({ "type": "message_start", "message": { "id": "msg_fake", "role": "assistant", "content": [], "model": MODEL, "usage": { "input_tokens": 7, "output_tokens": 1 } } }),
            );
            body.push_str(&event("content_block_start", json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } })));
            for w in &words {
                body.push_str(&event("content_block_delta", json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": w } })));
            }
            body.push_str(&event(
                "content_block_stop",
                json!({ "type": "content_block_stop", "index": 0 }),
            ));
            body.push_str(&event("message_delta", json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": count } })));
            body.push_str(&event("message_stop", json!({ "type": "message_stop" })));
            Reply::sse(&body, piece)
        }
        Protocol::Gemini => {
            let mut body = String::new();
            for (i, w) in words.iter().enumerate() {
                let mut chunk = json!({
                    "candidates": [{ "content": { "role": "model", "parts": [{ "text": w }] }, "index": 0 }],
                    "usageMetadata": { "promptTokenCount": 7, "candidatesTokenCount": i + 1 },
                });
                if i + 1 == count {
                    chunk["candidates"][0]["finishReason"] = json!("STOP");
                }
                body.push_str(&format!("data: {chunk}\n\n"));
            }
            Reply::sse(&body, piece)
        }
        Protocol::Ollama => {
            let mut body = String::new();
            for w in &words {
                let line = json!({ "model": MODEL, "message": { "role": "assistant", "content": w }, "done": false });
                body.push_str(&format!("{line}\n"));
            }
            let done = json!({ "model": MODEL, "message": { "role": "assistant", "content": "" }, "done": true, "done_reason": "stop", "prompt_eval_count": 7, "eval_count": count });
            body.push_str(&format!("{done}\n"));
            Reply::ndjson(&body, piece)
        }
    }
}

/// Native tool calls `(id, tool, arguments)` in `protocol`'s own shape: OpenAI's
/// `tool_calls` deltas (arguments split in two), Anthropic's `tool_use` blocks with
/// `input_json_delta`s, Gemini's `functionCall` parts, Ollama's `tool_calls` (the last
/// two have no call ids of their own on the wire: the adapters make them).
pub fn tool_call_reply(protocol: Protocol, calls: &[(&str, &str, serde_json::Value)]) -> Reply {
    match protocol {
        Protocol::OpenAi => {
            let mut body = String::new();
            for (i, (id, name, args)) in calls.iter().enumerate() {
                let args = args.to_string();
                let (head, tail) = args.split_at(args.len() / 2);
                let open = json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": i, "id": id, "type": "function", "function": { "name": name, "arguments": head } }] }, "finish_reason": null }] });
                let rest = json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": i, "function": { "arguments": tail } }] }, "finish_reason": null }] });
                body.push_str(&format!("data: {open}\n\ndata: {rest}\n\n"));
            }
            let end =
                json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] });
            let usage =
                json!({ "choices": [], "usage": { "prompt_tokens": 7, "completion_tokens": 5 } });
            body.push_str(&format!("data: {end}\n\ndata: {usage}\n\ndata: [DONE]\n\n"));
            Reply::sse(&body, 64)
        }
        Protocol::Anthropic => {
            let event =
                |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
            let mut body = event(
                "message_start",
                json!({ "type": "message_start", "message": { "id": "msg_fake", "role": "assistant", "content": [], "model": MODEL, "usage": { "input_tokens": 7, "output_tokens": 1 } } }),
            );
            for (i, (id, name, args)) in calls.iter().enumerate() {
                body.push_str(&event("content_block_start", json!({ "type": "content_block_start", "index": i, "content_block": { "type": "tool_use", "id": id, "name": name, "input": {} } })));
                body.push_str(&event("content_block_delta", json!({ "type": "content_block_delta", "index": i, "delta": { "type": "input_json_delta", "partial_json": args.to_string() } })));
                body.push_str(&event(
                    "content_block_stop",
                    json!({ "type": "content_block_stop", "index": i }),
                ));
            }
            body.push_str(&event("message_delta", json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" }, "usage": { "output_tokens": 5 } })));
            body.push_str(&event("message_stop", json!({ "type": "message_stop" })));
            Reply::sse(&body, 64)
        }
        Protocol::Gemini => {
            let parts: Vec<serde_json::Value> = calls
                .iter()
                .map(|(_, name, args)| json!({ "functionCall": { "name": name, "args": args } }))
                .collect();
            let chunk = json!({
                "candidates": [{ "content": { "role": "model", "parts": parts }, "finishReason": "STOP", "index": 0 }],
                "usageMetadata": { "promptTokenCount": 7, "candidatesTokenCount": 5 },
            });
            Reply::sse(&format!("data: {chunk}\n\n"), 64)
        }
        Protocol::Ollama => {
            let tool_calls: Vec<serde_json::Value> = calls
                .iter()
                .map(|(_, name, args)| json!({ "function": { "name": name, "arguments": args } }))
                .collect();
            let line = json!({ "model": MODEL, "message": { "role": "assistant", "content": "", "tool_calls": tool_calls }, "done": false });
            let done = json!({ "model": MODEL, "message": { "role": "assistant", "content": "" }, "done": true, "done_reason": "stop", "prompt_eval_count": 7, "eval_count": 5 });
            Reply::ndjson(&format!("{line}\n{done}\n"), 64)
        }
    }
}

fn path(request: &Recorded) -> (&str, &str) {
    let mut parts = request.request_line.split(' ');
    let method = parts.next().unwrap_or_default();
    let path = parts.next().unwrap_or_default();
    (method, path.split('?').next().unwrap_or_default())
}

/// Answers `GET` model lists (and Ollama's version) for `protocol`, offering [`MODEL`];
/// chat requests fall through to the scripted replies.
pub fn router(protocol: Protocol) -> Router {
    Box::new(move |request| {
        let (method, path) = path(request);
        if method != "GET" {
            return None;
        }
        let body = match (protocol, path) {
            (Protocol::Ollama, "/api/version") => json!({ "version": "0.12.0-fake" }),
            (Protocol::Ollama, "/api/tags") => {
                json!({ "models": [{ "name": format!("{MODEL}:latest"), "model": format!("{MODEL}:latest"), "size": 2_019_393_189u64 }] })
            }
            (Protocol::OpenAi | Protocol::Anthropic, p) if p.ends_with("/models") => {
                json!({ "data": [{ "id": MODEL, "display_name": "Fake Model" }], "has_more": false })
            }
            (Protocol::Gemini, p) if p.ends_with("/models") => json!({ "models": [{
                "name": format!("models/{MODEL}"), "displayName": "Fake Model",
                "supportedGenerationMethods": ["generateContent", "countTokens"]
            }, { "name": "models/fake-embedding", "supportedGenerationMethods": ["embedContent"] }] }),
            _ => return None,
        };
        Some(Reply::json(&body.to_string()))
    })
}

/// Fake Ollama models whose names hold one of these report `vision` among their
/// capabilities; every other reports `completion` and `tools` only.
pub const VISION_MODELS: [&str; 2] = ["vision", "llava"];

/// The trained context length every fake Ollama model reports.
pub const CONTEXT_LENGTH: u64 = 32_768;

/// What every fake server answers unless its router does: Ollama's loaded models
/// (none) and model details (a [`CONTEXT_LENGTH`] window, capabilities by
/// [`VISION_MODELS`]), which a run asks for before it plans, and the unloading of a
/// model (a chat with no messages and `keep_alive` 0, sent when another local model
/// takes the machine's turn; answered as Ollama does), so those requests never take a
/// scripted reply.
pub fn model_details(request: &Recorded) -> Option<Reply> {
    let body = match path(request) {
        ("GET", "/api/ps") => json!({ "models": [] }),
        ("POST", "/api/show") => {
            let model = request.json()["model"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut capabilities = vec!["completion", "tools"];
            if VISION_MODELS.iter().any(|m| model.contains(m)) {
                capabilities.push("vision");
            }
            json!({
                "parameters": "stop \"<|eot_id|>\"",
                "model_info": { "general.architecture": "llama", "llama.context_length": CONTEXT_LENGTH },
                "capabilities": capabilities,
            })
        }
        ("POST", "/api/chat")
            if request.json()["messages"]
                .as_array()
                .is_some_and(Vec::is_empty)
                && request.json()["keep_alive"] == 0 =>
        {
            json!({
                "model": request.json()["model"],
                "created_at": "2026-01-01T00:00:00Z",
                "message": { "role": "assistant", "content": "" },
                "done_reason": "unload",
                "done": true,
            })
        }
        _ => return None,
    };
    Some(Reply::json(&body.to_string()))
}
