//! Signing in to remote MCP servers: OAuth 2.1 as the MCP authorization specification
//! (2025-11-25, with the 2026-07-28 hardening) has a client do it, through the official
//! SDK's implementation.
//!
//! [`sign_in`]: the server's challenge (`WWW-Authenticate` on a 401, else the
//! well-known protected-resource metadata, RFC 9728) → its authorization server's
//! metadata (RFC 8414 or OpenID Connect discovery) → a client id (the user's, else a
//! Client ID Metadata Document where accepted, else Dynamic Client Registration) → the
//! authorization code with PKCE (S256) in the user's browser, back through a loopback
//! redirect → the token, with the `resource` (RFC 8707) and `iss` (RFC 9207) checks.
//! The tokens go to the OS keychain ([`keychain`]) and nowhere else; [`authorizer`]
//! gives a connection what it needs to send them, renew them before they expire, and
//! renew them once when the server refuses one.

mod keychain;
mod loopback;
mod revoke;

use std::sync::Arc;
use std::time::Duration;

use art_types::mcp::{McpAccount, McpOAuth};
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadataSource,
    AuthorizationRequest, AuthorizationSession, OAuthClientConfig,
};
use tokio_util::sync::CancellationToken;

use keychain::{Keychain, Saved};
pub(crate) use keychain::{account as session_account, client_secret_account};

use crate::secrets::{SecretError, SecretStore};

/// The name the app registers under.
const CLIENT_NAME: &str = "ART Workbench";

/// How long a sign-in waits for the browser to come back, unless told otherwise.
pub const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// How long discovery and token requests may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(20);

/// Why a sign-in did not complete. Nothing is kept from a sign-in that failed: a
/// previous sign-in stays as it was.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The server neither asks for sign-in nor publishes where to sign in.
    #[error("{url} does not ask for sign-in and publishes no sign-in metadata")]
    NotOffered {
        /// The server.
        url: String,
    },
    /// The server or its authorization server could not be reached or read.
    #[error("cannot find where to sign in to {url}: {reason}")]
    Discovery {
        /// The server.
        url: String,
        /// What went wrong, in plain words.
        reason: String,
    },
    /// The metadata does not describe this server (another resource, another
    /// origin): refused, as the specification requires.
    #[error("the sign-in metadata of {url} does not describe it: {reason}")]
    WrongResource {
        /// The server.
        url: String,
        /// What does not match.
        reason: String,
    },
    /// The authorization server lets no app register itself and no client id is set.
    #[error(
        "the authorization server does not let apps register themselves: set the client \
         id it gave you for this app (`art mcp add … --client-id`, or the server's form)"
    )]
    NoClientId,
    /// Registration was refused.
    #[error("registering with the authorization server failed: {0}")]
    Registration(String),
    /// The browser did not come back in time (closed, or the user gave up).
    #[error("the browser did not come back within {} min; sign in again when ready", .0.as_secs().div_ceil(60))]
    TimedOut(Duration),
    /// The sign-in was cancelled.
    #[error("the sign-in was cancelled")]
    Cancelled,
    /// The authorization server said no (the user denied access, a bad request).
    #[error("the authorization server refused: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// Its `error` code (`access_denied`, …).
        error: String,
        /// Its description, when it gave one.
        description: Option<String>,
    },
    /// A redirect that does not belong to this sign-in (its `state` differs):
    /// nothing from it is used.
    #[error(
        "the redirect does not belong to this sign-in (its state differs); nothing from it was used"
    )]
    StateMismatch,
    /// The redirect names another issuer than the authorization server signed in to
    /// (RFC 9207): a mix-up, refused.
    #[error(
        "the redirect came from another authorization server ({received}, not {expected}); refused"
    )]
    WrongIssuer {
        /// The issuer signed in to.
        expected: String,
        /// The one the redirect named (empty: none, where one was required).
        received: String,
    },
    /// The token endpoint did not give a token.
    #[error("the authorization server did not give a token: {0}")]
    Token(String),
    /// The keychain could not keep the sign-in.
    #[error("the sign-in could not be kept in the OS keychain: {0}")]
    Keychain(String),
    /// There is no keychain to keep a sign-in in (no Secret Service, locked, no D-Bus
    /// session): signing in is refused before the browser opens.
    #[error(
        "signing in needs the OS keychain, where the server's tokens are kept (never in a \
         file), and it is unavailable: {reason}. {hint}"
    )]
    KeychainNeeded {
        /// Why the keychain cannot be used.
        reason: String,
        /// What the user can do.
        hint: String,
    },
    /// Anything else the SDK reports.
    #[error("{0}")]
    Other(String),
}

