//! Fake provider servers over real TCP, for adapter and end-to-end tests. Each
//! connection gets the next scripted [`Reply`]; the server records every request.
//! Replies are written byte for byte, so tests control splits (inside UTF-8 too),
//! delays, disconnects and hangs.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub mod ollama;
pub mod scripts;

/// How a streamed reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Finish the chunked body properly.
    Complete,
    /// Close the connection mid-body.
    Disconnect,
    /// Keep the connection open and send nothing more.
    Hang,
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Body pieces, each written (and flushed) separately.
    pub chunks: Vec<Vec<u8>>,
    /// Pause before each piece.
    pub delay: Duration,
    /// Pause after the first piece, as a model pauses after its first token (the
    /// benchmarks use it so a client's first token is timed apart from the rush of the
    /// rest of the answer).
    pub first_pause: Duration,
    /// How the body ends.
    pub ending: Ending,
}

impl Reply {
    /// A `text/event-stream` reply of `body`, split into pieces of `piece` bytes.
    pub fn sse(body: &str, piece: usize) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            chunks: body
                .as_bytes()
                .chunks(piece.max(1))
                .map(<[u8]>::to_vec)
                .collect(),
            delay: Duration::ZERO,
            first_pause: Duration::ZERO,
            ending: Ending::Complete,
        }
    }

    /// An `application/x-ndjson` reply (Ollama), split into pieces of `piece` bytes.
    pub fn ndjson(body: &str, piece: usize) -> Self {
        let mut reply = Self::sse(body, piece);
        reply.headers = vec![("Content-Type".into(), "application/x-ndjson".into())];
        reply
    }

    /// A `200 OK` JSON reply.
    pub fn json(json: &str) -> Self {
        Self::error(200, json)
    }

    /// A JSON reply with `status` (an error when not 2xx).
    pub fn error(status: u16, json: &str) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            chunks: vec![json.as_bytes().to_vec()],
            delay: Duration::ZERO,
            first_pause: Duration::ZERO,
            ending: Ending::Complete,
        }
    }

    /// A reply of raw bytes with `status` and no headers, in `pieces` pieces of about
    /// equal size (none for an empty body).
    pub fn bytes(status: u16, body: &[u8], pieces: usize) -> Self {
        let piece = body.len().div_ceil(pieces.max(1)).max(1);
        Self {
            status,
            headers: Vec::new(),
            chunks: body.chunks(piece).map(<[u8]>::to_vec).collect(),
            delay: Duration::ZERO,
            first_pause: Duration::ZERO,
            ending: Ending::Complete,
        }
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Pause before each piece.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Pause after the first piece (see [`Reply::first_pause`]).
    pub fn pause_after_first(mut self, pause: Duration) -> Self {
        self.first_pause = pause;
        self
    }

    /// End differently.
    pub fn ending(mut self, ending: Ending) -> Self {
        self.ending = ending;
        self
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Request line, e.g. `POST /v1/chat/completions HTTP/1.1`.
    pub request_line: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: String,
}

impl Recorded {
    /// A header value by (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Answers some requests the same way every time (model lists, version), before the
/// scripted replies are consulted; `None` lets a request take the next scripted reply
/// (after [`scripts::model_details`], which every server answers).
pub type Router = Box<dyn Fn(&Recorded) -> Option<Reply> + Send + Sync>;

struct Shared {
    router: Option<Router>,
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    abandoned: AtomicUsize,
    first_bytes: Mutex<Vec<Instant>>,
    /// When each completed reply's last piece had been written, with its request's
    /// index in `requests`.
    last_bytes: Mutex<Vec<(Instant, usize)>>,
    /// Requests being answered now, and the most at once.
    active: AtomicUsize,
    most_active: AtomicUsize,
}

/// Counts a request as being answered until dropped.
struct Answering<'a>(&'a Shared);

impl<'a> Answering<'a> {
    fn start(state: &'a Shared) -> Self {
        let now = state.active.fetch_add(1, Ordering::SeqCst) + 1;
        state.most_active.fetch_max(now, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running fake server; stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Add `reply` to the end of the script (a server that comes back after failing).
    pub fn push(&self, reply: Reply) {
        self.shared
            .replies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(reply);
    }

    /// Listen on 127.0.0.1 (a free port) and answer connections with `replies` in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::start_at(0, None, replies)
            .await
            .expect("bind fake server")
    }

    /// Listen on 127.0.0.1:`port` (0: any free port); `router` answers fixed endpoints,
    /// everything else takes the next of `replies`.
    pub async fn start_at(
        port: u16,
        router: Option<Router>,
        replies: Vec<Reply>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            router,
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
            abandoned: AtomicUsize::new(0),
            first_bytes: Mutex::new(Vec::new()),
            last_bytes: Mutex::new(Vec::new()),
            active: AtomicUsize::new(0),
            most_active: AtomicUsize::new(0),
        });
        let state = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    let _ = serve(socket, state).await;
                });
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// Base URL, e.g. `http://127.0.0.1:4321`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The most requests this server was answering at the same time (how tests see a
    /// client's concurrency limit from the outside).
    pub fn most_concurrent(&self) -> usize {
        self.shared.most_active.load(Ordering::SeqCst)
    }

    /// How many replies the client walked away from mid-body (the connection closed
    /// under a write): how tests see that dropping a stream aborted the request.
    pub fn abandoned(&self) -> usize {
        self.shared.abandoned.load(Ordering::SeqCst)
    }

    /// When the first body byte of each streamed reply went out (taken just before its
    /// write), in reply order (benchmarks measure the time to first token a client adds
    /// on top).
    pub fn first_bytes(&self) -> Vec<Instant> {
        self.shared
            .first_bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// When the last piece of each reply that completed had been written, in order (the
    /// desktop bench measures how long after it the page shows the answer's end).
    pub fn last_bytes(&self) -> Vec<Instant> {
        self.shared
            .last_bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(at, _)| *at)
            .collect()
    }

    /// Each completed reply's request with when its last piece had been written, in the
    /// order they completed (how a bench tells which of several streams at once ended
    /// when: by the model each asked for).
    pub fn completed(&self) -> Vec<(Recorded, Instant)> {
        let ended = self
            .shared
            .last_bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let requests = self.requests();
        ended
            .into_iter()
            .filter_map(|(at, i)| Some((requests.get(i)?.clone(), at)))
            .collect()
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Recorded> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let header_end = loop {
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = String::from_utf8_lossy(&buf[header_end..]).into_owned();
    Ok(Recorded {
        request_line,
        headers,
        body,
    })
}

async fn write_flushed(socket: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    socket.write_all(bytes).await?;
    socket.flush().await
}

async fn serve(mut socket: TcpStream, state: Arc<Shared>) -> std::io::Result<()> {
    let request = read_request(&mut socket).await?;
    // Counted until just before the last piece is written: the client cannot have
    // finished before that, so a request that arrives later was never at the same time.
    let mut answering = Some(Answering::start(&state));
    let routed = state
        .router
        .as_ref()
        .and_then(|route| route(&request))
        .or_else(|| scripts::model_details(&request));
    let index = {
        let mut requests = state.requests.lock().unwrap_or_else(|p| p.into_inner());
        requests.push(request);
        requests.len() - 1
    };
    let reply = routed.or_else(|| {
        state
            .replies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
    });
    let Some(reply) = reply else {
        let body = r#"{"error":{"message":"the fake server has no scripted reply left"}}"#;
        let head = format!(
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        socket.write_all(head.as_bytes()).await?;
        return socket.write_all(body.as_bytes()).await;
    };
    let mut head = format!(
        "HTTP/1.1 {} Fake\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    let total = reply.chunks.len();
    for (i, chunk) in reply.chunks.iter().enumerate() {
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        if reply.ending != Ending::Complete && i == total / 2 {
            break;
        }
        if i + 1 == total {
            answering.take();
        }
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(chunk);
        framed.extend_from_slice(b"\r\n");
        if i == 0 {
            // Taken as the first byte starts out: no client can see it any earlier.
            let now = Instant::now();
            state
                .first_bytes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(now);
        }
        if let Err(e) = write_flushed(&mut socket, &framed).await {
            state.abandoned.fetch_add(1, Ordering::SeqCst);
            return Err(e);
        }
        if i == 0 && !reply.first_pause.is_zero() {
            tokio::time::sleep(reply.first_pause).await;
        }
    }
    match reply.ending {
        Ending::Complete => {
            state
                .last_bytes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((Instant::now(), index));
            socket.write_all(b"0\r\n\r\n").await
        }
        Ending::Disconnect => socket.shutdown().await,
        Ending::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
    }
}
