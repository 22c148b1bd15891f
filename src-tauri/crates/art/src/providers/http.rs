//! HTTP for provider adapters: one client with a connect timeout and no overall
//! timeout (streams may run long), an idle timeout between chunks, base-URL joining,
//! error classification, retries only before the first byte, and JSON answers to a GET
//! (`get_json`, and the fields read from them) for model lists and the Ollama doctor.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use art_types::{ErrorClass, FailureCode};
use futures::Stream;
use serde_json::Value;

use crate::reasoning::provider::ProviderError;

/// Timeouts and retries.
#[derive(Debug, Clone, Copy)]
pub struct HttpOptions {
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Longest silence between two chunks of a stream.
    pub idle_timeout: Duration,
    /// Retries after the first attempt (before any byte of the stream was consumed).
    pub max_retries: u32,
    /// First backoff; doubles each retry, with jitter.
    pub backoff: Duration,
    /// Upper bound on a server-requested wait (`Retry-After`).
    pub max_retry_after: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_retries: 2,
            backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

/// A client for streaming calls (no gzip: compression defeats incremental delivery).
pub fn client(options: &HttpOptions) -> Result<reqwest::Client, ProviderError> {
    crate::net::client_builder()
        .connect_timeout(options.connect_timeout)
        .build()
        .map_err(|e| {
            ProviderError::new(
                ErrorClass::Permanent,
                FailureCode::HttpClient,
                e.to_string(),
            )
        })
}

/// `base` + `path` with exactly one slash between them.
pub fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// The provider's own message from a JSON error body, if it has one.
fn provider_message(body: &str) -> Option<String> {
    let json: Value = serde_json::from_str(body).ok()?;
    let error = json.get("error")?;
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map(str::to_owned)
}

/// What servers say when a model cannot take a question's images, in each one's words
/// (lower case): llama.cpp's server without the model's projector, LM Studio, vLLM,
/// OpenAI, Ollama.
const REFUSES_IMAGES: &[&str] = &[
    "image input is not supported",
    "does not support image",
    "does not support vision",
    "not a multimodal model",
    "image_url is only supported",
    "missing data required for image input",
];

/// Whether a provider's error `message` refuses the question's images.
pub fn refuses_images(message: &str) -> bool {
    let message = message.to_lowercase();
    REFUSES_IMAGES.iter().any(|m| message.contains(m))
}

/// Classify a non-success HTTP answer, keeping the provider's words.
pub fn classify(status: u16, body: &str) -> ProviderError {
    let lower = body.to_ascii_lowercase();
    let said = provider_message(body).unwrap_or_else(|| body.chars().take(300).collect());
    let (class, code) = match status {
        // A refusal of tools is not worth a retry, whatever the status (llama.cpp: 500).
        _ if crate::reasoning::text_form::refuses_tools(&said) => {
            (ErrorClass::Permanent, FailureCode::ToolsUnsupported)
        }
        // So is a refusal of images (llama.cpp: 500).
        _ if refuses_images(&said) => (ErrorClass::Permanent, FailureCode::ImagesUnsupported),
        401 | 403 => (ErrorClass::Auth, FailureCode::AuthenticationFailed),
        429 if lower.contains("insufficient_quota") => {
            (ErrorClass::Permanent, FailureCode::QuotaExhausted)
        }
        429 => (ErrorClass::RateLimited, FailureCode::RateLimited),
        400 | 413
            if lower.contains("context_length")
                || lower.contains("maximum context")
                || lower.contains("too long")
                || lower.contains("maximum number of tokens") =>
        {
            (
                ErrorClass::ContextLength,
                FailureCode::ContextLengthExceeded,
            )
        }
        404 => (ErrorClass::Permanent, FailureCode::NotFound),
        500..=599 => (ErrorClass::Transient, FailureCode::ProviderUnavailable),
        _ => (ErrorClass::Permanent, FailureCode::RequestRejected),
    };
    ProviderError::new(class, code, format!("HTTP {status}: {said}"))
}

/// The wait a server asked for (`retry-after-ms`, or `Retry-After` in seconds).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
}

/// Gemini's wait hint: a `RetryInfo` detail with `"retryDelay": "7s"` in the error body.
pub fn retry_delay_in_body(body: &str) -> Option<Duration> {
    let json: Value = serde_json::from_str(body).ok()?;
    json.pointer("/error/details")?
        .as_array()?
        .iter()
        .filter_map(|d| d.get("retryDelay")?.as_str())
        .find_map(|d| d.trim().strip_suffix('s')?.parse::<f64>().ok())
        .map(|s| Duration::from_secs_f64(s.max(0.0)))
}

fn retryable(error: &ProviderError) -> bool {
    matches!(error.class, ErrorClass::Transient | ErrorClass::RateLimited)
}

fn jitter(base: Duration) -> Duration {
    // Up to +25%, from the clock's low bits: enough to spread retries apart.
    let nanos = u64::from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos(),
    );
    base + base.mul_f64((nanos % 250) as f64 / 1000.0)
}

