//! Streamable HTTP servers: the session over our reqwest client, how often a dropped
//! event stream is resumed, and the SDK's transport errors told in plain words — what
//! happened and what to do, never the SDK's type names. The answers that come as event
//! streams (servers' default) are shown to [`TaskTools`] on their way to the SDK.

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use rmcp::transport::worker::WorkerQuitReason;
use rmcp::{RoleClient, ServiceExt};

use super::McpError;
use super::connection::Client;
use super::tasks::TaskTools;
use crate::secrets::Secret;

/// The SDK's error for a failed HTTP exchange over our client.
type HttpError = StreamableHttpError<reqwest::Error>;

/// Times a dropped event stream is resumed (after 250 ms, then 500 ms) before the
/// server is taken to be gone: the SDK's default resumes forever, so a server that died
/// mid-call was noticed only when the call timed out.
const RESUMES: usize = 2;

/// Open a streamable HTTP session with `headers` (marked sensitive) and shake hands;
/// with `auth` (a sign-in), every request carries its token, renewed before it expires
/// and once when the server refuses it.
pub(super) async fn connect(
    url: &str,
    headers: Vec<(String, Secret)>,
    auth: Option<AuthorizationManager>,
    asked: Option<ScopeAsked>,
    client: Client,
    tasks: TaskTools,
) -> Result<RunningService<RoleClient, Client>, McpError> {
    let invalid = |message: String| McpError::InvalidConfig {
        field: "headers",
        message,
    };
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("{name:?} is not a valid header name")))?;
        let mut value = reqwest::header::HeaderValue::from_str(value.expose())
            .map_err(|_| invalid(format!("the value of {name} is not a valid header value")))?;
        value.set_sensitive(true);
        custom.insert(header, value);
    }
    let http = crate::net::client_builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| McpError::Protocol(e.to_string()))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    let mut resume = ExponentialBackoff::default();
    resume.max_times = Some(RESUMES);
    resume.base_duration = Duration::from_millis(250);
    resume.max_delay = Some(Duration::from_secs(1));
    config.retry_config = Arc::new(resume);
    let tapped = Tapped { http, tasks, asked };
    let served = match auth {
        Some(manager) => {
            let signed = AuthClient::new(tapped, manager);
            client
                .serve(StreamableHttpClientTransport::with_client(signed, config))
                .await
        }
        None => {
            client
                .serve(StreamableHttpClientTransport::with_client(tapped, config))
                .await
        }
    };
    served.map_err(|e| describe(url, &e))
}

/// Our reqwest client as the SDK's HTTP client, with the event streams of answers
/// tapped for [`TaskTools`]. (An answer sent as plain JSON reaches us already decoded,
/// without the field: a task-only tool of such a server fails when called, with the
/// server's reason.)
#[derive(Clone)]
pub(super) struct Tapped {
    http: reqwest::Client,
    tasks: TaskTools,
    asked: Option<ScopeAsked>,
}

/// Told the scope a server asks for when it refuses a request for want of it (403
/// `insufficient_scope`): kept for the next sign-in to ask for.
pub(super) type ScopeAsked =
    Arc<dyn Fn(String) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

impl Tapped {
    /// `sent` as it came, the scope it asked for kept first when it was refused for
    /// one (before the caller hears of it: a CLI run may end right after).
    async fn noticed<T>(&self, sent: Result<T, HttpError>) -> Result<T, HttpError> {
        if let (Err(StreamableHttpError::InsufficientScope(refused)), Some(asked)) =
            (&sent, &self.asked)
            && let Some(scope) = &refused.required_scope
        {
            asked(scope.clone()).await;
        }
        sent
    }

    fn tap_events(&self, events: BoxedSseResponse) -> BoxedSseResponse {
        let tasks = self.tasks.clone();
        events
            .inspect(move |event| {
                if let Ok(Some(data)) = event.as_ref().map(|e| e.data.as_deref()) {
                    tasks.read(data.as_bytes());
                }
            })
            .boxed()
    }

    fn tap(&self, response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match response {
            StreamableHttpPostResponse::Sse(events, session) => {
                StreamableHttpPostResponse::Sse(self.tap_events(events), session)
            }
            other => other,
        }
    }
}