/// What to sign in to.
pub struct SignIn<'a> {
    /// The server's name (its keychain entries).
    pub server: &'a str,
    /// Its endpoint.
    pub url: &'a str,
    /// What the user set up for it.
    pub oauth: &'a McpOAuth,
    /// A scope the server asked for beyond those granted (a 403's `insufficient_scope`).
    pub more_scope: Option<&'a str>,
}

/// Sign in to a server: `show` gets the address to open in the browser (open it, print
/// it), then the sign-in waits for the browser to come back — at most `wait`, or until
/// `cancel`. On success the new tokens replace any earlier ones in the keychain.
pub async fn sign_in(
    request: SignIn<'_>,
    secrets: Arc<dyn SecretStore>,
    show: impl FnOnce(&str),
    wait: Duration,
    cancel: CancellationToken,
) -> Result<McpAccount, SignInError> {
    let url = request.url;
    let keychain = Keychain::new(Arc::clone(&secrets), request.server);
    // The sign-in is kept in the keychain: without one, say so before the browser opens.
    let before = keychain.read_for_or_why(url).await.map_err(|e| match e {
        SecretError::Unavailable { reason, hint } => SignInError::KeychainNeeded { reason, hint },
        other => SignInError::Keychain(other.to_string()),
    })?;
    let challenge = challenge(url).await?;

    let mut manager = AuthorizationManager::new_allowing_private_addresses(url)
        .await
        .map_err(|e| discovery(url, e))?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| discovery(url, e))?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback
        && challenge.is_none()
    {
        return Err(SignInError::NotOffered { url: url.into() });
    }
    let metadata = resolution.metadata;
    manager.set_metadata(metadata.clone());
    manager.set_credential_store(keychain.clone());

    let more_scope = request.more_scope.or(before.more_scope.as_deref());
    let granted: Vec<String> = before
        .credentials
        .as_ref()
        .map(|c| c.granted_scopes.clone())
        .unwrap_or_default();
    let scopes = if request.oauth.scopes.is_empty() {
        let asked = granted
            .iter()
            .map(String::as_str)
            .chain(more_scope)
            .collect::<Vec<_>>()
            .join(" ");
        manager.select_scopes((!asked.is_empty()).then_some(asked.as_str()), &[])
    } else {
        let mut scopes = request.oauth.scopes.clone();
        scopes.extend(more_scope.map(str::to_owned));
        scopes
    };

    let loopback = loopback::Loopback::open()
        .await
        .map_err(|e| SignInError::Other(format!("cannot listen for the browser's return: {e}")))?;
    let redirect_uri = loopback.redirect_uri();
    let mut authorization = AuthorizationRequest::new(&redirect_uri).with_scopes(scopes.clone());
    let mut issued_secret = None;
    let supports_cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if let Some(client_id) = &request.oauth.client_id {
        authorization = authorization.with_preregistered_client(client_id);
        if request.oauth.client_secret {
            let account = client_secret_account(request.server);
            let secret = tokio::task::spawn_blocking(move || secrets.get(&account))
                .await
                .map_err(|e| SignInError::Keychain(e.to_string()))?
                .map_err(|e| SignInError::Keychain(e.to_string()))?;
            if let Some(secret) = secret {
                authorization = authorization.with_client_secret(secret.expose());
            }
        }
    } else if let Some(document) = request
        .oauth
        .client_metadata_url
        .as_deref()
        .filter(|_| supports_cimd)
    {
        authorization = authorization.with_client_metadata_url(document);
    } else if metadata.registration_endpoint.is_some() {
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
            .await
            .map_err(|e| SignInError::Registration(plain(&e)))?;
        authorization = authorization.with_preregistered_client(&registered.client_id);
        if let Some(secret) = &registered.client_secret {
            authorization = authorization.with_client_secret(secret);
        }
        issued_secret = registered.client_secret;
    } else {
        return Err(SignInError::NoClientId);
    }

    // Another server's sign-in under this name (its address changed) is not built on:
    // the tokens of this one replace it whole.
    if before.url.is_none() {
        keychain.remove().await.map_err(keychain_error)?;
    }
    let session = AuthorizationSession::new(manager, authorization)
        .await
        .map_err(|(_, e)| match e {
            AuthError::RegistrationFailed(reason) => SignInError::Registration(reason),
            other => SignInError::Other(plain(&other)),
        })?;
    let address = session.get_authorization_url().to_owned();
    let state = query(&address, "state")
        .ok_or_else(|| SignInError::Other("the authorization address has no state".into()))?;
    show(&address);

    let page = loopback::page(request.server);
    let back = tokio::select! {
        back = loopback.wait(&page) => back.map_err(|e| SignInError::Other(e.to_string()))?,
        () = tokio::time::sleep(wait) => return Err(SignInError::TimedOut(wait)),
        () = cancel.cancelled() => return Err(SignInError::Cancelled),
    };
    if let Some(error) = query(&back.url, "error") {
        return Err(SignInError::Refused {
            error,
            description: query(&back.url, "error_description"),
        });
    }
    if query(&back.url, "state").as_deref() != Some(state.as_str()) {
        return Err(SignInError::StateMismatch);
    }
    let callback = AuthorizationCallback::from_redirect_url(&back.url)
        .map_err(|e| SignInError::Other(plain(&e)))?;
    let exchange = session.handle_callback_with_issuer(
        &callback.code,
        &callback.csrf_token,
        callback.issuer.as_deref(),
    );
    tokio::time::timeout(REQUEST_LIMIT, exchange)
        .await
        .map_err(|_| SignInError::Token(format!("no answer within {} s", REQUEST_LIMIT.as_secs())))?
        .map_err(|e| match e {
            AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            } => SignInError::WrongIssuer {
                expected: expected_issuer,
                received: received_issuer,
            },
            AuthError::AuthorizationServerMissingIssuer { expected_issuer } => {
                SignInError::WrongIssuer {
                    expected: expected_issuer,
                    received: String::new(),
                }
            }
            AuthError::CredentialStoreError(e) => SignInError::Keychain(e),
            other => SignInError::Token(plain(&other)),
        })?;
    keychain
        .update(|saved| {
            saved.url = Some(url.to_owned());
            saved.more_scope = None;
            saved.metadata = Some(metadata);
            saved.client_secret = issued_secret;
        })
        .await
        .map_err(keychain_error)?;
    account(&keychain, url)
        .await
        .map_err(keychain_error)?
        .ok_or_else(|| SignInError::Token("no token was kept".into()))
}