/// Send `make()` until it gives a successful response (retrying transient failures and
/// rate limits before any byte was read); errors are classified.
pub async fn send_with_retries(
    options: &HttpOptions,
    make: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, ProviderError> {
    let mut attempt = 0;
    loop {
        let outcome = match make().send().await {
            Ok(response) if response.status().is_success() => return Ok(response),
            Ok(response) => {
                let status = response.status().as_u16();
                let header_wait = retry_after(response.headers());
                let body = response.text().await.unwrap_or_default();
                let wait = header_wait.or_else(|| retry_delay_in_body(&body));
                (classify(status, &body), wait)
            }
            Err(e) if e.is_connect() || e.is_timeout() => (
                ProviderError::new(
                    ErrorClass::Transient,
                    FailureCode::ConnectionFailed,
                    format!("cannot reach the provider: {e}"),
                ),
                None,
            ),
            Err(e) => (
                ProviderError::new(ErrorClass::Transient, FailureCode::HttpError, e.to_string()),
                None,
            ),
        };
        let (error, wait) = outcome;
        if attempt >= options.max_retries || !retryable(&error) {
            return Err(error);
        }
        let backoff = wait
            .map(|w| w.min(options.max_retry_after))
            .unwrap_or_else(|| jitter(options.backoff * 2u32.pow(attempt)));
        tokio::time::sleep(backoff).await;
        attempt += 1;
    }
}

/// The response body as a byte stream that fails with `IDLE_TIMEOUT` when the server
/// stays silent longer than `idle`, and with `STREAM_INTERRUPTED` when the connection
/// breaks; it ends after either.
pub fn idle_guarded(
    response: reqwest::Response,
    idle: Duration,
) -> impl Stream<Item = Result<bytes::Bytes, ProviderError>> + Send {
    IdleGuarded {
        body: Some(Box::pin(response.bytes_stream())),
        idle,
        timer: Box::pin(tokio::time::sleep(idle)),
        last: tokio::time::Instant::now(),
    }
}

/// A body with one deadline for the whole stream rather than a timer per piece: a piece
/// only notes when it came, and when the timer fires it is moved to the last piece's time
/// plus `idle`, unless that has passed too. A token-a-chunk stream arms no timer per token.
struct IdleGuarded<B> {
    body: Option<Pin<Box<B>>>,
    idle: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
    /// When the last piece came.
    last: tokio::time::Instant,
}

impl<B> Stream for IdleGuarded<B>
where
    B: Stream<Item = reqwest::Result<bytes::Bytes>>,
{
    type Item = Result<bytes::Bytes, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(body) = self.body.as_mut() else {
            return Poll::Ready(None);
        };
        let error = match body.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                self.last = tokio::time::Instant::now();
                return Poll::Ready(Some(Ok(bytes)));
            }
            Poll::Ready(None) => {
                self.body = None;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(Err(e))) => ProviderError::new(
                ErrorClass::Transient,
                FailureCode::StreamInterrupted,
                format!("the connection broke: {e}"),
            ),
            Poll::Pending => loop {
                std::task::ready!(self.timer.as_mut().poll(cx));
                let deadline = self.last + self.idle;
                if deadline <= tokio::time::Instant::now() {
                    break ProviderError::new(
                        ErrorClass::Transient,
                        FailureCode::IdleTimeout,
                        format!("the provider sent nothing for {} s", self.idle.as_secs()),
                    );
                }
                self.timer.as_mut().reset(deadline);
            },
        };
        self.body = None;
        Poll::Ready(Some(Err(error)))
    }
}

/// GET `url` with `headers` and decode the JSON answer (errors classified as for calls).
pub(crate) async fn get_json(
    client: &reqwest::Client,
    options: &HttpOptions,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<Value, ProviderError> {
    let response = send_with_retries(options, || {
        headers
            .iter()
            .fold(client.get(url), |request, (name, value)| {
                request.header(*name, *value)
            })
    })
    .await?;
    response.json().await.map_err(|e| {
        ProviderError::new(
            ErrorClass::Permanent,
            FailureCode::UnexpectedResponse,
            format!("{url} did not answer with JSON: {e}"),
        )
    })
}

/// A string field of a JSON answer.
pub(crate) fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The items of an array field of a JSON answer (none when it is missing).
pub(crate) fn entries<'a>(answer: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    answer
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_join_with_one_slash() {
        assert_eq!(
            join("http://h:1/v1/", "/chat/completions"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            join("http://h:1/v1", "chat/completions"),
            "http://h:1/v1/chat/completions"
        );
    }

    #[test]
    fn classification_keeps_the_provider_message() {
        let e = classify(
            401,
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#,
        );
        assert_eq!(
            (e.class, e.code.clone()),
            (ErrorClass::Auth, FailureCode::AuthenticationFailed)
        );
        assert!(e.message.contains("Incorrect API key"));
        assert_eq!(
            classify(
                429,
                r#"{"error":{"code":"insufficient_quota","message":"q"}}"#
            )
            .code,
            FailureCode::QuotaExhausted
        );
        assert_eq!(classify(429, "{}").class, ErrorClass::RateLimited);
        assert_eq!(
            classify(
                400,
                r#"{"error":{"code":"context_length_exceeded","message":"x"}}"#
            )
            .class,
            ErrorClass::ContextLength
        );
        assert_eq!(classify(503, "busy").class, ErrorClass::Transient);
        assert_eq!(
            classify(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .class,
            ErrorClass::Transient
        );
        assert_eq!(
            classify(400, r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#).class,
            ErrorClass::ContextLength
        );
        let gemini = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}"#;
        assert_eq!(classify(429, gemini).class, ErrorClass::RateLimited);
        assert_eq!(retry_delay_in_body(gemini), Some(Duration::from_secs(7)));
        assert_eq!(retry_delay_in_body("{}"), None);
        assert_eq!(
            classify(404, r#"{"error":"model not found"}"#).message,
            "HTTP 404: model not found"
        );
    }
}
