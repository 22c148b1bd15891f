//! The benchmark's fake provider: the testkit's [`FakeServer`] answering every chat
//! request with the same long stream of small deltas, in OpenAI's SSE and in Ollama's
//! NDJSON, shaped as the real services send them (ids, timestamps, finish reasons,
//! usage), so each client parses what it would parse in use. A request carrying ART's
//! planning prompt gets a short plan instead, so the agent pipeline reaches synthesis.

use art_testkit::fake::scripts::MODEL;
use art_testkit::fake::{FakeServer, Recorded, Reply};
use serde_json::json;

/// Bytes per write on the wire (a server flushing as fast as it can).
const PIECE: usize = 16 * 1024;

/// The server's pause after its first piece, as a model pauses after its first token.
/// Without it the first token is timed while the server floods the 2 cores with the rest
/// of the answer: that measured the flood (~2 ms for every client), not the client.
pub const FIRST_TOKEN_GAP: std::time::Duration = std::time::Duration::from_millis(5);

/// The text of token `i` of `tokens`: a short word and a space, the last without one.
pub fn token(i: usize, tokens: usize) -> &'static str {
    if i + 1 == tokens { "end" } else { "tok " }
}

/// The whole answer the clients must end up with.
pub fn answer(tokens: usize) -> String {
    (0..tokens).map(|i| token(i, tokens)).collect()
}

/// An OpenAI Chat Completions stream of `tokens` deltas, as api.openai.com frames it.
pub fn openai_body(tokens: usize) -> String {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let chunk = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_763_900_000,
            "model": MODEL, "system_fingerprint": "fp_bench",
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        });
        format!("data: {chunk}\n\n")
    };
    let mut body = chunk(json!({ "role": "assistant", "content": "" }), json!(null));
    for i in 0..tokens {
        body.push_str(&chunk(json!({ "content": token(i, tokens) }), json!(null)));
    }
    body.push_str(&chunk(json!({}), json!("stop")));
    let usage = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_763_900_000,
        "model": MODEL, "choices": [],
        "usage": { "prompt_tokens": 7, "completion_tokens": tokens, "total_tokens": tokens + 7 },
    });
    body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    body
}

/// An Ollama `/api/chat` stream of `tokens` deltas, as Ollama frames it.
pub fn ollama_body(tokens: usize) -> String {
    let line = |content: &str| {
        let line = json!({
            "model": MODEL, "created_at": "2026-11-23T09:00:00.000000Z",
            "message": { "role": "assistant", "content": content }, "done": false,
        });
        format!("{line}\n")
    };
    let mut body: String = (0..tokens).map(|i| line(token(i, tokens))).collect();
    let done = json!({
        "model": MODEL, "created_at": "2026-11-23T09:00:01.000000Z",
        "message": { "role": "assistant", "content": "" }, "done": true, "done_reason": "stop",
        "total_duration": 1_000_000_000u64, "load_duration": 1_000_000u64,
        "prompt_eval_count": 7, "prompt_eval_duration": 1_000_000u64,
        "eval_count": tokens, "eval_duration": 900_000_000u64,
    });
    body.push_str(&format!("{done}\n"));
    body
}

/// The plan ART's planning call gets: answer directly, no tools.
const PLAN: &str =
    r#"{"title": "Bench", "intent": "answer", "plan": "answer directly", "toolCalls": []}"#;

/// Whether `request` is ART's planning call (its system prompt opens with this).
fn is_planning(request: &Recorded) -> bool {
    request.body.contains("Decide how to answer")
}

/// The model a client names to get the short answer, [`short`] deltas instead of all:
/// for a client so slow that five full streams would take minutes. Its figures are per
/// token, so they compare with the others'.
pub const SHORT_MODEL: &str = "bench-short-answer";

/// The length of the short answer for `tokens`.
pub fn short(tokens: usize) -> usize {
    (tokens / 10).max(1)
}

/// Start the server on a free port of 127.0.0.1, streaming `tokens` deltas per answer
/// ([`short`] of them to requests for [`SHORT_MODEL`]).
pub async fn start(tokens: usize) -> FakeServer {
    let paused = |reply: Reply| reply.pause_after_first(FIRST_TOKEN_GAP);
    let openai = paused(Reply::sse(&openai_body(tokens), PIECE));
    let ollama = paused(Reply::ndjson(&ollama_body(tokens), PIECE));
    let openai_short = paused(Reply::sse(&openai_body(short(tokens)), PIECE));
    let ollama_short = paused(Reply::ndjson(&ollama_body(short(tokens)), PIECE));
    // The plan is one piece: nothing to pause for.
    let openai_plan = Reply::sse(&openai_body_of(PLAN), PIECE);
    let ollama_plan = Reply::ndjson(&ollama_body_of(PLAN), PIECE);
    let router = move |request: &Recorded| {
        let line = &request.request_line;
        let planning = is_planning(request);
        let short = request.body.contains(SHORT_MODEL);
        if line.contains("/chat/completions") {
            let full = if short { &openai_short } else { &openai };
            Some(if planning { &openai_plan } else { full }.clone())
        } else if line.contains("/api/chat") {
            let full = if short { &ollama_short } else { &ollama };
            Some(if planning { &ollama_plan } else { full }.clone())
        } else {
            None
        }
    };
    FakeServer::start_at(0, Some(Box::new(router)), Vec::new())
        .await
        .expect("bind the benchmark server")
}

/// `text` as a one-delta OpenAI stream.
fn openai_body_of(text: &str) -> String {
    openai_body(1).replace("\"end\"", &serde_json::to_string(text).unwrap_or_default())
}

/// `text` as a one-delta Ollama stream.
fn ollama_body_of(text: &str) -> String {
    ollama_body(1).replace("\"end\"", &serde_json::to_string(text).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// The answer's second piece leaves the server no sooner than [`FIRST_TOKEN_GAP`]
    /// after its first (a lower bound: scheduling can only make it later), and the whole
    /// answer still arrives.
    #[tokio::test]
    async fn the_answer_pauses_after_its_first_piece() {
        let tokens = 2_000;
        let server = start(tokens).await;
        let body = r#"{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true}"#;
        let address = server.url().trim_start_matches("http://").to_owned();
        let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let (mut received, mut buf) = (Vec::new(), [0u8; 4096]);
        let mut second_piece_at = None;
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
            if received.len() > 2 * PIECE {
                second_piece_at.get_or_insert_with(std::time::Instant::now);
            }
        }
        let first_piece_at = server.first_bytes()[0];
        assert!(second_piece_at.unwrap() - first_piece_at >= FIRST_TOKEN_GAP);
        let text = String::from_utf8(received).unwrap();
        let (head, chunked) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"));
        assert_eq!(unchunk(chunked), openai_body(tokens));
    }

    /// The body of a `Transfer-Encoding: chunked` message.
    fn unchunk(mut rest: &str) -> String {
        let mut body = String::new();
        loop {
            let (size, after) = rest.split_once("\r\n").unwrap();
            let size = usize::from_str_radix(size, 16).unwrap();
            if size == 0 {
                return body;
            }
            body.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
    }

    #[test]
    fn bodies_carry_every_token_once() {
        let body = openai_body(3);
        assert_eq!(body.matches("\"content\":\"tok \"").count(), 2);
        assert_eq!(body.matches("\"content\":\"end\"").count(), 1);
        assert!(body.ends_with("data: [DONE]\n\n"));
        let ollama = ollama_body(3);
        assert_eq!(ollama.lines().count(), 4);
        assert_eq!(answer(3), "tok tok end");
        assert!(openai_body_of(PLAN).contains("toolCalls"));
    }
}
