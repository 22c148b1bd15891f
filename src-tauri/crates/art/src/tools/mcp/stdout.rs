//! A stdio server's stdout, watched until the handshake is done: a line that is not a
//! JSON-RPC message (a banner, a usage text, a program that is not an MCP server at
//! all) is noticed as it arrives, so the server is reported with that line within
//! moments instead of after the whole handshake timeout. For as long as the server
//! runs, each message line is also shown to [`TaskTools`] (which tools need tasks).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::Notify;

use super::tasks::TaskTools;

/// How long a server that wrote something else may still complete the handshake (a
/// banner before the first message is tolerated, a program that never speaks MCP is not).
pub(super) const GRACE: Duration = Duration::from_secs(2);

/// Longest part of an offending line kept for the message, in bytes.
const KEPT: usize = 200;

/// Longest message line kept whole for [`TaskTools`]: far more than any tool list; a
/// longer line (a large tool result) is passed through without a copy kept.
const LISTING_MAX: usize = 4 << 20;

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
/// looked at until [`Watch::stop`], and each line shown to `tasks`.
pub(super) struct Watched<R> {
    inner: R,
    watch: Arc<Watch>,
    line: Line,
    tasks: TaskTools,
    /// The current line so far, unless it grew past [`LISTING_MAX`].
    message: Vec<u8>,
    overlong: bool,
}

impl<R> Watched<R> {
    pub(super) fn new(inner: R, watch: Arc<Watch>, tasks: TaskTools) -> Self {
        Self {
            inner,
            watch,
            line: Line::Start,
            tasks,
            message: Vec::new(),
            overlong: false,
        }
    }

    /// Collect `bytes` into lines and show each whole one to `tasks`.
    fn collect(&mut self, mut bytes: &[u8]) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            self.keep(&bytes[..end]);
            if !self.overlong {
                self.tasks.read(&self.message);
            }
            self.overlong = false;
            self.message.clear();
            if self.message.capacity() > 1 << 16 {
                self.message = Vec::new();
            }
            bytes = &bytes[end + 1..];
        }
        self.keep(bytes);
    }

    fn keep(&mut self, part: &[u8]) {
        if self.overlong {
            return;
        }
        if self.message.len() + part.len() > LISTING_MAX {
            self.overlong = true;
            self.message = Vec::new();
        } else {
            self.message.extend_from_slice(part);
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
        if matches!(polled, Poll::Ready(Ok(()))) {
            let read = &buf.filled()[before..];
            if !this.watch.done.load(Ordering::Relaxed) {
                this.look(read);
            }
            this.collect(read);
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
        let mut reader = Watched::new(text, Arc::clone(&watch), TaskTools::default());
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, text, "read through unchanged");
        assert_eq!(watch.not_mcp().await, "Usage: tool [OPTIONS]");
    }

    #[tokio::test]
    async fn a_listing_read_in_small_pieces_reaches_the_task_tools() {
        let tasks = TaskTools::default();
        let text = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"slow","inputSchema":{},"execution":{"taskSupport":"required"}}]}}
{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
"#;
        let mut reader = Watched::new(&text[..], Arc::new(Watch::default()), tasks.clone());
        let mut piece = [0u8; 7];
        while reader.read(&mut piece).await.unwrap() > 0 {}
        assert!(tasks.required("slow"));
    }

    #[tokio::test(start_paused = true)]
    async fn messages_alone_are_never_reported_and_a_stopped_watch_looks_no_more() {
        let watch = Arc::new(Watch::default());
        let mut reader = Watched::new(
            &b"{\"a\":1}\n\n{\"b\":2}\n"[..],
            Arc::clone(&watch),
            TaskTools::default(),
        );
        reader.read_to_end(&mut Vec::new()).await.unwrap();
        assert_eq!(watch.latest(), None);
        watch.stop();
        let mut late = Watched::new(&b"garbage\n"[..], Arc::clone(&watch), TaskTools::default());
        late.read_to_end(&mut Vec::new()).await.unwrap();
        assert_eq!(watch.latest(), None);
    }
}
