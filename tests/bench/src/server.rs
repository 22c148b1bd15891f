//! The streaming benchmark's fake provider, run as a process of its own (`art-bench serve`)
//! so that its work is not counted in, or scheduled against, the client it serves. It
//! answers every chat request with the same long answer of small deltas, in OpenAI's SSE
//! and in Ollama's NDJSON, shaped as the real services send them (ids, timestamps, finish
//! reasons, usage), and framed as [`Framing`] says: one HTTP chunk per event as real
//! servers write them, paced like a model, or flooded in 16 KiB pieces. A request carrying
//! ART's planning prompt gets a short plan, so the agent pipeline reaches synthesis.
//!
//! Blocking sockets, a thread per connection: a paced answer needs sleeps finer than an
//! async runtime's millisecond timer, and nothing here has to scale.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use art_testkit::fake::Recorded;
use art_testkit::fake::scripts::MODEL;
use serde_json::json;

/// How the server puts an answer on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One HTTP chunk (one `write`) per SSE event or NDJSON line, as fast as the socket
    /// takes them: what a real server does, at the highest rate it can.
    Events,
    /// One HTTP chunk per event, [`PACE`] apart: a model's pace, each event arriving alone.
    Paced,
    /// The answer in 16 KiB pieces, many events per read: a burst no real server sends.
    Burst,
}

/// Time between two events of a paced answer.
pub const PACE: Duration = Duration::from_micros(150);

/// Bytes per write in a burst.
const PIECE: usize = 16 * 1024;

impl Framing {
    /// Every framing, in the order the report shows them.
    pub const ALL: [Self; 3] = [Self::Events, Self::Paced, Self::Burst];

    /// Short name, for the command line and figure ids.
    pub fn key(self) -> &'static str {
        match self {
            Self::Events => "events",
            Self::Paced => "paced",
            Self::Burst => "burst",
        }
    }

    /// The framing named `key`.
    pub fn parse(key: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.key() == key)
            .ok_or_else(|| format!("unknown framing {key:?}: events, paced or burst"))
    }

    /// The body `events` as the pieces this framing writes.
    fn pieces(self, events: &[String]) -> Vec<Vec<u8>> {
        match self {
            Self::Events | Self::Paced => events.iter().map(|e| e.as_bytes().to_vec()).collect(),
            Self::Burst => events
                .concat()
                .as_bytes()
                .chunks(PIECE)
                .map(<[u8]>::to_vec)
                .collect(),
        }
    }
}

/// The server's pause after the first text, as a model pauses after its first token:
/// the time to first token is measured in it, apart from the rest of the answer.
pub const FIRST_TOKEN_GAP: Duration = Duration::from_millis(5);

/// The text of token `i` of `tokens`: a short word and a space, the last without one.
pub fn token(i: usize, tokens: usize) -> &'static str {
    if i + 1 == tokens { "end" } else { "tok " }
}

/// The whole answer the clients must end up with.
pub fn answer(tokens: usize) -> String {
    (0..tokens).map(|i| token(i, tokens)).collect()
}

/// An OpenAI Chat Completions stream of `tokens` deltas as api.openai.com frames it, one
/// string per SSE event.
pub fn openai_events(tokens: usize) -> Vec<String> {
    openai_events_of((0..tokens).map(|i| token(i, tokens)))
}

fn openai_events_of<'a>(texts: impl Iterator<Item = &'a str>) -> Vec<String> {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let chunk = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_763_900_000,
            "model": MODEL, "system_fingerprint": "fp_bench",
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        });
        format!("data: {chunk}\n\n")
    };
    let mut events = vec![chunk(
        json!({ "role": "assistant", "content": "" }),
        json!(null),
    )];
    let mut count = 0;
    for text in texts {
        events.push(chunk(json!({ "content": text }), json!(null)));
        count += 1;
    }
    events.push(chunk(json!({}), json!("stop")));
    let usage = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_763_900_000,
        "model": MODEL, "choices": [],
        "usage": { "prompt_tokens": 7, "completion_tokens": count, "total_tokens": count + 7 },
    });
    events.push(format!("data: {usage}\n\n"));
    events.push("data: [DONE]\n\n".into());
    events
}

/// An Ollama `/api/chat` stream of `tokens` deltas as Ollama frames it, one string per line.
pub fn ollama_events(tokens: usize) -> Vec<String> {
    ollama_events_of((0..tokens).map(|i| token(i, tokens)))
}

fn ollama_events_of<'a>(texts: impl Iterator<Item = &'a str>) -> Vec<String> {
    let line = |content: &str| {
        let line = json!({
            "model": MODEL, "created_at": "2026-11-23T09:00:00.000000Z",
            "message": { "role": "assistant", "content": content }, "done": false,
        });
        format!("{line}\n")
    };
    let mut lines: Vec<String> = texts.map(line).collect();
    let done = json!({
        "model": MODEL, "created_at": "2026-11-23T09:00:01.000000Z",
        "message": { "role": "assistant", "content": "" }, "done": true, "done_reason": "stop",
        "total_duration": 1_000_000_000u64, "load_duration": 1_000_000u64,
        "prompt_eval_count": 7, "prompt_eval_duration": 1_000_000u64,
        "eval_count": lines.len(), "eval_duration": 900_000_000u64,
    });
    lines.push(format!("{done}\n"));
    lines
}

/// The plan ART's planning call gets: answer directly, no tools.
const PLAN: &str =
    r#"{"title": "Bench", "intent": "answer", "plan": "answer directly", "toolCalls": []}"#;