/// Sign out of `server`: its tokens are revoked at the authorization server where it
/// says how (best effort), and the sign-in is forgotten (its tokens and registration; a client secret the
/// user gave stays with the server's settings).
pub async fn sign_out(secrets: Arc<dyn SecretStore>, server: &str) -> Result<(), SignInError> {
    let keychain = Keychain::new(secrets, server);
    // The authorization server is told first (best effort): the tokens stop working.
    if let Ok(saved) = keychain.read().await {
        match revoke::revoke(&saved).await {
            Ok(n) => tracing::info!(server, "signed out: {n} token(s) revoked"),
            Err(why) => tracing::info!(server, "signed out without revoking: {why}"),
        }
    }
    keychain.remove().await.map_err(keychain_error)
}

/// The account the app holds for `server`, if it is signed in (read from the keychain,
/// nothing sent).
pub async fn signed_in(
    secrets: Arc<dyn SecretStore>,
    server: &str,
    url: &str,
) -> Result<Option<McpAccount>, SignInError> {
    account(&Keychain::new(secrets, server), url)
        .await
        .map_err(keychain_error)
}

async fn account(keychain: &Keychain, url: &str) -> Result<Option<McpAccount>, AuthError> {
    let saved = keychain.read_for(url).await?;
    let Some(credentials) = saved.credentials else {
        return Ok(None);
    };
    let Some(token) = credentials.token_response.as_ref() else {
        return Ok(None);
    };
    use oauth2::TokenResponse as _;
    let expires_at = match (token.expires_in(), credentials.token_received_at) {
        (Some(lasts), Some(received)) => {
            Some((received.saturating_add(lasts.as_secs()) as i64).saturating_mul(1000))
        }
        _ => None,
    };
    let mut scopes = credentials.granted_scopes.clone();
    if scopes.is_empty()
        && let Some(granted) = token.scopes()
    {
        scopes = granted.iter().map(|s| s.to_string()).collect();
    }
    Ok(Some(McpAccount {
        issuer: credentials.issuer.clone(),
        client_id: credentials.client_id.clone(),
        scopes,
        expires_at,
        renewable: token.refresh_token().is_some(),
        more_scope: saved.more_scope.clone(),
    }))
}

/// The secrets of `server`'s sign-in (access and refresh tokens, a registration's
/// client secret), whatever address it is for.
pub(crate) async fn secrets_of(secrets: Arc<dyn SecretStore>, server: &str) -> Vec<String> {
    use oauth2::TokenResponse as _;
    let Ok(saved) = Keychain::new(secrets, server).read().await else {
        return Vec::new();
    };
    let mut found: Vec<String> = saved.client_secret.into_iter().collect();
    if let Some(token) = saved.credentials.and_then(|c| c.token_response) {
        found.push(token.access_token().secret().clone());
        found.extend(token.refresh_token().map(|r| r.secret().clone()));
    }
    found
}

