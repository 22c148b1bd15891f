//! Dropping a stream aborts the request, for every adapter: the fake server sees the
//! connection close under its next write, long before the reply would have ended.

use art_testkit::framework::adapters as wire;

use std::time::{Duration, Instant};

use art_testkit::fake::FakeServer;
use art_testkit::fake::scripts::{Protocol, text_reply};
use futures::StreamExt;
use wire::{adapter, fast, options, prompt};

#[tokio::test]
async fn dropping_the_stream_closes_the_connection_for_every_adapter() {
    let long_answer = "word ".repeat(200);
    for protocol in [
        Protocol::OpenAi,
        Protocol::Anthropic,
        Protocol::Gemini,
        Protocol::Ollama,
    ] {
        // 200 words, one 40-byte piece every 10 ms: about 10 s if read to the end.
        let reply = text_reply(protocol, &long_answer, 40).delayed(Duration::from_millis(10));
        let server = FakeServer::start(vec![reply]).await;
        let adapter = adapter(protocol, server.url(), fast());
        let mut stream = adapter
            .call(&prompt(), &options("m"))
            .await
            .expect("starts");
        assert!(stream.next().await.is_some(), "{protocol:?}: first event");
        let dropped = Instant::now();
        drop(stream);
        while server.abandoned() == 0 {
            assert!(
                dropped.elapsed() < Duration::from_secs(3),
                "{protocol:?}: the server never saw the close"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
