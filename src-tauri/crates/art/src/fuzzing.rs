//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`; `cargo xtask fuzz`).
//! Each takes arbitrary bytes the way the app meets them — a provider's stream cut
//! anywhere, a model's planning output, a tool call's arguments — and must return
//! without panicking, whatever the input. A panic a third-party reader raises inside
//! [`crate::panics::catch`] is the app's refusal, not a crash: the entry points that reach
//! one let it pass ([`crate::panics::quiet_caught`]), so a run stops on real crashes only.

use std::sync::{Arc, LazyLock};

use art_types::StreamEventKind;
use futures::StreamExt;
use serde_json::Value;
use sse_stream::SseByteStream;

use crate::providers::sse::SseDecoder;
use crate::providers::{anthropic, gemini, ndjson::LineFramer, ollama, openai};
use crate::reasoning::{output_parser, think_tags};
use crate::tools::{ToolRegistry, calculator, current_time};

/// The SSE protocols.
#[derive(Debug, Clone, Copy)]
pub enum Sse {
    /// OpenAI Chat Completions (also DeepSeek, OpenRouter).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `streamGenerateContent`.
    Gemini,
}

/// The first byte of `bytes` as a piece size in `1..=max`, and the rest.
fn size_and_rest(bytes: &[u8], max: u8) -> (usize, &[u8]) {
    match bytes.split_first() {
        Some((first, rest)) => (usize::from(first % max) + 1, rest),
        None => (1, bytes),
    }
}

/// The rest of `bytes` in pieces of the size its first byte picks (1–64), like a
/// network that splits anywhere, inside UTF-8 characters too.
fn pieces(bytes: &[u8]) -> Vec<Vec<u8>> {
    let (size, rest) = size_and_rest(bytes, 64);
    rest.chunks(size).map(<[u8]>::to_vec).collect()
}

/// Frame `bytes` as Server-Sent Events and decode them with `protocol`'s decoder, as
/// the adapter does; returns the events.
pub fn sse(protocol: Sse, bytes: &[u8]) -> Vec<StreamEventKind> {
    let mut decoder: Box<dyn SseDecoder> = match protocol {
        Sse::OpenAi => Box::<openai::Decoder>::default(),
        Sse::Anthropic => Box::<anthropic::Decoder>::default(),
        Sse::Gemini => Box::<gemini::Decoder>::default(),
    };
    let chunks = pieces(bytes);
    let stream = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::from(c))),
    );
    let mut events = SseByteStream::new(stream);
    let mut out = Vec::new();
    futures::executor::block_on(async {
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => crate::providers::sse::dispatch(&mut *decoder, &event, &mut out),
                Err(_) => return,
            }
        }
        out.extend(decoder.end_of_stream());
    });
    out
}

/// Frame `bytes` as NDJSON and decode each line as Ollama's chat stream.
pub fn ndjson(bytes: &[u8]) -> Vec<StreamEventKind> {
    let chunks = pieces(bytes);
    let mut framer = LineFramer::default();
    let mut calls = 0;
    let mut out = Vec::new();
    for chunk in chunks {
        framer.push_with(&chunk, |line| {
            ollama::decode_line(line, &mut calls, &mut out)
        });
    }
    framer.finish_with(|line| ollama::decode_line(line, &mut calls, &mut out));
    out
}

/// Parse `bytes` (lossily as text) as planning and as synthesis output.
pub fn output_parser(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let _ = output_parser::parse_planning(&text);
    let _ = output_parser::parse_synthesis(&text);
}

/// Split `bytes` (lossily as text) into thinking and answer, in pieces at character
/// boundaries, and all at once.
pub fn think_tags(bytes: &[u8]) {
    let (size, rest) = size_and_rest(bytes, 16);
    let text = String::from_utf8_lossy(rest);
    let mut matcher = think_tags::ThinkTagMatcher::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let _ = matcher.push(&text[start..end]);
        start = end;
    }
    let _ = matcher.finish();
    let _ = think_tags::split(&text);
}

/// Check `bytes` as a tool call's arguments (JSON, else a JSON string of the text)
/// against each built-in tool's schema, and run the calculator when they pass.
pub fn tool_arguments(bytes: &[u8]) {
    crate::panics::quiet_caught();
    let arguments: Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    // Built once: compiling the schemas is not what is being fuzzed.
    static REGISTRY: LazyLock<ToolRegistry> = LazyLock::new(|| {
        let registry = ToolRegistry::new();
        let _ = registry.register(Arc::new(calculator::CalculatorTool::default()));
        let _ = registry.register(Arc::new(current_time::CurrentTimeTool::default()));
        registry
    });
    for name in [calculator::NAME, current_time::NAME] {
        let valid = REGISTRY.check_arguments(name, &arguments).is_ok();
        if valid && name == calculator::NAME {
            let expression = arguments["expression"].as_str().unwrap_or_default();
            let _ = calculator::evaluate(expression, Some(1.0));
        }
    }
}

/// A PDF's text, as attaching one reads it: a refusal or text, never a panic.
pub fn pdf(bytes: &[u8]) {
    crate::panics::quiet_caught();
    use crate::attachments::{document, sniff::Format};
    let _ = document::extract("fuzz.pdf", Format::Pdf, bytes);
}

/// A Word document's text, as attaching one reads it (zip bombs bounded).
pub fn docx(bytes: &[u8]) {
    crate::panics::quiet_caught();
    use crate::attachments::{document, sniff::Format};
    let _ = document::extract("fuzz.docx", Format::Docx, bytes);
}

/// An image checked and, when needed, scaled as attaching one does; the name is the
/// first byte's pick, so the sniffer meets every claimed type.
pub fn image(bytes: &[u8]) {
    use crate::attachments::{image, sniff};
    let names = ["a.png", "a.jpg", "a.webp", "a.gif", "a.txt", "a"];
    let (pick, rest) = size_and_rest(bytes, names.len() as u8);
    if let Ok(format) = sniff::sniff(names[pick - 1], rest)
        && format.is_image()
    {
        let _ = image::inspect("fuzz", format, rest);
    }
}
