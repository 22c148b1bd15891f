//! The Rust clients of the streaming benchmark, each run as its own process
//! (`art-bench client <name> <url> <model> <tokens>`), each printing one [`Sample`] as JSON:
//!
//! - `art-openai` / `art-ollama`: our adapter alone, its event stream consumed and the
//!   text accumulated;
//! - `art-pipeline-openai` / `art-pipeline-ollama`: the whole headless pipeline: a PES run
//!   (planning call, then the synthesis stream) on a SQLite file with its observations
//!   and checkpoints, the stream socket, and the desktop bridge's token coalescer, its
//!   batches serialized as the bridge's events are;
//! - `async-openai`: the async-openai crate's chat stream, the same bare loop;
//! - (ollama-rs runs as a program of its own, `tests/bench/ollama-rs-peer`: its
//!   dependencies would change the main workspace's features);
//! - `floor-openai` / `floor-ollama`: a careful hand-written loop over reqwest's byte
//!   stream (split events, decode each delta's text borrowed from the input): the least a
//!   Rust client can spend per token, the floor the adapters are measured against.
//!
//! Each runs on the Tokio runtime the command line names (`current` or `multi`).

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use art::ArtInstance;
use art::agent::CancellationToken;
use art::providers::factory::{BuiltinFactory, builtin_entries};
use art::providers::http::HttpOptions;
use art::providers::manager::{ManagerOptions, ProviderManager};
use art::providers::ollama::OllamaAdapter;
use art::providers::openai::{OpenAiAdapter, OpenAiConfig};
use art::providers::options::BASE_URL;
use art::reasoning::provider::{CallOptions, CallStage, ProviderAdapter};
use art::secrets::{MemoryStore, Secret, SecretStore};
use art::sockets::All;
use art::sockets::coalesce::coalesce;
use art::storage::sqlite::SqliteStorage;
use art_types::{
    AgentProps, PromptMessage, PromptRole, ProviderConfig, StreamEventKind, ThreadConfig, TokenType,
};
use futures::StreamExt;
use serde_json::json;

/// The Rust clients, by name.
pub const RUST_CLIENTS: &[&str] = &[
    "art-openai",
    "art-pipeline-openai",
    "async-openai",
    "floor-openai",
    "art-ollama",
    "art-pipeline-ollama",
    "floor-ollama",
];

/// What one client reports about one stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Text deltas received.
    pub tokens: u64,
    /// Characters of text received.
    pub chars: u64,
    /// Wall time of the loop (request sent → last token), seconds.
    pub wall_s: f64,
    /// CPU time (user + system) of the client process during the loop, seconds.
    pub cpu_s: f64,
    /// Wall-clock time of the first token, nanoseconds since the Unix epoch.
    pub first_token_unix_ns: u128,
    /// CPU seconds spent before the first token, when the client's loop does more than
    /// stream (our pipeline: the planning call, the run's set-up, the provider's first
    /// use); `wall_s` and `cpu_s` then count from the first token on.
    pub setup_cpu_s: Option<f64>,
}

impl Sample {
    /// One JSON line, as every client (Rust, Node, Python) prints it.
    pub fn to_json(&self) -> String {
        json!({
            "tokens": self.tokens, "chars": self.chars, "wall_s": self.wall_s,
            "cpu_s": self.cpu_s, "first_token_unix_ns": self.first_token_unix_ns as f64,
            "setup_cpu_s": self.setup_cpu_s,
        })
        .to_string()
    }

    /// Read a client's JSON line.
    pub fn from_json(line: &str) -> Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_str(line.trim()).map_err(|e| format!("{e}: {line:?}"))?;
        let num = |k: &str| {
            v[k].as_f64()
                .ok_or_else(|| format!("no number {k:?} in {line:?}"))
        };
        Ok(Self {
            tokens: num("tokens")? as u64,
            chars: num("chars")? as u64,
            wall_s: num("wall_s")?,
            cpu_s: num("cpu_s")?,
            first_token_unix_ns: num("first_token_unix_ns")? as u128,
            setup_cpu_s: v["setup_cpu_s"].as_f64(),
        })
    }
}

/// CPU time (user + system) of this process so far, in seconds, from `getrusage`.
#[cfg(unix)]
pub(crate) fn cpu_seconds() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

