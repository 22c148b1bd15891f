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

/// The spans of an encoded `ExportTraceServiceRequest`, counted by walking its wire format
/// down to each span's fields (every tag, wire type and length checked), without building
/// the messages; `None` when it is not well-formed. What the counting receiver does: a
/// full decode allocates every attribute, and made the benchmark measure this receiver's
/// allocator instead of the push.
fn spans_on_the_wire(request: &[u8]) -> Option<u64> {
    let mut spans = 0;
    fields(request, &mut |field, resource| {
        if field != 1 {
            return Some(());
        }
        fields(resource, &mut |field, scope| {
            if field != 2 {
                return Some(());
            }
            fields(scope, &mut |field, span| {
                if field == 2 {
                    spans += 1;
                    fields(span, &mut |_, _| Some(()))?;
                }
                Some(())
            })
        })
    })?;
    Some(spans)
}

/// Each field of one protobuf message, with the bytes of its length-delimited ones (given
/// to `each`, which may refuse them); `None` when malformed.
fn fields(mut bytes: &[u8], each: &mut dyn FnMut(u32, &[u8]) -> Option<()>) -> Option<()> {
    use prost::encoding::decode_varint;
    while !bytes.is_empty() {
        let key = decode_varint(&mut bytes).ok()?;
        let field = u32::try_from(key >> 3).ok().filter(|f| *f > 0)?;
        match key & 7 {
            0 => {
                decode_varint(&mut bytes).ok()?;
            }
            1 => bytes = bytes.get(8..)?,
            2 => {
                let len = usize::try_from(decode_varint(&mut bytes).ok()?).ok()?;
                let value = bytes.get(..len)?;
                each(field, value)?;
                bytes = &bytes[len..];
            }
            5 => bytes = bytes.get(4..)?,
            _ => return None,
        }
    }
    Some(())
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

    /// A receiver that counts spans without keeping them (for the benchmark): protobuf
    /// requests are gunzipped and their spans counted on the wire, not decoded into
    /// messages (see `spans_on_the_wire`).
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
            if !state.keep && !json {
                // Counting only: the wire format walked to every span, nothing built.
                return spans_on_the_wire(&bytes).map(|n| (bytes, None, n));
            }
            let request = if json {
                serde_json::from_slice::<ExportTraceServiceRequest>(&bytes).ok()
            } else {
                ExportTraceServiceRequest::decode(bytes.as_slice()).ok()
            };
            request.map(|r| {
                let n = count(&r) as u64;
                (bytes, Some(r), n)
            })
        });
        let Some((bytes, request, spans)) = decoded else {
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
        state.taken.fetch_add(spans, Ordering::SeqCst);
        if state.keep {
            record.request = request;
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

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};

    fn span(name: &str) -> Span {
        Span {
            name: name.into(),
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            start_time_unix_nano: 1,
            attributes: vec![KeyValue {
                key: "gen_ai.request.model".into(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue("m".into())),
                }),
                ..KeyValue::default()
            }],
            ..Span::default()
        }
    }

    #[test]
    fn the_wire_walk_counts_what_a_full_decode_counts_and_refuses_what_it_refuses() {
        let scope = |n: usize| ScopeSpans {
            spans: (0..n).map(|i| span(&format!("s{i}"))).collect(),
            ..ScopeSpans::default()
        };
        let request = ExportTraceServiceRequest {
            resource_spans: vec![
                ResourceSpans {
                    scope_spans: vec![scope(2), scope(0)],
                    ..ResourceSpans::default()
                },
                ResourceSpans {
                    scope_spans: vec![scope(3)],
                    ..ResourceSpans::default()
                },
            ],
        };
        let bytes = request.encode_to_vec();
        assert_eq!(spans_on_the_wire(&bytes), Some(count(&request) as u64));
        assert_eq!(spans_on_the_wire(&bytes), Some(5));
        assert_eq!(spans_on_the_wire(&[]), Some(0), "an empty request");
        // Cut anywhere inside, the request is refused as a full decode refuses it.
        for cut in 1..bytes.len() {
            let part = &bytes[..cut];
            let full = ExportTraceServiceRequest::decode(part).ok();
            assert_eq!(
                spans_on_the_wire(part).is_some(),
                full.is_some(),
                "cut at {cut} of {}",
                bytes.len()
            );
        }
    }
}
