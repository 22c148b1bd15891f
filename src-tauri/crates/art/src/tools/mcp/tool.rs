//! One tool of an MCP server, callable like a built-in.

use std::sync::Arc;
use std::time::Duration;

use art_types::ToolSchema;
use art_types::mcp::{McpOrigin, McpTransportKind};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, InputRequest, InputResponses, ProgressToken, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::{Value, json};

use super::asking::Asking;
use super::result;
use crate::tools::{ExecutionContext, ToolError, ToolExecutor};

/// A server's tool under its namespaced name.
pub struct McpTool {
    schema: ToolSchema,
    server: String,
    transport: McpTransportKind,
    remote_name: String,
    peer: Peer<RoleClient>,
    timeout: Duration,
    limit: usize,
    protocol_version: Option<String>,
    policy: art_types::approval::ToolPolicy,
    asking: Arc<Asking>,
}

impl McpTool {
    /// `remote_name` on `server` (reached through `peer` over `transport`), offered to
    /// the model as `schema`; a call may take `timeout`, the model reads at most
    /// `limit` characters of a result.
    pub(super) fn new(
        schema: ToolSchema,
        server: &str,
        transport: McpTransportKind,
        remote_name: &str,
        peer: Peer<RoleClient>,
        timeout: Duration,
        limit: usize,
    ) -> Self {
        Self {
            schema,
            server: server.to_owned(),
            transport,
            remote_name: remote_name.to_owned(),
            peer,
            timeout,
            limit,
            protocol_version: None,
            policy: art_types::approval::ToolPolicy::Ask,
            asking: Arc::default(),
        }
    }

    /// Its server's questions during a call go through `asking`.
    #[must_use]
    pub(super) fn with_asking(mut self, asking: Arc<Asking>) -> Self {
        self.asking = asking;
        self
    }

    /// Its server's policy for its tools.
    #[must_use]
    pub(super) fn with_policy(mut self, policy: art_types::approval::ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The protocol version agreed with its server, recorded with each call.
    #[must_use]
    pub(super) fn with_protocol_version(mut self, version: Option<String>) -> Self {
        self.protocol_version = version;
        self
    }

    /// A call that got no result, in plain words (what happened, not the SDK's types).
    fn call_failed(&self, error: &ServiceError) -> ToolError {
        let what = match error {
            ServiceError::TransportClosed => {
                "the server went away in the middle of the call (its connection closed)".to_owned()
            }
            ServiceError::TransportSend(e) if self.transport == McpTransportKind::Http => {
                let error = super::http::describe(&format!("`{}`", self.server), e);
                match (&error, error.hint()) {
                    (super::McpError::SignInNeeded { .. }, Some(hint)) => {
                        format!("{error}: {hint}")
                    }
                    _ => error.to_string(),
                }
            }
            ServiceError::TransportSend(_) => {
                "the server went away (its input closed): it may have crashed".to_owned()
            }
            ServiceError::McpError(data) => {
                format!("the server answered with an error: {}", data.message)
            }
            other => other.to_string(),
        };
        ToolError::new(
            "MCP_CALL_FAILED",
            format!(
                "`{}` on MCP server `{}` failed: {what}",
                self.remote_name, self.server
            ),
        )
    }

    /// What the model reads of `result` (a `tools/call` result as JSON): text, notes
    /// for images and audio, at most `limit` characters with a marker when cut.
    pub fn model_view(result: &Value, limit: usize) -> String {
        result::for_model(result, limit)
    }
}

/// Rounds of questions one call may take (MCP 2026-07-28 `input_required` results)
/// before it is given up.
const INPUT_ROUNDS: usize = 8;

/// What a call came to: its result, or what went wrong.
enum Called {
    Done(CallToolResult),
    Failed(ServiceError),
    /// The server asked for something this client does not give.
    Refused(String),
}

impl McpTool {
    /// `tools/call` with `params`, `sent` told each request's progress token. A result
    /// that asks for input (the 2026-07-28 revision's `input_required`: questions in
    /// the result instead of requests to the client) has its questions asked like any
    /// other of this server's — on the call's card — and the call sent again with the
    /// answers and the server's `requestState`, round after round.
    async fn call(
        &self,
        mut params: CallToolRequestParams,
        mut sent: impl FnMut(&ProgressToken),
    ) -> Called {
        for _ in 0..INPUT_ROUNDS {
            let answer = match send(&self.peer, params.clone(), &mut sent).await {
                Ok(answer) => answer,
                Err(e) => return Called::Failed(e),
            };
            let asks = match answer {
                ServerResult::CallToolResult(result) => return Called::Done(result),
                // `{}`: a result with nothing in it.
                ServerResult::EmptyResult(_) => {
                    return Called::Done(CallToolResult::success(Vec::new()));
                }
                ServerResult::InputRequiredResult(asks) => asks,
                _ => return Called::Failed(ServiceError::UnexpectedResponse),
            };
            let requests = asks.input_requests.unwrap_or_default();
            if requests.is_empty() && asks.request_state.is_none() {
                return Called::Failed(ServiceError::UnexpectedResponse);
            }
            let mut responses = InputResponses::new();
            for (key, request) in requests {
                let response = match request {
                    InputRequest::Elicitation(request) => {
                        let answer =
                            super::elicit::answer(&self.server, &self.asking, request.params).await;
                        serde_json::to_value(answer).unwrap_or_default()
                    }
                    // This client offers no roots: an empty list.
                    InputRequest::ListRoots(_) => json!({ "roots": [] }),
                    _ => {
                        return Called::Refused(
                            "it asked for a model's completion (sampling), which this app \
                             does not give servers"
                                .to_owned(),
                        );
                    }
                };
                responses.insert(key, response);
            }
            params.input_responses = (!responses.is_empty()).then_some(responses);
            params.request_state = asks.request_state;
        }
        Called::Refused(format!(
            "it still asked for input after {INPUT_ROUNDS} rounds of answers"
        ))
    }
}

/// One `tools/call` request on `peer`, `sent` told its progress token; dropped before
/// its answer (timeout, stopped run), it sends `notifications/cancelled`.
async fn send(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    sent: &mut impl FnMut(&ProgressToken),
) -> Result<ServerResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    sent(&handle.progress_token);
    let mut abandoned = Abandoned(Some((peer.clone(), handle.id.clone())));
    let answer = handle.await_response().await;
    abandoned.0 = None;
    answer
}