/// The benchmarks measure on Linux: elsewhere CPU time is not read (NaN, so no figure
/// passes for a measurement).
#[cfg(not(unix))]
pub(crate) fn cpu_seconds() -> f64 {
    f64::NAN
}

/// Times one loop: started before the request, fed each text delta, finished after the last.
struct Meter {
    wall: Instant,
    cpu: f64,
    tokens: u64,
    chars: u64,
    first: Option<SystemTime>,
    /// Monotonic and CPU time at the first token.
    at_first: Option<(Instant, f64)>,
}

impl Meter {
    fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: cpu_seconds(),
            tokens: 0,
            chars: 0,
            first: None,
            at_first: None,
        }
    }

    fn text(&mut self, text: &str) {
        if self.first.is_none() {
            self.first = Some(SystemTime::now());
            self.at_first = Some((Instant::now(), cpu_seconds()));
        }
        self.tokens += 1;
        self.chars += text.len() as u64;
    }

    fn finish(self) -> Sample {
        Sample {
            tokens: self.tokens,
            chars: self.chars,
            wall_s: self.wall.elapsed().as_secs_f64(),
            cpu_s: cpu_seconds() - self.cpu,
            first_token_unix_ns: self
                .first
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos()),
            setup_cpu_s: None,
        }
    }

    /// The sample from the first token on, with what came before as its set-up.
    fn finish_from_first_token(self) -> Sample {
        let (started_cpu, at_first) = (self.cpu, self.at_first);
        let mut sample = self.finish();
        if let Some((wall, cpu)) = at_first {
            let setup = cpu - started_cpu;
            sample.wall_s = wall.elapsed().as_secs_f64();
            sample.cpu_s -= setup;
            sample.setup_cpu_s = Some(setup);
        }
        sample
    }
}

/// Run client `name` against the server at `url` asking for `model`, which streams
/// `tokens` deltas.
pub async fn run(name: &str, url: &str, model: &str, tokens: usize) -> Result<Sample, String> {
    match name {
        "art-openai" => {
            let adapter = OpenAiAdapter::new(OpenAiConfig {
                name: "openai".into(),
                base_url: format!("{url}/v1"),
                api_key: Some(Secret::new("k")),
                extra_headers: Vec::new(),
                http: HttpOptions::default(),
            })
            .map_err(|e| e.to_string())?;
            adapter_alone(&adapter, model).await
        }
        "art-ollama" => {
            let adapter = OllamaAdapter::new(url, model, Default::default(), Default::default())
                .map_err(|e| e.to_string())?;
            adapter_alone(&adapter, model).await
        }
        "art-pipeline-openai" => pipeline("openai", &format!("{url}/v1"), model, tokens).await,
        "art-pipeline-ollama" => pipeline("ollama", url, model, tokens).await,
        "async-openai" => async_openai(url, model).await,
        "floor-openai" => floor(&format!("{url}/v1/chat/completions"), model, Wire::Sse).await,
        "floor-ollama" => floor(&format!("{url}/api/chat"), model, Wire::Ndjson).await,
        other => Err(format!(
            "unknown client {other:?}: choose from {}",
            RUST_CLIENTS.join(", ")
        )),
    }
}

async fn adapter_alone(adapter: &dyn ProviderAdapter, model: &str) -> Result<Sample, String> {
    let prompt = vec![PromptMessage::text(PromptRole::User, "Hi")];
    let options = CallOptions {
        thread_id: "t".into(),
        trace_id: "r".into(),
        stage: CallStage::Synthesis,
        model_id: model.into(),
        generation: Default::default(),
        tools: Vec::new(),
        response_schema: None,
    };
    let mut meter = Meter::start();
    let mut stream = adapter
        .call(&prompt, &options)
        .await
        .map_err(|e| e.to_string())?;
    while let Some(batch) = stream.next().await {
        match batch {
            StreamEventKind::Token { text, .. } => meter.text(&text),
            StreamEventKind::Error(e) => return Err(format!("{e:?}")),
            _ => {}
        }
    }
    Ok(meter.finish())
}

