//! An OAuth 2.1 authorization server and an MCP server it protects, in-tree, over real
//! TCP, for the faults the official conformance suite does not script: a sign-in
//! denied, a redirect with a forged `state` or another issuer, a token endpoint that
//! answers garbage, a refresh token revoked, access tokens that expire, metadata
//! naming another origin, an authorization server that is down, a browser that never
//! comes back. Its revocation endpoint (RFC 7009) records what a sign-out revokes. The two listen on ports of their own (the authorization server can go
//! down while the MCP server stays up). The MCP server answers `initialize`,
//! `tools/list` (one tool, `whoami`) and `tools/call` in plain JSON, only with a valid
//! access token.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use sha2::Digest as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the authorization server does wrong, switchable at any time.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The user denies access: the redirect carries `error=access_denied`.
    pub deny: bool,
    /// The redirect carries another `state` than the one sent.
    pub forged_state: bool,
    /// The redirect names another issuer (`iss`) than the server's.
    pub other_issuer: bool,
    /// The authorization page never redirects (the user closed the browser).
    pub no_redirect: bool,
    /// The token endpoint answers with something that is not a token response.
    pub garbage_tokens: bool,
    /// Refresh tokens are refused (`invalid_grant`: revoked).
    pub revoked_refresh: bool,
    /// The protected-resource metadata names another resource than the MCP server.
    pub other_resource: bool,
    /// Lifetime of access tokens, in seconds (default one hour).
    pub lifetime_secs: Option<u64>,
}

#[derive(Default)]
struct State {
    faults: Faults,
    /// Codes issued: code → (PKCE challenge, scope).
    codes: HashMap<String, (String, String)>,
    /// Access tokens the MCP server takes.
    access: HashSet<String>,
    /// Refresh tokens the token endpoint takes.
    refresh: HashSet<String>,
    /// Every token issued (for checks that none leaked).
    issued: Vec<String>,
    /// `grant_type`s asked for at the token endpoint, in order.
    grants: Vec<String>,
    /// The `resource` parameter of each authorization request.
    resources: Vec<String>,
    /// Tokens revoked at the revocation endpoint (RFC 7009), with their client ids.
    revoked: Vec<(String, String)>,
    next: u64,
}

/// The pair of servers.
pub struct OAuthServers {
    mcp: SocketAddr,
    auth: SocketAddr,
    state: Arc<Mutex<State>>,
    auth_task: tokio::task::JoinHandle<()>,
    mcp_task: tokio::task::JoinHandle<()>,
}

impl Drop for OAuthServers {
    fn drop(&mut self) {
        self.auth_task.abort();
        self.mcp_task.abort();
    }
}

impl OAuthServers {
    /// Start both on 127.0.0.1.
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let mcp_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let auth_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (mcp, auth) = (
            mcp_listener.local_addr().unwrap(),
            auth_listener.local_addr().unwrap(),
        );
        let routes = Routes {
            mcp,
            auth,
            state: Arc::clone(&state),
        };
        let serve = |listener: TcpListener, routes: Routes, auth_side: bool| {
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let routes = routes.clone();
                    tokio::spawn(async move { routes.serve(stream, auth_side).await });
                }
            })
        };
        let auth_task = serve(auth_listener, routes.clone(), true);
        let mcp_task = serve(mcp_listener, routes, false);
        Self {
            mcp,
            auth,
            state,
            auth_task,
            mcp_task,
        }
    }

    /// The MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.mcp)
    }

    /// The authorization server's issuer.
    pub fn issuer(&self) -> String {
        format!("http://{}", self.auth)
    }

    /// Change what goes wrong.
    pub fn faults(&self, change: impl FnOnce(&mut Faults)) {
        change(&mut self.state.lock().unwrap().faults);
    }

    /// Make every access token issued so far invalid (as if it expired early).
    pub fn expire_access_tokens(&self) {
        self.state.lock().unwrap().access.clear();
    }

    /// Stop the authorization server (the MCP server stays up).
    pub fn stop_authorization_server(&self) {
        self.auth_task.abort();
    }

    /// Every token issued.
    pub fn issued(&self) -> Vec<String> {
        self.state.lock().unwrap().issued.clone()
    }

    /// The grant types asked for at the token endpoint, in order.
    pub fn grants(&self) -> Vec<String> {
        self.state.lock().unwrap().grants.clone()
    }

    /// The `resource` of each authorization request.
    pub fn resources(&self) -> Vec<String> {
        self.state.lock().unwrap().resources.clone()
    }

    /// The tokens revoked (RFC 7009), each with the client id that asked, in order.
    pub fn revoked(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().revoked.clone()
    }
}