/// Tells the server a request was given up, unless disarmed (set to `None`).
struct Abandoned(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let notice = CancelledNotificationParam::new(
                Some(id),
                Some("the call was given up (timed out, or its run stopped)".to_owned()),
            );
            let _ = peer.notify_cancelled(notice).await;
        });
    }
}

#[async_trait::async_trait]
impl ToolExecutor for McpTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The result as the server sent it (`content`, `structuredContent`); a result
    /// with `isError` is a tool error whose message is what the server said. Dropping
    /// the call (timeout, stopped run) sends `notifications/cancelled`.
    async fn execute(
        &self,
        arguments: &Value,
        context: &ExecutionContext,
    ) -> Result<Value, ToolError> {
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        params.arguments = match arguments {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            _ => {
                return Err(ToolError::new(
                    "INVALID_TOOL_ARGUMENTS",
                    "MCP tools take an object of named arguments",
                ));
            }
        };
        // A question the server asks meanwhile belongs to this call, and so does the
        // progress it reports for this request.
        let in_flight = self.asking.enter(&self.server, &self.schema.name, context);
        let called = self
            .call(params, |token| in_flight.progress_token(token))
            .await;
        in_flight.settle().await;
        let outcome = match called {
            Called::Done(outcome) => outcome,
            Called::Failed(e) => return Err(self.call_failed(&e)),
            Called::Refused(why) => {
                return Err(ToolError::new(
                    "MCP_CALL_FAILED",
                    format!(
                        "`{}` on MCP server `{}` failed: {why}",
                        self.remote_name, self.server
                    ),
                ));
            }
        };
        let value =
            serde_json::to_value(&outcome).unwrap_or_else(|e| json!({ "error": e.to_string() }));
        if outcome.is_error == Some(true) {
            return Err(ToolError::new(
                "TOOL_REPORTED_ERROR",
                result::for_model(&value, self.limit),
            ));
        }
        Ok(value)
    }

    fn for_model(&self, output: &Value) -> Option<Value> {
        Some(Value::String(result::for_model(output, self.limit)))
    }

    fn default_policy(&self) -> art_types::approval::ToolPolicy {
        self.policy
    }

    fn origin(&self) -> Option<McpOrigin> {
        Some(McpOrigin {
            server: self.server.clone(),
            transport: self.transport,
            tool: self.remote_name.clone(),
            protocol_version: self.protocol_version.clone(),
        })
    }
}
