//! The OTLP/JSON this exporter writes (a subset of `TracesData`: camelCase fields, hex
//! ids, 64-bit integers as decimal strings, enums as integers), written by hand into one
//! reused buffer. The shapes are fixed, and writing borrowed text straight out is several
//! times cheaper than building owned structs for serde to walk.

use std::borrow::Cow;
use std::fmt::Write as _;

pub(super) const SPAN_KIND_INTERNAL: u8 = 1;
pub(super) const SPAN_KIND_CLIENT: u8 = 3;
pub(super) const STATUS_UNSET: u8 = 0;
pub(super) const STATUS_ERROR: u8 = 2;

/// An OTLP id as lowercase hex (16 bytes for a span id, 32 for a trace id).
pub(super) type SpanId = [u8; 16];

/// An attribute value.
#[derive(Debug, Clone)]
pub(super) enum AnyValue<'a> {
    /// `stringValue`.
    Str(Cow<'a, str>),
    /// `intValue` (a decimal string in OTLP/JSON).
    Int(u64),
    /// `boolValue`.
    Bool(bool),
}

/// One attribute.
#[derive(Debug)]
pub(super) struct KeyValue<'a> {
    /// Written as is: keys are ours and need no escaping.
    pub(super) key: &'static str,
    pub(super) value: AnyValue<'a>,
}

/// A text attribute.
pub(super) fn text<'a>(key: &'static str, value: impl Into<Cow<'a, str>>) -> KeyValue<'a> {
    KeyValue {
        key,
        value: AnyValue::Str(value.into()),
    }
}

/// An integer attribute.
pub(super) fn int(key: &'static str, value: u64) -> KeyValue<'static> {
    KeyValue {
        key,
        value: AnyValue::Int(value),
    }
}

/// A boolean attribute.
pub(super) fn boolean(key: &'static str, value: bool) -> KeyValue<'static> {
    KeyValue {
        key,
        value: AnyValue::Bool(value),
    }
}

/// A span event.
#[derive(Debug)]
pub(super) struct Event<'a> {
    pub(super) time_ms: i64,
    /// Written as is: an observation type's name.
    pub(super) name: &'static str,
    pub(super) attributes: Vec<KeyValue<'a>>,
}

/// A span, ready to write.
#[derive(Debug)]
pub(super) struct Span<'a> {
    pub(super) span_id: SpanId,
    pub(super) parent: Option<SpanId>,
    /// The name, as a fixed part and a variable part (`chat ` + model).
    pub(super) name: (&'static str, &'a str),
    pub(super) kind: u8,
    pub(super) start_ms: i64,
    pub(super) end_ms: i64,
    pub(super) attributes: Vec<KeyValue<'a>>,
    pub(super) events: Vec<Event<'a>>,
    pub(super) status_code: u8,
    pub(super) status_message: Cow<'a, str>,
}

/// Lines of the file, each a `TracesData` with one resource and one scope, gathered
/// until there are enough to write at once.
#[derive(Default)]
pub(super) struct Lines {
    buf: String,
}

impl Lines {
    /// The lines written so far.
    pub(super) fn text(&self) -> &str {
        &self.buf
    }

    /// Forget the lines written so far (keeping the memory).
    pub(super) fn clear(&mut self) {
        self.buf.clear();
    }