/// An instance on a new SQLite file in `dir`, with the built-in providers, `provider`
/// holding a key (the fake servers take any).
pub(crate) fn instance(provider: &str, dir: &std::path::Path) -> Result<ArtInstance, String> {
    let secrets = Arc::new(MemoryStore::new());
    secrets
        .set(provider, &Secret::new("k"))
        .map_err(|e| e.to_string())?;
    let providers = Arc::new(ProviderManager::new(
        builtin_entries(),
        Arc::new(BuiltinFactory::default()),
        secrets,
        ManagerOptions::default(),
    ));
    let storage = SqliteStorage::open(dir.join("art.sqlite3")).map_err(|e| e.to_string())?;
    ArtInstance::builder(Arc::new(storage), providers)
        .build()
        .map_err(|e| e.to_string())
}

/// A PES run on a fresh SQLite file, its stream coalesced as the desktop bridge does; the
/// server streams `tokens` deltas.
async fn pipeline(
    provider: &str,
    base_url: &str,
    model: &str,
    tokens: usize,
) -> Result<Sample, String> {
    let expected = crate::server::answer(tokens).len() as u64;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let art = instance(provider, dir.path())?;
    let thread = art
        .conversation
        .create_thread(None)
        .await
        .map_err(|e| e.to_string())?
        .thread_id;
    let mut provider_config = ProviderConfig {
        provider_name: provider.into(),
        model_id: model.into(),
        ..Default::default()
    };
    provider_config
        .adapter_options
        .insert(BASE_URL.into(), json!(base_url));
    let config = ThreadConfig {
        provider_config,
        ..Default::default()
    };
    art.state
        .set_thread_config(&thread, &config)
        .await
        .map_err(|e| e.to_string())?;

    // The bridge: batches of the answer's tokens, serialized as Tauri would send them.
    let meter = Arc::new(Mutex::new(Meter::start()));
    let sink = Arc::clone(&meter);
    let (done_tx, mut done_rx) = tokio::sync::watch::channel(0u64);
    let bridge = tokio::spawn(coalesce(art.sockets.stream.subscribe(All), move |batch| {
        let event = serde_json::to_string(&batch).unwrap_or_default();
        std::hint::black_box(event);
        let mut meter = sink.lock().unwrap_or_else(|p| p.into_inner());
        for e in &batch.events {
            if let StreamEventKind::Token {
                text,
                token_type: TokenType::FinalSynthesisLlmResponse,
            } = e
            {
                meter.text(text);
            }
        }
        let _ = done_tx.send(meter.chars);
    }));

    *meter.lock().unwrap_or_else(|p| p.into_inner()) = Meter::start();
    let props = AgentProps {
        query: "Hi".into(),
        thread_id: thread,
        trace_id: None,
        options: Default::default(),
        attachments: Vec::new(),
    };
    let out = art
        .process(props, CancellationToken::new())
        .await
        .map_err(|e| e.to_string())?;
    if out.response.content.len() as u64 != expected {
        return Err(format!(
            "the stored answer has {} characters, not {expected}",
            out.response.content.len()
        ));
    }
    // The last batch leaves the coalescer at most a frame after the run ends.
    done_rx
        .wait_for(|chars| *chars >= expected)
        .await
        .map_err(|_| "the bridge stopped before the last token".to_owned())?;
    let mut sample = {
        let mut meter = meter.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *meter, Meter::start()).finish_from_first_token()
    };
    bridge.abort();
    if sample.chars != expected {
        return Err(format!(
            "the bridge delivered {} characters, not {expected}",
            sample.chars
        ));
    }
    // The agent merges tokens that arrive together, so the bridge sees fewer, longer
    // tokens than the server sent; a token here is one of the server's deltas, as for
    // every other client.
    sample.tokens = tokens as u64;
    Ok(sample)
}

async fn async_openai(url: &str, model: &str) -> Result<Sample, String> {
    async_openai_chat(&async_openai_client(url), model, "Hi").await
}

/// An async-openai client of the OpenAI-compatible server at `url` (made once and kept,
/// as an application keeps its client).
pub(crate) fn async_openai_client(
    url: &str,
) -> async_openai::Client<async_openai::config::OpenAIConfig> {
    use async_openai::config::OpenAIConfig;
    async_openai::Client::with_config(
        OpenAIConfig::new()
            .with_api_base(format!("{url}/v1"))
            .with_api_key("k"),
    )
}