/// Each request as reqwest's client makes it (the SDK's limits kept), each answer tapped.
impl StreamableHttpClient for Tapped {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let sent = self.http.post_message(uri, message, session, auth, headers);
        Ok(self.tap(self.noticed(sent.await).await?))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_event: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let sent = self
            .http
            .post_message_with_max_sse_event_size(uri, message, session, auth, headers, max_event);
        Ok(self.tap(self.noticed(sent.await).await?))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let sent = self
            .http
            .post_message_with_response_limits(uri, message, session, auth, headers, limits);
        Ok(self.tap(self.noticed(sent.await).await?))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session: Arc<str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.http.delete_session(uri, session, auth, headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session: Option<Arc<str>>,
        last_event: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, HttpError> {
        let opened = self
            .http
            .get_stream(uri, session, last_event, auth, headers);
        Ok(self.tap_events(opened.await?))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session: Option<Arc<str>>,
        last_event: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_event: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        let opened = self
            .http
            .get_stream_with_max_sse_event_size(uri, session, last_event, auth, headers, max_event);
        Ok(self.tap_events(opened.await?))
    }
}

/// What a failed exchange with the server at `url` means for the user.
pub(super) fn describe(url: &str, error: &(dyn Error + 'static)) -> McpError {
    let mut cause: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(WorkerQuitReason::Fatal { error, .. }) =
            e.downcast_ref::<WorkerQuitReason<HttpError>>()
        {
            return classify(url, error);
        }
        if let Some(error) = e.downcast_ref::<HttpError>() {
            return classify(url, error);
        }
        if let Some(error) = e.downcast_ref::<reqwest::Error>() {
            return from_reqwest(url, error);
        }
        // The SDK wraps transport errors in fields it does not name as sources.
        cause = match e.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => {
                Some(error as &(dyn Error + 'static))
            }
            _ => match e.downcast_ref::<DynamicTransportError>() {
                Some(dynamic) => Some(dynamic.error.as_ref() as &(dyn Error + 'static)),
                None => e.source(),
            },
        };
    }
    // Not an HTTP failure the SDK typed: its innermost words, without type names.
    let mut last = error;
    while let Some(inner) = last.source() {
        last = inner;
    }
    McpError::Protocol(format!("{url}: {}", plain(&last.to_string())))
}

/// One of the SDK's HTTP errors.
fn classify(url: &str, error: &HttpError) -> McpError {
    let status = |status| McpError::HttpStatus {
        status,
        url: url.to_owned(),
    };
    match error {
        StreamableHttpError::AuthRequired(_) => McpError::SignInNeeded {
            url: url.to_owned(),
            reason: "asks to sign in".into(),
            scope: None,
        },
        StreamableHttpError::InsufficientScope(e) => McpError::SignInNeeded {
            url: url.to_owned(),
            reason: match &e.required_scope {
                Some(scope) => format!("asks for more access (scope {scope})"),
                None => "asks for more access".into(),
            },
            scope: e.required_scope.clone(),
        },
        StreamableHttpError::Auth(AuthError::AuthorizationRequired) => McpError::SignInNeeded {
            url: url.to_owned(),
            reason: "asks to sign in again: the sign-in expired and could not be renewed".into(),
            scope: None,
        },
        StreamableHttpError::Auth(e) => McpError::SignIn {
            url: url.to_owned(),
            reason: plain(&e.to_string()),
        },
        StreamableHttpError::HttpStatus(e) => status(e.status),
        StreamableHttpError::Client(e) => from_reqwest(url, e),
        StreamableHttpError::UnexpectedServerResponse(text) => match http_status(text) {
            Some(code) => status(code),
            None => McpError::Protocol(format!("{url} answered in a way MCP does not: {text}")),
        },
        StreamableHttpError::SessionExpired => McpError::Gone {
            url: url.to_owned(),
            reason: "it ended the session (HTTP 404)".into(),
        },
        StreamableHttpError::UnexpectedEndOfStream
        | StreamableHttpError::TransportChannelClosed
        | StreamableHttpError::Io(_)
        | StreamableHttpError::Sse(_) => McpError::Gone {
            url: url.to_owned(),
            reason: "the connection closed in the middle of an answer".into(),
        },
        other => McpError::Protocol(format!("{url}: {}", plain(&other.to_string()))),
    }
}

/// A request that did not get an HTTP answer (or got an error status).
fn from_reqwest(url: &str, error: &reqwest::Error) -> McpError {
    if let Some(status) = error.status() {
        return McpError::HttpStatus {
            status: status.as_u16(),
            url: url.to_owned(),
        };
    }
    let reason = if error.is_connect() {
        "nothing answers there (connection refused or no route)"
    } else if error.is_timeout() {
        "it did not answer in time"
    } else if error.is_body() || error.is_decode() {
        "the connection closed in the middle of an answer"
    } else {
        "the request failed"
    };
    McpError::Unreachable {
        url: url.to_owned(),
        reason: reason.to_owned(),
    }
}

/// `text` without Rust type paths (`Transport [rmcp::…<…>]`) in it.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The status in the SDK's words for a refused request (`HTTP 401 Unauthorized`,
/// `HTTP 500`): only a number right after `HTTP `, so a port in a URL
/// (`http://host:443/mcp`) or a number in the body is never taken for one.
fn http_status(text: &str) -> Option<u16> {
    text.split("HTTP ")
        .skip(1)
        .filter_map(|rest| rest.get(..3)?.parse::<u16>().ok())
        .find(|code| (400..600).contains(code))
}

#[cfg(test)]
mod tests {
    use super::{http_status, plain};

    #[test]
    fn only_a_status_after_http_counts() {
        assert_eq!(
            http_status("unexpected server response: HTTP 401 Unauthorized: {}"),
            Some(401)
        );
        assert_eq!(
            http_status("error: HTTP 500, when send initialize request"),
            Some(500)
        );
        let refused =
            "error sending request for url (http://127.0.0.1:443/mcp): connection refused";
        assert_eq!(http_status(refused), None);
        assert_eq!(http_status(r#"HTTP 200 OK: {"limit": 404}"#), None);
    }

    #[test]
    fn type_names_are_left_out() {
        assert_eq!(
            plain(
                "Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] error: Transport closed"
            ),
            "Transport error: Transport closed"
        );
    }
}