    /// Start a line with the resource and scope of `version`.
    pub(super) fn begin(&mut self, service: &str, version: &str) {
        self.buf
            .push_str(r#"{"resourceSpans":[{"resource":{"attributes":["#);
        self.attribute(&text("service.name", service));
        self.buf.push(',');
        self.attribute(&text("service.version", version));
        self.buf
            .push_str(r#"]},"scopeSpans":[{"scope":{"name":"art","version":"#);
        self.string(version);
        self.buf.push_str(r#"},"spans":["#);
    }

    /// Add a span of trace `trace_id` (hex); `first` when it is the line's first.
    pub(super) fn span(&mut self, trace_id: &str, span: &Span<'_>, first: bool) {
        if !first {
            self.buf.push(',');
        }
        self.buf.push_str(r#"{"traceId":""#);
        self.buf.push_str(trace_id);
        self.buf.push_str(r#"","spanId":""#);
        self.buf.push_str(hex(&span.span_id));
        if let Some(parent) = &span.parent {
            self.buf.push_str(r#"","parentSpanId":""#);
            self.buf.push_str(hex(parent));
        }
        self.buf.push_str(r#"","name":"#);
        self.string2(span.name.0, span.name.1);
        self.buf.push_str(r#","kind":"#);
        self.digit(span.kind);
        self.buf.push_str(r#","startTimeUnixNano":"#);
        self.nanos(span.start_ms);
        self.buf.push_str(r#","endTimeUnixNano":"#);
        self.nanos(span.end_ms);
        self.buf.push_str(r#","attributes":"#);
        self.attributes(&span.attributes);
        if !span.events.is_empty() {
            self.buf.push_str(r#","events":["#);
            for (i, event) in span.events.iter().enumerate() {
                if i > 0 {
                    self.buf.push(',');
                }
                self.buf.push_str(r#"{"timeUnixNano":"#);
                self.nanos(event.time_ms);
                self.buf.push_str(r#","name":""#);
                self.buf.push_str(event.name);
                self.buf.push('"');
                self.buf.push_str(r#","attributes":"#);
                self.attributes(&event.attributes);
                self.buf.push('}');
            }
            self.buf.push(']');
        }
        self.buf.push_str(r#","status":{"#);
        if !span.status_message.is_empty() {
            self.buf.push_str(r#""message":"#);
            self.string(&span.status_message);
            self.buf.push(',');
        }
        self.buf.push_str(r#""code":"#);
        self.digit(span.status_code);
        self.buf.push_str("}}");
    }

    /// Close the line.
    pub(super) fn end(&mut self) {
        self.buf.push_str("]}]}]}\n");
    }

    fn attributes(&mut self, attributes: &[KeyValue<'_>]) {
        self.buf.push('[');
        for (i, kv) in attributes.iter().enumerate() {
            if i > 0 {
                self.buf.push(',');
            }
            self.attribute(kv);
        }
        self.buf.push(']');
    }

    fn attribute(&mut self, kv: &KeyValue<'_>) {
        self.buf.push_str(r#"{"key":""#);
        self.buf.push_str(kv.key);
        match &kv.value {
            AnyValue::Str(s) => {
                self.buf.push_str(r#"","value":{"stringValue":"#);
                self.string(s);
            }
            AnyValue::Int(n) => {
                self.buf.push_str(r#"","value":{"intValue":""#);
                self.buf.push_str(itoa::Buffer::new().format(*n));
                self.buf.push('"');
            }
            AnyValue::Bool(b) => {
                self.buf.push_str(r#"","value":{"boolValue":"#);
                self.buf.push_str(if *b { "true" } else { "false" });
            }
        }
        self.buf.push_str("}}");
    }

    /// An enum value (0–9).
    fn digit(&mut self, n: u8) {
        self.buf.push(char::from(b'0' + n.min(9)));
    }

    /// Unix ms as a decimal string of nanoseconds.
    fn nanos(&mut self, ms: i64) {
        let nanos = ms.max(0).saturating_mul(1_000_000);
        self.buf.push('"');
        self.buf.push_str(itoa::Buffer::new().format(nanos));
        self.buf.push('"');
    }

    fn string(&mut self, text: &str) {
        self.string2(text, "");
    }

    /// `a` and `b` as one JSON string.
    fn string2(&mut self, a: &str, b: &str) {
        self.buf.push('"');
        escape_into(&mut self.buf, a);
        escape_into(&mut self.buf, b);
        self.buf.push('"');
    }
}

/// Whether `b` must be escaped in a JSON string.
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Append `text` escaped for a JSON string (quotes not included).
fn escape_into(out: &mut String, text: &str) {
    // Most text has nothing to escape: check it 16 bytes at a time (no early exit
    // inside a chunk, so the check vectorises).
    let clean = text
        .as_bytes()
        .chunks(16)
        .all(|chunk| !chunk.iter().fold(false, |any, b| any | needs_escape(*b)));
    if clean {
        out.push_str(text);
        return;
    }
    let needs = needs_escape;
    let mut plain = 0;
    for (i, b) in text.bytes().enumerate() {
        if !needs(b) {
            continue;
        }
        out.push_str(&text[plain..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            other => {
                let _ = write!(out, "\\u{other:04x}");
            }
        }
        plain = i + 1;
    }
    out.push_str(&text[plain..]);
}

/// An id's hex text.
fn hex(id: &[u8]) -> &str {
    // Ids are made by `hex_id` below: ASCII hex digits only.
    std::str::from_utf8(id).unwrap_or_default()
}

/// The first `N / 2` bytes of `digest` as `N` lowercase hex digits.
pub(super) fn hex_id<const N: usize>(digest: &[u8]) -> [u8; N] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'0'; N];
    for (i, b) in digest.iter().take(N / 2).enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0xf)];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_the_json_serde_would_read() {
        let mut line = Lines::default();
        line.begin("svc", "1.0");
        let span = Span {
            span_id: hex_id(&[0xab; 8]),
            parent: Some(hex_id(&[0x01; 8])),
            name: ("chat ", "llama \"3\""),
            kind: SPAN_KIND_CLIENT,
            start_ms: 1_700_000_000_000,
            end_ms: 1_700_000_000_005,
            attributes: vec![text("a", "x\n\u{1}y\\"), int("n", u64::MAX)],
            events: vec![Event {
                time_ms: -5,
                name: "TOOL_CALL",
                attributes: vec![],
            }],
            status_code: STATUS_ERROR,
            status_message: "failed".into(),
        };
        line.span("00ff", &span, true);
        line.end();
        let text = line.text().to_owned();
        assert!(text.ends_with('\n'));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let s = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(s["spanId"], "abababababababab");
        assert_eq!(s["parentSpanId"], "0101010101010101");
        assert_eq!(s["name"], "chat llama \"3\"");
        assert_eq!(s["startTimeUnixNano"], "1700000000000000000");
        assert_eq!(s["attributes"][0]["value"]["stringValue"], "x\n\u{1}y\\");
        assert_eq!(
            s["attributes"][1]["value"]["intValue"],
            u64::MAX.to_string()
        );
        assert_eq!(s["events"][0]["timeUnixNano"], "0");
        assert_eq!(
            s["status"],
            serde_json::json!({ "message": "failed", "code": 2 })
        );
        assert_eq!(
            v["resourceSpans"][0]["scopeSpans"][0]["scope"]["version"],
            "1.0"
        );
    }

    proptest::proptest! {
        /// Whatever text goes into a name or an attribute, the line is JSON that reads
        /// back to the same text.
        #[test]
        fn any_text_reads_back_the_same(name in "\\PC*", value in ".*", message in "[\\x00-\\x7f]*") {
            let mut lines = Lines::default();
            lines.begin("svc", "1");
            let span = Span {
                span_id: hex_id(&[1; 8]),
                parent: None,
                name: ("chat ", &name),
                kind: SPAN_KIND_CLIENT,
                start_ms: 0,
                end_ms: 1,
                attributes: vec![text("v", value.as_str())],
                events: Vec::new(),
                status_code: STATUS_ERROR,
                status_message: message.as_str().into(),
            };
            lines.span("ab", &span, true);
            lines.end();
            let v: serde_json::Value = serde_json::from_str(lines.text()).unwrap();
            let s = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
            let full_name = format!("chat {name}");
            proptest::prop_assert_eq!(s["name"].as_str(), Some(full_name.as_str()));
            proptest::prop_assert_eq!(s["attributes"][0]["value"]["stringValue"].as_str(), Some(value.as_str()));
            let want = if message.is_empty() { None } else { Some(message.as_str()) };
            proptest::prop_assert_eq!(s["status"]["message"].as_str(), want);
        }
    }
}