/// What the server says for one request.
struct Answer {
    content_type: &'static str,
    pieces: Vec<Vec<u8>>,
    /// The long answer (timed and paced), not a plan or model details.
    timed: bool,
    /// The piece with the first text (OpenAI's first event only names the role): the
    /// time to first token is measured from it, and the server pauses after it.
    first_text: usize,
}

/// Whether `piece` carries text (a non-empty `content`).
fn has_text(piece: &[u8]) -> bool {
    let marker = br#""content":""#;
    memchr::memmem::find_iter(piece, marker)
        .any(|at| piece.get(at + marker.len()).is_some_and(|c| *c != b'"'))
}

/// Every answer, made once.
struct Answers {
    openai: Answer,
    ollama: Answer,
    openai_plan: Answer,
    ollama_plan: Answer,
}

impl Answers {
    fn new(tokens: usize, framing: Framing) -> Self {
        let sse = "text/event-stream";
        let ndjson = "application/x-ndjson";
        let answer = |content_type, events: Vec<String>, timed| {
            let pieces = framing.pieces(&events);
            let first_text = pieces.iter().position(|p| has_text(p)).unwrap_or(0);
            Answer {
                content_type,
                pieces,
                timed,
                first_text,
            }
        };
        Self {
            openai: answer(sse, openai_events(tokens), true),
            ollama: answer(ndjson, ollama_events(tokens), true),
            openai_plan: answer(sse, openai_events_of([PLAN].into_iter()), false),
            ollama_plan: answer(ndjson, ollama_events_of([PLAN].into_iter()), false),
        }
    }

    /// The answer to `request` (ART's planning call gets the plan).
    fn to(&self, request: &Recorded) -> Option<&Answer> {
        let planning = request.body.contains("Decide how to answer");
        let line = &request.request_line;
        if line.contains("/chat/completions") {
            Some(if planning {
                &self.openai_plan
            } else {
                &self.openai
            })
        } else if line.contains("/api/chat") {
            Some(if planning {
                &self.ollama_plan
            } else {
                &self.ollama
            })
        } else {
            None
        }
    }
}

/// The server: a listener and what it answers.
pub struct Server {
    listener: TcpListener,
    answers: std::sync::Arc<Answers>,
    framing: Framing,
    prefill: Duration,
}

impl Server {
    /// Listen on a free port of 127.0.0.1, streaming `tokens` deltas per answer.
    pub fn bind(tokens: usize, framing: Framing) -> Result<Self, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        Ok(Self {
            listener,
            answers: std::sync::Arc::new(Answers::new(tokens, framing)),
            framing,
            prefill: Duration::ZERO,
        })
    }

    /// Wait `prefill` before every chat answer's first byte (a plan's too), as a model
    /// reads its prompt before it writes: what a question waits for on a local model.
    pub fn with_prefill(mut self, prefill: Duration) -> Self {
        self.prefill = prefill;
        self
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        let port = self.listener.local_addr().map_or(0, |a| a.port());
        format!("http://127.0.0.1:{port}")
    }

    /// Serve until the process ends; `served` is told the wall-clock time each long
    /// answer's first byte left (nanoseconds since the Unix epoch).
    pub fn run(self, served: impl Fn(u128) + Send + Sync + 'static) {
        let served = std::sync::Arc::new(served);
        for socket in self.listener.incoming().flatten() {
            let (answers, served) = (self.answers.clone(), served.clone());
            let paced = self.framing == Framing::Paced;
            let prefill = self.prefill;
            std::thread::spawn(move || {
                // A client that hangs up early is its own failure, reported by it.
                let _ = respond(socket, &answers, paced, prefill, &*served);
            });
        }
    }
}

/// Answer one connection.
fn respond(
    mut socket: TcpStream,
    answers: &Answers,
    paced: bool,
    prefill: Duration,
    served: &dyn Fn(u128),
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let request = read_request(&mut socket)?;
    let Some(answer) = answers.to(&request) else {
        // The Ollama adapter asks for the model's details (its context window).
        let reply = art_testkit::fake::scripts::model_details(&request);
        let body = reply.map(|r| r.chunks.concat()).unwrap_or_default();
        let status = if body.is_empty() {
            "404 Not Found"
        } else {
            "200 OK"
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        socket.write_all(head.as_bytes())?;
        return socket.write_all(&body);
    };
    if !prefill.is_zero() {
        std::thread::sleep(prefill);
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        answer.content_type
    );
    socket.write_all(head.as_bytes())?;
    let mut framed = Vec::new();
    let mut due = Instant::now();
    for (i, piece) in answer.pieces.iter().enumerate() {
        if answer.timed && paced {
            // A fixed schedule: a sleep that overshoots makes the next one shorter.
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            due += PACE;
        }
        framed.clear();
        write!(framed, "{:x}\r\n", piece.len())?;
        framed.extend_from_slice(piece);
        framed.extend_from_slice(b"\r\n");
        let first = answer.timed && i == answer.first_text;
        if first {
            served(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos(),
            );
        }
        socket.write_all(&framed)?;
        if first {
            std::thread::sleep(FIRST_TOKEN_GAP);
            due = Instant::now();
        }
    }
    socket.write_all(b"0\r\n\r\n")
}

/// One HTTP request: its line, headers and body (by `Content-Length`).
fn read_request(socket: &mut TcpStream) -> std::io::Result<Recorded> {
    let mut reader = BufReader::new(socket);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Recorded {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

#[cfg(test)]
mod tests;
