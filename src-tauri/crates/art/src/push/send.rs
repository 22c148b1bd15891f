//! One OTLP/HTTP export request: the batch's `resource_spans` entries as protobuf (or,
//! when asked, OTLP/JSON), gzip-compressed, POSTed to `…/v1/traces`, and what the
//! answer means under the OTLP specification — taken (perhaps in part), to be retried
//! (429, 502, 503, 504, or no answer; after `Retry-After` when given), too large (413:
//! split and send again), or refused for good (any other status: retrying would not
//! help, and the specification forbids it).

use std::io::Write as _;
use std::time::Duration;

use art_types::push::PushEncoding;
use flate2::Compression;
use flate2::write::GzEncoder;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// Longest wait for one request (a slow collector is given up on, then retried).
const TIMEOUT: Duration = Duration::from_secs(30);
/// Longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// How much of a refusal's body is kept for the status line.
const SAID: usize = 300;

/// Where and how to send.
#[derive(Clone)]
pub struct Endpoint {
    url: reqwest::Url,
    headers: HeaderMap,
    encoding: PushEncoding,
    client: reqwest::Client,
}

/// Why an endpoint cannot be used as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Not an `http(s)://` address.
    #[error("{0:?} is not an http:// or https:// address")]
    Url(String),
    /// A header that HTTP does not allow.
    #[error("the header {0:?} is not a valid HTTP header")]
    Header(String),
    /// The HTTP client could not be built.
    #[error("cannot set up HTTP: {0}")]
    Client(String),
}

/// The collector took the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Spans it said it rejected (OTLP partial success), with its message.
    pub rejected: u64,
    /// Its message, if any.
    pub message: String,
}

/// The collector did not take the batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Worth sending again: after `after` when the collector said so.
    #[error("{reason}")]
    Retry {
        /// `Retry-After`, capped at [`MAX_RETRY_AFTER`].
        after: Option<Duration>,
        /// What happened.
        reason: String,
    },
    /// 413: the batch is too large for it.
    #[error("{0}")]
    TooLarge(String),
    /// Refused for good: sending the same again would be refused again.
    #[error("{0}")]
    Refused(String),
}

impl Endpoint {
    /// The traces endpoint of the collector at `base` — a URL ending in `/v1/traces` is
    /// taken as it is, any other gets `/v1/traces` added, as OTLP exporters do with
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` — with `headers` sent on every request.
    pub fn new(
        base: &str,
        headers: &[(String, String)],
        encoding: PushEncoding,
    ) -> Result<Self, EndpointError> {
        let url = traces_url(base)?;
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let bad = || EndpointError::Header(name.clone());
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
            let mut value = HeaderValue::from_str(value.trim()).map_err(|_| bad())?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        let client = crate::net::client_builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| EndpointError::Client(e.to_string()))?;
        Ok(Self {
            url,
            headers: map,
            encoding,
            client,
        })
    }

    /// The address requests go to.
    pub fn url(&self) -> &reqwest::Url {
        &self.url
    }

    /// The request body of `entries` (encoded `resource_spans` entries one after
    /// another): compressed, and turned into OTLP/JSON first when that is asked for.
    pub fn body(&self, entries: &[u8]) -> Result<Vec<u8>, SendError> {
        match self.encoding {
            PushEncoding::Protobuf => Ok(gzip(entries)),
            PushEncoding::Json => {
                let request = ExportTraceServiceRequest::decode(entries).map_err(|e| {
                    SendError::Refused(format!("the queued spans are damaged: {e}"))
                })?;
                let json = serde_json::to_vec(&request)
                    .map_err(|e| SendError::Refused(format!("cannot write OTLP/JSON: {e}")))?;
                Ok(gzip(&json))
            }
        }
    }

    /// POST a `body` made by [`Self::body`].
    pub async fn post(&self, body: Vec<u8>) -> Result<Taken, SendError> {
        let content_type = match self.encoding {
            PushEncoding::Protobuf => "application/x-protobuf",
            PushEncoding::Json => "application/json",
        };
        let answer = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, content_type)
            .header(CONTENT_ENCODING, "gzip")
            .body(body)
            .send()
            .await;
        let response = match answer {
            Ok(response) => response,
            Err(e) => {
                let what = if e.is_timeout() {
                    format!("no answer from {} in {} s", self.url, TIMEOUT.as_secs())
                } else {
                    format!("cannot reach {}: {}", self.url, root_cause(&e))
                };
                return Err(SendError::Retry {
                    after: None,
                    reason: what,
                });
            }
        };
        let status = response.status();
        let after =
            crate::providers::http::retry_after(response.headers()).map(|d| d.min(MAX_RETRY_AFTER));
        let json_answer = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let body = response.bytes().await.unwrap_or_default();
        if status.is_success() {
            return Ok(taken(&body, json_answer));
        }
        let said = String::from_utf8_lossy(&body[..body.len().min(SAID)])
            .trim()
            .to_owned();
        let reason = if said.is_empty() {
            format!("{} answered HTTP {status}", self.url)
        } else {
            format!("{} answered HTTP {status}: {said}", self.url)
        };
        Err(match status.as_u16() {
            429 | 502 | 503 | 504 => SendError::Retry { after, reason },
            413 => SendError::TooLarge(reason),
            _ => SendError::Refused(reason),
        })
    }
}

/// `base` as the traces endpoint.
fn traces_url(base: &str) -> Result<reqwest::Url, EndpointError> {
    let base = base.trim();
    let bad = || EndpointError::Url(base.to_owned());
    let mut url = reqwest::Url::parse(base).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad());
    }
    if !url.path().ends_with("/v1/traces") {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(url)
}

/// What a successful answer says: OTLP's partial success, when there is one.
fn taken(body: &[u8], json: bool) -> Taken {
    let response = if json {
        serde_json::from_slice::<ExportTraceServiceResponse>(body).ok()
    } else {
        ExportTraceServiceResponse::decode(body).ok()
    };
    let partial = response.and_then(|r| r.partial_success);
    Taken {
        rejected: partial
            .as_ref()
            .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0)),
        message: partial.map(|p| p.error_message).unwrap_or_default(),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    // Fast compression: spans squeeze well at any level, and sending is on the way.
    let mut out = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = out.write_all(bytes);
    out.finish().unwrap_or_default()
}

/// The innermost cause of a request error (`Connection refused`), which says most.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_traces_path_once() {
        let url = |s: &str| traces_url(s).map(|u| u.to_string());
        assert_eq!(
            url("http://localhost:6006").unwrap(),
            "http://localhost:6006/v1/traces"
        );
        assert_eq!(url("http://h:4318/").unwrap(), "http://h:4318/v1/traces");
        assert_eq!(url("https://h/otel/").unwrap(), "https://h/otel/v1/traces");
        assert_eq!(url("http://h/v1/traces").unwrap(), "http://h/v1/traces");
        assert!(url("localhost:4318").is_err());
        assert!(url("ftp://h").is_err());
        let bad = Endpoint::new(
            "http://h",
            &[("bad header".into(), "x".into())],
            PushEncoding::Protobuf,
        );
        assert_eq!(bad.err(), Some(EndpointError::Header("bad header".into())));
    }
}