/// A request as read.
struct Request {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

#[derive(Clone)]
struct Routes {
    mcp: SocketAddr,
    auth: SocketAddr,
    state: Arc<Mutex<State>>,
}

type Reply = (u16, Vec<(String, String)>, String);

fn json(status: u16, value: serde_json::Value) -> Reply {
    (
        status,
        vec![("Content-Type".into(), "application/json".into())],
        value.to_string(),
    )
}

impl Routes {
    async fn serve(self, mut stream: TcpStream, auth_side: bool) {
        let Some(request) = read(&mut stream).await else {
            return;
        };
        let (status, headers, body) = if auth_side {
            self.authorization(&request)
        } else {
            self.resource(&request)
        };
        let mut head = format!(
            "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(body.as_bytes()).await;
        let _ = stream.shutdown().await;
    }

    fn issuer(&self) -> String {
        format!("http://{}", self.auth)
    }

    fn metadata_url(&self) -> String {
        format!(
            "http://{}/.well-known/oauth-protected-resource/mcp",
            self.mcp
        )
    }

    /// The MCP server and its protected-resource metadata.
    fn resource(&self, request: &Request) -> Reply {
        if request
            .path
            .starts_with("/.well-known/oauth-protected-resource")
        {
            let other = self.state.lock().unwrap().faults.other_resource;
            let resource = if other {
                "http://elsewhere.invalid/mcp".to_owned()
            } else {
                format!("http://{}/mcp", self.mcp)
            };
            return json(
                200,
                serde_json::json!({
                    "resource": resource,
                    "authorization_servers": [self.issuer()],
                    "scopes_supported": ["tools"],
                }),
            );
        }
        if request.path != "/mcp" {
            return (404, Vec::new(), String::new());
        }
        if request.method != "POST" {
            return (405, Vec::new(), String::new());
        }
        let token = request
            .headers
            .get("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        let valid = token
            .as_ref()
            .is_some_and(|t| self.state.lock().unwrap().access.contains(t));
        if !valid {
            let challenge = format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{}\"",
                self.metadata_url()
            );
            return (
                401,
                vec![
                    ("WWW-Authenticate".into(), challenge),
                    ("Content-Type".into(), "application/json".into()),
                ],
                r#"{"error":"invalid_token"}"#.into(),
            );
        }
        let message: serde_json::Value =
            serde_json::from_slice(&request.body).unwrap_or(serde_json::Value::Null);
        let id = message.get("id").cloned();
        let method = message.get("method").and_then(|m| m.as_str()).unwrap_or("");
        let result = match method {
            "initialize" => serde_json::json!({
                "protocolVersion": message["params"]["protocolVersion"].clone(),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-test", "version": "1.0.0"},
            }),
            "tools/list" => serde_json::json!({"tools": [{
                "name": "whoami",
                "description": "Who the server takes the caller for.",
                "inputSchema": {"type": "object", "properties": {}},
            }]}),
            "tools/call" => serde_json::json!({
                "content": [{"type": "text", "text": "signed in as tester"}],
            }),
            _ if id.is_none() => return (202, Vec::new(), String::new()),
            other => {
                return json(
                    200,
                    serde_json::json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("no method {other}")}}),
                );
            }
        };
        json(
            200,
            serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    /// The authorization server: metadata, registration, the authorization page, the
    /// token endpoint.
    fn authorization(&self, request: &Request) -> Reply {
        let issuer = self.issuer();
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/.well-known/oauth-authorization-server") => json(
                200,
                serde_json::json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "registration_endpoint": format!("{issuer}/register"),
                    "revocation_endpoint": format!("{issuer}/revoke"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                    "scopes_supported": ["tools"],
                    "authorization_response_iss_parameter_supported": true,
                }),
            ),
            ("POST", "/register") => {
                let asked: serde_json::Value =
                    serde_json::from_slice(&request.body).unwrap_or_default();
                let mut state = self.state.lock().unwrap();
                state.next += 1;
                json(
                    201,
                    serde_json::json!({
                        "client_id": format!("client-{}", state.next),
                        "redirect_uris": asked["redirect_uris"].clone(),
                        "token_endpoint_auth_method": "none",
                    }),
                )
            }
            ("GET", "/authorize") => self.authorize(&request.query),
            ("POST", "/token") => self.token(&form(&request.body)),
            ("POST", "/revoke") => {
                // RFC 7009: the token stops working; 200 whether or not it was known.
                let form = form(&request.body);
                let token = form.get("token").cloned().unwrap_or_default();
                let client = form.get("client_id").cloned().unwrap_or_default();
                let mut state = self.state.lock().unwrap();
                state.access.remove(&token);
                state.refresh.remove(&token);
                state.revoked.push((token, client));
                (200, Vec::new(), String::new())
            }
            _ => (404, Vec::new(), String::new()),
        }
    }

    fn authorize(&self, query: &HashMap<String, String>) -> Reply {
        let mut state = self.state.lock().unwrap();
        let faults = state.faults.clone();
        if faults.no_redirect {
            return (200, Vec::new(), "<p>Sign in…</p>".into());
        }
        let (Some(redirect), Some(challenge)) =
            (query.get("redirect_uri"), query.get("code_challenge"))
        else {
            return (
                400,
                Vec::new(),
                "redirect_uri and code_challenge are required".into(),
            );
        };
        state
            .resources
            .push(query.get("resource").cloned().unwrap_or_default());
        let sent_state = query.get("state").cloned().unwrap_or_default();
        let returned_state = if faults.forged_state {
            "forged".to_owned()
        } else {
            sent_state
        };
        let issuer = if faults.other_issuer {
            "http://other-issuer.invalid".to_owned()
        } else {
            self.issuer()
        };
        let location = if faults.deny {
            format!(
                "{redirect}?error=access_denied&error_description=The+user+said+no&state={returned_state}&iss={}",
                encode(&issuer)
            )
        } else {
            state.next += 1;
            let code = format!("code-{}", state.next);
            let scope = query.get("scope").cloned().unwrap_or_default();
            state.codes.insert(code.clone(), (challenge.clone(), scope));
            format!(
                "{redirect}?code={code}&state={returned_state}&iss={}",
                encode(&issuer)
            )
        };
        (302, vec![("Location".into(), location)], String::new())
    }

    fn token(&self, form: &HashMap<String, String>) -> Reply {
        let mut state = self.state.lock().unwrap();
        let grant = form.get("grant_type").cloned().unwrap_or_default();
        state.grants.push(grant.clone());
        if state.faults.garbage_tokens {
            return (
                200,
                vec![("Content-Type".into(), "text/html".into())],
                "<html>Service temporarily unavailable</html>".into(),
            );
        }
        let scope = match grant.as_str() {
            "authorization_code" => {
                let code = form.get("code").cloned().unwrap_or_default();
                let Some((challenge, scope)) = state.codes.remove(&code) else {
                    return json(400, serde_json::json!({"error": "invalid_grant"}));
                };
                let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                let digest = sha2::Sha256::digest(verifier.as_bytes());
                let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
                if expected != challenge {
                    return json(
                        400,
                        serde_json::json!({"error": "invalid_grant", "error_description": "PKCE"}),
                    );
                }
                scope
            }
            "refresh_token" => {
                let token = form.get("refresh_token").cloned().unwrap_or_default();
                if state.faults.revoked_refresh || !state.refresh.remove(&token) {
                    return json(
                        400,
                        serde_json::json!({"error": "invalid_grant", "error_description": "revoked"}),
                    );
                }
                "tools".to_owned()
            }
            _ => return json(400, serde_json::json!({"error": "unsupported_grant_type"})),
        };
        state.next += 1;
        let (access, refresh) = (
            format!("at-secret-{}-{}", state.next, std::process::id()),
            format!("rt-secret-{}-{}", state.next, std::process::id()),
        );
        state.access.insert(access.clone());
        state.refresh.insert(refresh.clone());
        state.issued.extend([access.clone(), refresh.clone()]);
        let lifetime = state.faults.lifetime_secs.unwrap_or(3600);
        json(
            200,
            serde_json::json!({
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": lifetime,
                "refresh_token": refresh,
                "scope": scope,
            }),
        )
    }
}

/// Read one request (head and a `Content-Length` body).
async fn read(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path.to_owned(), form(query.as_bytes())),
        None => (target, HashMap::new()),
    };
    Some(Request {
        method,
        path,
        query,
        headers,
        body,
    })
}

/// `a=1&b=2` (URL-encoded) as a map.
fn form(body: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