/// For a connection to `server`: an authorization manager holding its sign-in, when
/// there is one (`None`: requests go without a token, and a server that wants one
/// answers 401, which the caller reports as "sign in needed").
pub(crate) async fn authorizer(
    secrets: Arc<dyn SecretStore>,
    server: &str,
    url: &str,
    user_secret: Option<String>,
) -> Result<Option<AuthorizationManager>, AuthError> {
    let keychain = Keychain::new(secrets, server);
    let saved: Saved = match keychain.read_for_or_why(url).await {
        Ok(saved) => saved,
        // No keychain: nothing was signed in to, so requests go without a token (a
        // server that wants one answers 401: "sign in needed", and signing in says
        // the keychain is needed).
        Err(SecretError::Unavailable { reason, .. }) => {
            tracing::debug!(
                server,
                "not signed in: the OS keychain is unavailable ({reason})"
            );
            return Ok(None);
        }
        Err(other) => return Err(AuthError::CredentialStoreError(other.to_string())),
    };
    let signed_in = saved
        .credentials
        .as_ref()
        .is_some_and(|c| c.token_response.is_some());
    let Some(metadata) = saved.metadata.filter(|_| signed_in) else {
        return Ok(None);
    };
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url).await?;
    manager.set_metadata(metadata);
    manager.set_credential_store(keychain);
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    // The SDK keeps only the client id across restarts: the secret (from the
    // registration, or the user's) is given back so renewals authenticate.
    if let (Some(secret), Some(credentials)) =
        (saved.client_secret.or(user_secret), saved.credentials)
    {
        manager.configure_client(
            OAuthClientConfig::new(credentials.client_id, "http://127.0.0.1/callback")
                .with_client_secret(secret),
        )?;
    }
    Ok(Some(manager))
}

/// What keeps the scope `server` (at `url`) asks for in its sign-in's entry, for the
/// next sign-in (a request refused for want of it fails; the user signs in again).
pub(crate) fn scope_keeper(
    secrets: Arc<dyn SecretStore>,
    server: &str,
    url: &str,
) -> super::http::ScopeAsked {
    let keychain = Keychain::new(secrets, server);
    let url = url.to_owned();
    Arc::new(move |scope: String| {
        let (keychain, url) = (keychain.clone(), url.clone());
        Box::pin(async move {
            let kept = async {
                if keychain.read_for(&url).await?.url.is_some() {
                    keychain
                        .update(|saved| saved.more_scope = Some(scope))
                        .await?;
                }
                Ok::<(), AuthError>(())
            };
            if let Err(e) = kept.await {
                tracing::warn!("could not keep the scope the server asked for: {e}");
            }
        })
    })
}

/// The server's challenge: its `WWW-Authenticate` when an `initialize` without a token
/// is refused (401, or 403 for more scope); `None` when it answers.
async fn challenge(url: &str) -> Result<Option<String>, SignInError> {
    let http = crate::net::client_builder()
        .timeout(REQUEST_LIMIT)
        .build()
        .map_err(|e| SignInError::Other(e.to_string()))?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "art-workbench", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let answer = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .map_err(|e| SignInError::Discovery {
            url: url.into(),
            reason: if e.is_connect() {
                "nothing answers there".into()
            } else if e.is_timeout() {
                "it did not answer in time".into()
            } else {
                "the request failed".into()
            },
        })?;
    let refused = matches!(answer.status().as_u16(), 401 | 403);
    Ok(answer
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .filter(|_| refused)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned))
}

/// The value of `name` in `url`'s query.
fn query(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

fn discovery(url: &str, error: AuthError) -> SignInError {
    match error {
        AuthError::ProtectedResourceMetadataInvalid { reason, .. } => SignInError::WrongResource {
            url: url.into(),
            reason: reason.to_string(),
        },
        AuthError::NoAuthorizationSupport => SignInError::NotOffered { url: url.into() },
        other => SignInError::Discovery {
            url: url.into(),
            reason: plain(&other),
        },
    }
}

fn keychain_error(error: AuthError) -> SignInError {
    SignInError::Keychain(plain(&error))
}

/// The SDK's message with its causes, as one line.
fn plain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    text
}

/// Open `address` in the user's browser (`$BROWSER` when set, else the system's way),
/// or say why it could not be: the caller shows the address either way.
pub fn open_in_browser(address: &str) -> Result<(), String> {
    webbrowser::open(address).map_err(|e| format!("cannot open a browser: {e}"))
}
