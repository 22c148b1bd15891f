//! The redirect a sign-in ends with: a listener on 127.0.0.1 at a port of the system's
//! choosing (RFC 8252's loopback redirect for native apps), answering the browser with
//! a short page and handing the query of `/callback` to the sign-in. Anything else
//! that reaches the port (a favicon request, a stray connection) is answered 404 and
//! the wait goes on.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the authorization server sends the browser back to.
const PATH: &str = "/callback";

/// Longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

/// How long one connection may take to send its request.
const READ_LIMIT: Duration = Duration::from_secs(10);

/// A listener waiting for the browser to come back.
pub(super) struct Loopback {
    listener: TcpListener,
    port: u16,
}

/// What the browser brought back: the query of the redirect.
pub(super) struct Redirect {
    /// The whole redirect address as it reached us (`http://127.0.0.1:PORT/callback?…`).
    pub url: String,
}

impl Loopback {
    /// Listen on 127.0.0.1 at a free port.
    pub async fn open() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self { listener, port })
    }

    /// The redirect URI to register and send: `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Wait for the browser's request to the callback path; `page` makes the page shown
    /// to the user from the redirect (whether the sign-in went through is known only
    /// after the redirect is checked, so the page says what comes next, not the
    /// outcome).
    pub async fn wait(&self, page: &str) -> std::io::Result<Redirect> {
        // Each connection on its own: a browser may open one it sends nothing on (a
        // preconnect) before the one that carries the redirect.
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let (stream, _) = accepted?;
                    let page = page.to_owned();
                    connections.spawn(async move {
                        tokio::time::timeout(READ_LIMIT, serve(stream, &page)).await.ok().flatten()
                    });
                }
                Some(Ok(Some(target))) = connections.join_next(), if !connections.is_empty() => {
                    return Ok(Redirect {
                        url: format!("http://127.0.0.1:{}{target}", self.port),
                    });
                }
            }
        }
    }
}

/// Read one request: the callback's target (path and query) once the page is sent, or
/// `None` for anything else (answered 404).
async fn serve(mut stream: TcpStream, page: &str) -> Option<String> {
    let head = read_head(&mut stream).await.ok()?;
    let target = head.lines().next().and_then(|line| {
        let mut parts = line.split(' ');
        (parts.next() == Some("GET")).then(|| parts.next())?
    })?;
    if target == PATH || target.starts_with(&format!("{PATH}?")) {
        let _ = respond(&mut stream, "200 OK", page).await;
        Some(target.to_owned())
    } else {
        let _ = respond(&mut stream, "404 Not Found", "").await;
        None
    }
}

/// The request line and headers (up to the blank line).
async fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() + n > MAX_HEAD {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await
}

/// The page the browser shows once it is back: plain text in a minimal document.
pub(super) fn page(server: &str) -> String {
    let server: String = server
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    format!(
        "<!doctype html><meta charset=utf-8><title>ART Workbench</title>\
         <body style=\"font-family:sans-serif;margin:3em\"><h1>Back to ART Workbench</h1>\
         <p>The sign-in to <b>{server}</b> came back to the app, which finishes it now and \
         shows the result. You can close this tab.</p></body>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_callback_path_ends_the_wait() {
        let loopback = Loopback::open().await.unwrap();
        let uri = loopback.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let base = uri.trim_end_matches("/callback").to_owned();
        let client = reqwest::Client::new();
        let waiting = loopback.wait("<p>done</p>");
        let browsing = async {
            let stray = client
                .get(format!("{base}/favicon.ico"))
                .send()
                .await
                .unwrap();
            assert_eq!(stray.status(), 404);
            let back = client
                .get(format!("{uri}?code=abc&state=xyz"))
                .send()
                .await
                .unwrap();
            assert_eq!(back.status(), 200);
            assert_eq!(back.text().await.unwrap(), "<p>done</p>");
        };
        let (redirect, ()) = tokio::join!(waiting, browsing);
        assert_eq!(redirect.unwrap().url, format!("{uri}?code=abc&state=xyz"));
    }

    #[test]
    fn the_page_shows_only_a_server_name() {
        let page = page("<script>x</script>");
        assert!(!page.contains("<script>"));
    }
}
