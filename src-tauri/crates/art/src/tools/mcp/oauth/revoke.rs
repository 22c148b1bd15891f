//! Signing out tells the authorization server (RFC 7009): the refresh token, then the
//! access token, are revoked at the `revocation_endpoint` its metadata named at sign-in,
//! so a copy left anywhere stops working. Best effort, within a few seconds: the sign-in
//! leaves the keychain whatever the server says. Tokens go only to an `https` endpoint
//! (or `http` on this machine's loopback).

use std::time::Duration;

use oauth2::TokenResponse as _;

use super::keychain::Saved;

/// Longest wait for the revocation endpoint, per token.
const WAIT: Duration = Duration::from_secs(5);

/// Revoke the tokens of `saved` where its authorization server says: how many it took,
/// or why none was sent.
pub(super) async fn revoke(saved: &Saved) -> Result<usize, String> {
    let endpoint = saved
        .metadata
        .as_ref()
        .and_then(|m| m.additional_fields.get("revocation_endpoint"))
        .and_then(serde_json::Value::as_str)
        .ok_or("the authorization server names no revocation endpoint")?;
    if !safe(endpoint) {
        return Err(format!(
            "its revocation endpoint {endpoint} is neither https nor on this machine"
        ));
    }
    let Some(credentials) = &saved.credentials else {
        return Ok(0);
    };
    let Some(tokens) = &credentials.token_response else {
        return Ok(0);
    };
    let mut sent = Vec::new();
    if let Some(refresh) = tokens.refresh_token() {
        sent.push((refresh.secret().as_str(), "refresh_token"));
    }
    sent.push((tokens.access_token().secret().as_str(), "access_token"));
    let client = reqwest::Client::builder()
        .timeout(WAIT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let mut revoked = 0;
    for (token, hint) in sent {
        let mut form = vec![
            ("token", token),
            ("token_type_hint", hint),
            ("client_id", credentials.client_id.as_str()),
        ];
        if let Some(secret) = &saved.client_secret {
            form.push(("client_secret", secret.as_str()));
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&form)
            .finish();
        let answer = client
            .post(endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await;
        match answer {
            Ok(r) if r.status().is_success() => revoked += 1,
            Ok(r) => return Err(format!("{endpoint} answered {}", r.status())),
            Err(e) => {
                return Err(format!(
                    "{endpoint}: {}",
                    crate::secrets::scrub(&e.to_string())
                ));
            }
        }
    }
    Ok(revoked)
}

/// Whether tokens may go to `endpoint`: `https`, or `http` on the loopback.
fn safe(endpoint: &str) -> bool {
    let Ok(url) = url::Url::parse(endpoint) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(host)) => host == "localhost",
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_go_only_to_https_or_this_machine() {
        assert!(safe("https://auth.example.com/revoke"));
        assert!(safe("http://127.0.0.1:8080/revoke"));
        assert!(safe("http://localhost/revoke"));
        assert!(!safe("http://auth.example.com/revoke"));
        assert!(!safe("ftp://127.0.0.1/revoke"));
        assert!(!safe("not a url"));
    }
}
