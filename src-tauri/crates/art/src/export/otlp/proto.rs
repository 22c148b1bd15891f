//! The same spans as OTLP protobuf: what collectors take over OTLP/HTTP (Phoenix takes
//! nothing else), and the `.pb` file, which is the collector's file exporter's proto
//! form — each `TracesData` after its length as 4 bytes, big-endian.
//!
//! A run's spans are written field by field straight into the output (the fields of
//! `opentelemetry-proto`'s messages, in tag order, proto3 defaults left out — the bytes
//! `prost` would write for the same message): building its owned structs first cost
//! more than the run's whole export. Each text is redacted as it is put in (the bytes
//! around it are binary).

use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint};

use super::Redactor;
use super::wire::{AnyValue, Event, KeyValue, Span};

/// `ExportTraceServiceRequest.resource_spans` (and `TracesData.resource_spans`): field 1.
const RESOURCE_SPANS_FIELD: u32 = 1;

/// Bytes of hex text as bytes (`"0aff"` → `[0x0a, 0xff]`), appended to `out`; ids are
/// ours, made of hex digits, so anything else reads as zero.
fn unhex_into(hex: &[u8], out: &mut Vec<u8>) {
    let digit = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    };
    out.extend(
        hex.chunks(2)
            .map(|pair| (digit(pair[0]) << 4) | pair.get(1).map_or(0, |&c| digit(c))),
    );
}

/// Unix ms as Unix ns (a time before 1970 reads as 0, as in the JSON).
fn nanos(ms: i64) -> u64 {
    u64::try_from(ms.max(0).saturating_mul(1_000_000)).unwrap_or(0)
}

/// A message field `tag` whose body `body` writes: the body goes in place and its
/// length before it once known (one byte kept for it; moved over when it needs more).
fn message(out: &mut Vec<u8>, tag: u32, body: impl FnOnce(&mut Vec<u8>)) {
    encode_key(tag, WireType::LengthDelimited, out);
    let at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(5);
        encode_varint(len as u64, &mut prefix);
        out.splice(at..=at, prefix);
    }
}

/// A `string` or `bytes` field (left out when empty, as proto3 does).
fn bytes(out: &mut Vec<u8>, tag: u32, value: &[u8]) {
    if !value.is_empty() {
        always_bytes(out, tag, value);
    }
}

/// A `string` or `bytes` field written even when empty (a `oneof` member).
fn always_bytes(out: &mut Vec<u8>, tag: u32, value: &[u8]) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(value.len() as u64, out);
    out.extend_from_slice(value);
}

/// A varint field (`int64`, `bool`, an enum), left out when zero.
fn varint(out: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        encode_key(tag, WireType::Varint, out);
        encode_varint(value, out);
    }
}

