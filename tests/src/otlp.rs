//! An OTLP/HTTP trace receiver over real TCP, for the push's tests and benchmark: it
//! takes `POST /v1/traces` as a collector does (protobuf or JSON, gzip or not, kept-alive
//! connections), decodes each request with `opentelemetry-proto` — an independent
//! decoder — and keeps the spans. Faults are scripted answer by answer ([`Fault`]): a
//! status with headers (429 with `Retry-After`, 500, 503), a slow answer, a connection
//! closed without one; and a size limit answers 413 as collectors do.

use std::collections::VecDeque;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer, given instead of taking a request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status, headers and body (the spans are not kept).
    Status(u16, Vec<(String, String)>, String),
    /// Wait this long, then take the request as usual.
    Slow(Duration),
    /// Close the connection without answering.
    Close,
}

/// A request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    /// `application/x-protobuf` or `application/json`.
    pub content_type: String,
    /// `Content-Encoding`, if any.
    pub content_encoding: Option<String>,
    /// Every header, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body bytes as sent (compressed if it was).
    pub wire_bytes: usize,
    /// The body uncompressed (kept only for requests taken).
    pub body: Vec<u8>,
    /// The request decoded; `None` when it did not decode.
    pub request: Option<ExportTraceServiceRequest>,
    /// What the receiver answered.
    pub status: u16,
}

impl Received {
    /// A header value by (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Spans in the request.
    pub fn span_count(&self) -> usize {
        self.request.as_ref().map_or(0, count)
    }
}

fn count(request: &ExportTraceServiceRequest) -> usize {
    request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

#[derive(Default)]
struct Shared {
    faults: Mutex<VecDeque<Fault>>,
    /// Uncompressed bodies larger than this are answered 413.
    max_bytes: AtomicUsize,
    received: Mutex<Vec<Received>>,
    /// Spans taken (answered 200), counted even when `keep` is off.
    taken: AtomicU64,
    /// Keep decoded requests (off for the benchmark's million spans).
    keep: bool,
}

/// A running receiver; stops when dropped.
pub struct OtlpReceiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl OtlpReceiver {
    /// Listen on 127.0.0.1 at a free port.
    pub async fn start() -> Self {
        Self::start_at(0).await.expect("bind the OTLP receiver")
    }

    /// Listen on 127.0.0.1:`port` (a collector coming back where it was).
    pub async fn start_at(port: u16) -> std::io::Result<Self> {
        Self::listen(port, true).await
    }

    /// A receiver that counts spans without keeping them (for the benchmark).
    pub async fn counting() -> Self {
        Self::listen(0, false)
            .await
            .expect("bind the OTLP receiver")
    }

    async fn listen(port: u16, keep: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            max_bytes: AtomicUsize::new(usize::MAX),
            keep,
            ..Shared::default()
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

    /// Base URL, e.g. `http://127.0.0.1:4318` (the push adds `/v1/traces`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Answer the next requests with `faults`, in order, before taking any.
    pub fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(faults);
    }

    /// Answer 413 to bodies larger than `bytes` (uncompressed).
    pub fn limit(&self, bytes: usize) {
        self.shared.max_bytes.store(bytes, Ordering::SeqCst);
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared
            .received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The spans taken so far (answered 200), in order.
    pub fn spans(&self) -> Vec<Span> {
        self.received()
            .into_iter()
            .filter(|r| r.status == 200)
            .filter_map(|r| r.request)
            .flat_map(|r| r.resource_spans)
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    /// How many spans were taken.
    pub fn taken(&self) -> u64 {
        self.shared.taken.load(Ordering::SeqCst)
    }

    /// Wait until at least `n` spans were taken, for at most `patience`; the number
    /// taken.
    pub async fn wait_for(&self, n: u64, patience: Duration) -> u64 {
        let deadline = tokio::time::Instant::now() + patience;
        while self.taken() < n && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.taken()
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request's head and body, or `None` when the client closed the connection.
async fn read_request(
    socket: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<(Vec<(String, String)>, Vec<u8>)>> {
    let mut tmp = vec![0u8; 64 * 1024];
    let header_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let headers: Vec<(String, String)> = head
        .split("\r\n")
        .skip(1)
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
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = buf[header_end..header_end + length].to_vec();
    buf.drain(..header_end + length);
    Ok(Some((headers, body)))
}

async fn answer(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} Receiver\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body).await?;
    socket.flush().await
}

async fn serve(mut socket: TcpStream, state: Arc<Shared>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    while let Some((headers, body)) = read_request(&mut socket, &mut buf).await? {
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let content_type = get("content-type").unwrap_or_default();
        let content_encoding = get("content-encoding");
        let fault = state
            .faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let mut record = Received {
            content_type: content_type.clone(),
            content_encoding: content_encoding.clone(),
            headers: headers.clone(),
            wire_bytes: body.len(),
            body: Vec::new(),
            request: None,
            status: 200,
        };
        match fault {
            Some(Fault::Close) => return Ok(()),
            Some(Fault::Status(status, extra, said)) => {
                record.status = status;
                state.push(record);
                answer(&mut socket, status, &extra, "text/plain", said.as_bytes()).await?;
                continue;
            }
            Some(Fault::Slow(wait)) => tokio::time::sleep(wait).await,
            None => {}
        }
        let plain = match content_encoding.as_deref() {
            Some("gzip") => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(body.as_slice())
                    .read_to_end(&mut out)
                    .map(|_| out)
            }
            _ => Ok(body),
        };
        let json = content_type.starts_with("application/json");
        let decoded = plain.ok().and_then(|bytes| {
            let request = if json {
                serde_json::from_slice::<ExportTraceServiceRequest>(&bytes).ok()
            } else {
                ExportTraceServiceRequest::decode(bytes.as_slice()).ok()
            };
            request.map(|r| (bytes, r))
        });
        let Some((bytes, request)) = decoded else {
            record.status = 400;
            state.push(record);
            answer(
                &mut socket,
                400,
                &[],
                "text/plain",
                b"cannot decode the request",
            )
            .await?;
            continue;
        };
        if bytes.len() > state.max_bytes.load(Ordering::SeqCst) {
            record.status = 413;
            state.push(record);
            answer(
                &mut socket,
                413,
                &[],
                "text/plain",
                b"request entity too large",
            )
            .await?;
            continue;
        }
        state
            .taken
            .fetch_add(count(&request) as u64, Ordering::SeqCst);
        if state.keep {
            record.request = Some(request);
            record.body = bytes;
            state.push(record);
        }
        let response = ExportTraceServiceResponse::default();
        if json {
            let body = serde_json::to_vec(&response).unwrap_or_default();
            answer(&mut socket, 200, &[], "application/json", &body).await?;
        } else {
            let body = response.encode_to_vec();
            answer(&mut socket, 200, &[], "application/x-protobuf", &body).await?;
        }
    }
    Ok(())
}

impl Shared {
    fn push(&self, record: Received) {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
    }
}
