//! `art-testkit serve`: a fake provider on 127.0.0.1 for trying the app (or the `art`
//! CLI) without a real model. It answers model lists, then each chat request with the
//! next scripted reply, and echoes the last user message once the script runs out.
//!
//! ```text
//! art-testkit serve --provider ollama [--port 11434] [--script replies.json] [--split 16]
//! ```
//!
//! A script is a JSON array; each entry is a text answer (`"Hello"`), a fixture file
//! streamed as is (`{"fixture": "tests/fixtures/openai/text.sse"}`), or an HTTP error
//! (`{"status": 429, "body": {…}, "headers": {"retry-after": "1"}}`).

use std::collections::VecDeque;
use std::sync::Mutex;

use art_testkit::fake::scripts::{Protocol, router, text_reply};
use art_testkit::fake::{FakeServer, Recorded, Reply};
use serde_json::Value;

const USAGE: &str = "usage: art-testkit serve --provider <openai|deepseek|openrouter|anthropic|gemini|ollama> [--port N] [--script FILE] [--split BYTES]";

struct Args {
    protocol: Protocol,
    port: u16,
    script: Option<String>,
    split: usize,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    if args.next().as_deref() != Some("serve") {
        return Err(USAGE.into());
    }
    let (mut protocol, mut port, mut script, mut split) = (None, 0, None, 16);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--provider" => protocol = Some(value()?.parse::<Protocol>()?),
            "--port" => port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--script" => script = Some(value()?),
            "--split" => split = value()?.parse().map_err(|e| format!("--split: {e}"))?,
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let protocol = protocol.ok_or_else(|| format!("--provider is required\n{USAGE}"))?;
    Ok(Args {
        protocol,
        port,
        script,
        split,
    })
}

fn script_entry(entry: &Value, args: &Args) -> Result<Reply, String> {
    if let Some(text) = entry.as_str() {
        return Ok(text_reply(args.protocol, text, args.split));
    }
    if let Some(path) = entry.get("fixture").and_then(Value::as_str) {
        let body = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        return Ok(match args.protocol {
            Protocol::Ollama => Reply::ndjson(&body, args.split),
            _ => Reply::sse(&body, args.split),
        });
    }
    if let Some(status) = entry.get("status").and_then(Value::as_u64) {
        let status = u16::try_from(status).map_err(|_| format!("bad status {status}"))?;
        let mut reply = Reply::error(
            status,
            &entry.get("body").cloned().unwrap_or_default().to_string(),
        );
        for (name, value) in entry
            .get("headers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            reply = reply.header(name, value.as_str().unwrap_or_default());
        }
        return Ok(reply);
    }
    Err(format!("script entry not understood: {entry}"))
}

fn load_script(args: &Args) -> Result<VecDeque<Reply>, String> {
    let Some(path) = &args.script else {
        return Ok(VecDeque::new());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let entries: Vec<Value> =
        serde_json::from_str(&text).map_err(|e| format!("{path}: not a JSON array: {e}"))?;
    entries.iter().map(|e| script_entry(e, args)).collect()
}

/// The text of the last message of a chat request, whatever the protocol.
fn last_user_text(request: &Recorded) -> String {
    fn texts(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| texts(i, out)),
            Value::Object(map) => ["content", "text", "parts"]
                .iter()
                .filter_map(|k| map.get(*k))
                .for_each(|v| texts(v, out)),
            _ => {}
        }
    }
    let body = request.json();
    let last = ["messages", "contents"]
        .iter()
        .find_map(|k| body.get(*k)?.as_array()?.last().cloned())
        .unwrap_or_default();
    let mut out = Vec::new();
    texts(&last, &mut out);
    out.join(" ")
}

#[tokio::main]
async fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let script = match load_script(&args) {
        Ok(script) => Mutex::new(script),
        Err(message) => {
            eprintln!("art-testkit: {message}");
            std::process::exit(2);
        }
    };
    let (protocol, split) = (args.protocol, args.split);
    let models = router(protocol);
    let route = Box::new(move |request: &Recorded| {
        if let Some(reply) = models(request) {
            return Some(reply);
        }
        let next = script.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        Some(next.unwrap_or_else(|| {
            text_reply(
                protocol,
                &format!("You said: {}", last_user_text(request)),
                split,
            )
        }))
    });
    let server = match FakeServer::start_at(args.port, Some(route), Vec::new()).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("art-testkit: cannot listen on port {}: {e}", args.port);
            std::process::exit(1);
        }
    };
    println!("{}", server.url());
    let _ = tokio::signal::ctrl_c().await;
}