/// A `fixed64` field, left out when zero.
fn fixed64(out: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        encode_key(tag, WireType::SixtyFourBit, out);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// A hex id as a `bytes` field.
fn id(out: &mut Vec<u8>, tag: u32, hex: &[u8]) {
    if !hex.is_empty() {
        encode_key(tag, WireType::LengthDelimited, out);
        encode_varint(hex.len().div_ceil(2) as u64, out);
        unhex_into(hex, out);
    }
}

/// `KeyValue` (key 1, value 2: `AnyValue`'s string 1, bool 2, int 3).
fn attribute(out: &mut Vec<u8>, tag: u32, kv: &KeyValue<'_>, redactor: &Redactor) {
    message(out, tag, |out| {
        bytes(out, 1, kv.key.as_bytes());
        message(out, 2, |out| match &kv.value {
            AnyValue::Str(s) => always_bytes(out, 1, redactor.apply(s).as_bytes()),
            AnyValue::Bool(b) => {
                encode_key(2, WireType::Varint, out);
                encode_varint(u64::from(*b), out);
            }
            AnyValue::Int(n) => {
                encode_key(3, WireType::Varint, out);
                encode_varint(i64::try_from(*n).unwrap_or(i64::MAX) as u64, out);
            }
        });
    });
}

/// A text attribute of ours (no redaction: the resource's names).
fn plain_attribute(out: &mut Vec<u8>, tag: u32, key: &str, value: &str) {
    message(out, tag, |out| {
        bytes(out, 1, key.as_bytes());
        message(out, 2, |out| always_bytes(out, 1, value.as_bytes()));
    });
}

/// `Span.Event` (time 1, name 2, attributes 3).
fn event(out: &mut Vec<u8>, e: &Event<'_>, redactor: &Redactor) {
    message(out, 11, |out| {
        fixed64(out, 1, nanos(e.time_ms));
        bytes(out, 2, e.name.as_bytes());
        for kv in &e.attributes {
            attribute(out, 3, kv, redactor);
        }
    });
}

/// `Span` (trace id 1, span id 2, parent 4, name 5, kind 6, start 7, end 8,
/// attributes 9, events 11, status 15: message 2, code 3).
fn span(out: &mut Vec<u8>, trace_hex: &[u8], s: &Span<'_>, redactor: &Redactor) {
    message(out, 2, |out| {
        id(out, 1, trace_hex);
        id(out, 2, &s.span_id);
        if let Some(parent) = &s.parent {
            id(out, 4, parent);
        }
        let name = format!("{}{}", s.name.0, s.name.1);
        bytes(out, 5, redactor.apply(&name).as_bytes());
        varint(out, 6, u64::from(s.kind));
        fixed64(out, 7, nanos(s.start_ms));
        fixed64(out, 8, nanos(s.end_ms));
        for kv in &s.attributes {
            attribute(out, 9, kv, redactor);
        }
        for e in &s.events {
            event(out, e, redactor);
        }
        message(out, 15, |out| {
            bytes(out, 2, redactor.apply(&s.status_message).as_bytes());
            varint(out, 3, u64::from(s.status_code));
        });
    });
}

/// Append one run's spans of trace `trace_hex`, with the resource and scope of
/// `version`, as one entry of `resource_spans` (field key, length, `ResourceSpans`):
/// as it stands a `TracesData` (or an `ExportTraceServiceRequest`) of that run.
pub(super) fn append_run(
    out: &mut Vec<u8>,
    trace_hex: &str,
    spans: &[Span<'_>],
    service: &str,
    version: &str,
    redactor: &Redactor,
) {
    message(out, RESOURCE_SPANS_FIELD, |out| {
        // resource 1: attributes 1.
        message(out, 1, |out| {
            plain_attribute(out, 1, "service.name", service);
            plain_attribute(out, 1, "service.version", version);
        });
        // scope_spans 2: scope 1 (name 1, version 2), spans 2.
        message(out, 2, |out| {
            message(out, 1, |out| {
                bytes(out, 1, b"art");
                bytes(out, 2, version.as_bytes());
            });
            for s in spans {
                span(out, trace_hex.as_bytes(), s, redactor);
            }
        });
    });
}

/// `resource` as one entry of `resource_spans` (its field key, length and bytes): a run
/// of such entries is, as it stands, an `ExportTraceServiceRequest` or a `TracesData`.
pub fn entry(resource: &ResourceSpans) -> Vec<u8> {
    let mut out = Vec::with_capacity(resource.encoded_len() + 8);
    prost::encoding::message::encode(RESOURCE_SPANS_FIELD, resource, &mut out);
    out
}

/// Append what `body` writes to a `.pb` file's bytes as one message: its length as 4
/// bytes, big-endian, then it.
pub(super) fn append_framed(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// The messages of a `.pb` export (each after its length as 4 bytes, big-endian).
pub fn unframe(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let Some(message) = rest.get(4..4 + len) else {
            break;
        };
        out.push(message);
        rest = &rest[4 + len..];
    }
    out
}

/// A binary span or trace id as OTLP/JSON and the trace tables write it: lowercase hex.
pub fn id_hex(id: &[u8]) -> String {
    use std::fmt::Write as _;
    id.iter()
        .fold(String::with_capacity(2 * id.len()), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

#[cfg(test)]
mod tests {
    use super::super::wire::{SPAN_KIND_CLIENT, STATUS_ERROR, boolean, hex_id, int, text};
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value;

    fn chat_span(status_message: &str) -> Span<'static> {
        Span {
            span_id: hex_id(&[0xab; 8]),
            parent: Some(hex_id(&[0x01; 8])),
            name: ("chat ", "llama"),
            kind: SPAN_KIND_CLIENT,
            start_ms: 1_700_000_000_000,
            end_ms: 1_700_000_000_005,
            attributes: vec![
                text("a", "key sk-secret-0123456789"),
                int("n", 7),
                int("zero", 0),
                boolean("no", false),
                text("empty", ""),
                // Long enough that its lengths take two bytes.
                text("long", "x".repeat(300)),
            ],
            events: vec![Event {
                time_ms: 1_700_000_000_001,
                name: "TOOL_CALL",
                attributes: vec![],
            }],
            status_code: STATUS_ERROR,
            status_message: status_message.to_owned().into(),
        }
    }

    #[test]
    fn spans_decode_as_the_collectors_request_with_secrets_replaced() {
        let redactor = Redactor::new(["sk-secret-0123456789".to_owned()]);
        let trace = "00112233445566778899aabbccddeeff";
        let mut one = Vec::new();
        append_run(
            &mut one,
            trace,
            &[chat_span("failed")],
            "svc",
            "1.2",
            &redactor,
        );
        // Two entries side by side are a request of two.
        let both = [one.as_slice(), one.as_slice()].concat();
        let request = ExportTraceServiceRequest::decode(both.as_slice()).unwrap();
        assert_eq!(request.resource_spans.len(), 2);
        let resource = &request.resource_spans[0];
        let service = &resource.resource.as_ref().unwrap().attributes[0];
        assert_eq!(service.key, "service.name");
        assert_eq!(
            resource.scope_spans[0].scope.as_ref().unwrap().version,
            "1.2"
        );
        let s = &resource.scope_spans[0].spans[0];
        assert_eq!(s.trace_id.len(), 16);
        assert_eq!(id_hex(&s.trace_id), trace);
        assert_eq!(s.span_id, [0xab; 8]);
        assert_eq!(s.parent_span_id, [0x01; 8]);
        assert_eq!(s.name, "chat llama");
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(s.end_time_unix_nano, 1_700_000_000_005_000_000);
        assert_eq!(s.events[0].name, "TOOL_CALL");
        assert_eq!(s.events[0].time_unix_nano, 1_700_000_000_001_000_000);
        let value = |i: usize| s.attributes[i].value.as_ref().unwrap().value.clone();
        assert_eq!(value(0), Some(Value::StringValue("key [REDACTED]".into())));
        assert_eq!(value(1), Some(Value::IntValue(7)));
        assert_eq!(value(2), Some(Value::IntValue(0)));
        assert_eq!(value(3), Some(Value::BoolValue(false)));
        assert_eq!(value(4), Some(Value::StringValue(String::new())));
        assert_eq!(value(5), Some(Value::StringValue("x".repeat(300))));
        let status = s.status.as_ref().unwrap();
        assert_eq!((status.code, status.message.as_str()), (2, "failed"));
    }

    #[test]
    fn the_bytes_are_those_prost_writes_for_the_same_message() {
        let redactor = Redactor::new(Vec::new());
        let trace = "00112233445566778899aabbccddeeff";
        // Many spans: the outer lengths take several bytes.
        let spans: Vec<Span<'_>> = (0..40).map(|_| chat_span("")).collect();
        let mut written = Vec::new();
        append_run(&mut written, trace, &spans, "svc", "1.2", &redactor);
        let decoded = ExportTraceServiceRequest::decode(written.as_slice()).unwrap();
        assert_eq!(decoded.resource_spans[0].scope_spans[0].spans.len(), 40);
        assert_eq!(decoded.encode_to_vec(), written);
        assert_eq!(entry(&decoded.resource_spans[0]), written);
    }
}
