//! A stdio server's stdout, watched until the handshake is done: a line that is not a
//! JSON-RPC message (a banner, a usage text, a program that is not an MCP server at
//! all) is noticed as it arrives, so the server is reported with that line within
//! moments instead of after the whole handshake timeout.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::Notify;

/// How long a server that wrote something else may still complete the handshake (a
/// banner before the first message is tolerated, a program that never speaks MCP is not).
pub(super) const GRACE: Duration = Duration::from_secs(2);

/// Longest part of an offending line kept for the message, in bytes.
const KEPT: usize = 200;

/// What the watcher saw, shared with the handshake.
#[derive(Default)]
pub(super) struct Watch {
    /// The latest line that was not a message.
    garbage: Mutex<Option<String>>,
    noticed: Notify,
    /// Set once the handshake is done: the reader stops looking.
    done: AtomicBool,
}

impl Watch {
    /// The handshake is over; stop looking at the lines.
    pub(super) fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    /// Resolves with an offending line once the server has written one and then
    /// nothing else offending for [`GRACE`] (the handshake racing it wins if it can).
    pub(super) async fn not_mcp(&self) -> String {
        self.noticed.notified().await;
        loop {
            let seen = self.latest();
            tokio::select! {
                () = tokio::time::sleep(GRACE) => return seen.unwrap_or_default(),
                () = self.noticed.notified() => {}
            }
        }
    }

    fn latest(&self) -> Option<String> {
        self.garbage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn saw(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line).trim().to_owned();
        *self
            .garbage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(text);
        self.noticed.notify_one();
    }
}

/// Where the reader is within the current line.
enum Line {
    /// At its start (only blanks so far).
    Start,
    /// In a message (it began with `{`).
    Message,
    /// In something else; its first bytes.
    Other(Vec<u8>),
}

/// `inner` (the server's stdout), read through unchanged, with each line's first byte
/// looked at until [`Watch::stop`].
pub(super) struct Watched<R> {
    inner: R,
    watch: Arc<Watch>,
    line: Line,
}

impl<R> Watched<R> {
    pub(super) fn new(inner: R, watch: Arc<Watch>) -> Self {
        Self {
            inner,
            watch,
            line: Line::Start,
        }
    }

    fn look(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.line = match (std::mem::replace(&mut self.line, Line::Start), b) {
                (Line::Other(line), b'\n') => {
                    self.watch.saw(&line);
                    Line::Start
                }
                (_, b'\n') => Line::Start,
                (Line::Start, b' ' | b'\t' | b'\r') => Line::Start,
                (Line::Start, b'{') => Line::Message,
                (Line::Start, b) => Line::Other(vec![b]),
                (Line::Other(mut line), b) => {
                    if line.len() < KEPT {
                        line.push(b);
                    }
                    Line::Other(line)
                }
                (Line::Message, _) => Line::Message,
            };
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && !this.watch.done.load(Ordering::Relaxed) {
            this.look(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_line_that_is_not_a_message_is_reported_after_the_grace() {
        let watch = Arc::new(Watch::default());
        let text: &[u8] = b"{\"jsonrpc\":\"2.0\"}\n  {\"id\":1}\nUsage: tool [OPTIONS]\r\n{}\n";
        let mut reader = Watched::new(text, Arc::clone(&watch));
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, text, "read through unchanged");
        assert_eq!(watch.not_mcp().await, "Usage: tool [OPTIONS]");
    }

    #[tokio::test(start_paused = true)]
    async fn messages_alone_are_never_reported_and_a_stopped_watch_looks_no_more() {
        let watch = Arc::new(Watch::default());
        let mut reader = Watched::new(&b"{\"a\":1}\n\n{\"b\":2}\n"[..], Arc::clone(&watch));
        reader.read_to_end(&mut Vec::new()).await.unwrap();
        assert_eq!(watch.latest(), None);
        watch.stop();
        let mut late = Watched::new(&b"garbage\n"[..], Arc::clone(&watch));
        late.read_to_end(&mut Vec::new()).await.unwrap();
        assert_eq!(watch.latest(), None);
    }
}