/// One streaming chat of `question` through `client`, every text delta metered.
pub(crate) async fn async_openai_chat(
    client: &async_openai::Client<async_openai::config::OpenAIConfig>,
    model: &str,
    question: &str,
) -> Result<Sample, String> {
    use async_openai::types::chat::{
        ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs,
    };
    let request = CreateChatCompletionRequestArgs::default()
        .model(model)
        .messages(vec![
            ChatCompletionRequestUserMessage::from(question).into(),
        ])
        .build()
        .map_err(|e| e.to_string())?;
    let mut meter = Meter::start();
    let mut stream = client
        .chat()
        .create_stream(request)
        .await
        .map_err(|e| e.to_string())?;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        if let Some(text) = chunk
            .choices
            .first()
            .and_then(|c| c.delta.content.as_deref())
            .filter(|t| !t.is_empty())
        {
            meter.text(text);
        }
    }
    Ok(meter.finish())
}

/// How a hand-written loop splits the body.
#[derive(Clone, Copy)]
enum Wire {
    /// SSE events (`data: …` blocks ending in a blank line).
    Sse,
    /// NDJSON lines.
    Ndjson,
}

/// The text of one event, borrowed from it (`None` for events without text).
fn delta_text(wire: Wire, event: &str) -> Result<Option<std::borrow::Cow<'_, str>>, String> {
    use serde::Deserialize;
    use std::borrow::Cow;
    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow)]
        content: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow)]
        delta: Delta<'a>,
    }
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow)]
        choices: Vec<Choice<'a>>,
    }
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        message: Delta<'a>,
    }
    let json = match wire {
        Wire::Sse => match event.strip_prefix("data: ") {
            Some("[DONE]") | None => return Ok(None),
            Some(json) => json,
        },
        Wire::Ndjson => event,
    };
    match wire {
        Wire::Sse => serde_json::from_str::<Chunk>(json)
            .map(|c| c.choices.into_iter().next().and_then(|c| c.delta.content)),
        Wire::Ndjson => serde_json::from_str::<Line>(json).map(|l| l.message.content),
    }
    .map_err(|e| format!("{e}: {json}"))
}

/// The practical floor: reqwest's byte stream split into events by hand, each event's text
/// decoded borrowed from the buffer, nothing else.
async fn floor(url: &str, model: &str, wire: Wire) -> Result<Sample, String> {
    let body = json!({ "model": model, "stream": true, "messages": [{ "role": "user", "content": "Hi" }] });
    let client = reqwest::Client::new();
    let mut meter = Meter::start();
    let response = client
        .post(url)
        .bearer_auth("k")
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let separator: &[u8] = match wire {
        Wire::Sse => b"\n\n",
        Wire::Ndjson => b"\n",
    };
    let mut bytes = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(piece) = bytes.next().await {
        buffer.extend_from_slice(&piece.map_err(|e| e.to_string())?);
        let mut start = 0;
        while let Some(end) = memchr::memmem::find(&buffer[start..], separator) {
            let event =
                std::str::from_utf8(&buffer[start..start + end]).map_err(|e| e.to_string())?;
            if let Some(text) = delta_text(wire, event)?.filter(|t| !t.is_empty()) {
                meter.text(&text);
            }
            start += end + separator.len();
        }
        buffer.drain(..start);
    }
    Ok(meter.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_through_their_json_line() {
        let sample = Sample {
            tokens: 3,
            chars: 11,
            wall_s: 0.5,
            cpu_s: 0.25,
            first_token_unix_ns: 1_763_900_000_123_456_000,
            setup_cpu_s: Some(0.125),
        };
        let back = Sample::from_json(&sample.to_json()).unwrap();
        assert_eq!((back.tokens, back.chars), (3, 11));
        assert_eq!((back.wall_s, back.cpu_s), (0.5, 0.25));
        // Nanoseconds travel as a double (as Node prints them): within a microsecond.
        assert!(
            back.first_token_unix_ns
                .abs_diff(sample.first_token_unix_ns)
                < 1_000
        );
        assert_eq!(back.setup_cpu_s, Some(0.125));
        assert!(Sample::from_json("{\"tokens\": 1}").is_err());
    }
}
