//! The same spans as OTLP protobuf, built as `opentelemetry-proto`'s messages and encoded
//! by `prost`: what collectors take over OTLP/HTTP (Phoenix takes nothing else), and the
//! `.pb` file, which is the collector's file exporter's proto form — each `TracesData`
//! after its length as 4 bytes, big-endian.
//!
//! The JSON writer redacts whole lines; here each text is redacted as it is put in (the
//! bytes around it are binary).

use opentelemetry_proto::tonic::common::v1::{
    AnyValue as PbAny, InstrumentationScope, KeyValue as PbKeyValue, any_value::Value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::Event as PbEvent;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as PbSpan, Status};
use prost::Message;

use super::Redactor;
use super::wire::{AnyValue, Event, KeyValue, Span};

/// `ExportTraceServiceRequest.resource_spans` (and `TracesData.resource_spans`): field 1.
const RESOURCE_SPANS_FIELD: u32 = 1;

/// Bytes of hex text as bytes (`"0aff"` → `[0x0a, 0xff]`); ids are ours, made of hex
/// digits, so anything else reads as zero.
fn unhex(hex: &[u8]) -> Vec<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    };
    hex.chunks(2)
        .map(|pair| (digit(pair[0]) << 4) | pair.get(1).map_or(0, |&c| digit(c)))
        .collect()
}

/// Unix ms as Unix ns (a time before 1970 reads as 0, as in the JSON).
fn nanos(ms: i64) -> u64 {
    u64::try_from(ms.max(0).saturating_mul(1_000_000)).unwrap_or(0)
}

fn attribute(kv: &KeyValue<'_>, redactor: &Redactor) -> PbKeyValue {
    let value = match &kv.value {
        AnyValue::Str(s) => Value::StringValue(redactor.apply(s).into_owned()),
        AnyValue::Int(n) => Value::IntValue(i64::try_from(*n).unwrap_or(i64::MAX)),
        AnyValue::Bool(b) => Value::BoolValue(*b),
    };
    PbKeyValue {
        key: kv.key.to_owned(),
        value: Some(PbAny { value: Some(value) }),
        ..PbKeyValue::default()
    }
}

fn attributes(list: &[KeyValue<'_>], redactor: &Redactor) -> Vec<PbKeyValue> {
    list.iter().map(|kv| attribute(kv, redactor)).collect()
}

fn event(e: &Event<'_>, redactor: &Redactor) -> PbEvent {
    PbEvent {
        time_unix_nano: nanos(e.time_ms),
        name: e.name.to_owned(),
        attributes: attributes(&e.attributes, redactor),
        dropped_attributes_count: 0,
    }
}

fn span(trace_id: &[u8], s: &Span<'_>, redactor: &Redactor) -> PbSpan {
    PbSpan {
        trace_id: trace_id.to_vec(),
        span_id: unhex(&s.span_id),
        parent_span_id: s.parent.as_ref().map(|p| unhex(p)).unwrap_or_default(),
        name: redactor
            .apply(&format!("{}{}", s.name.0, s.name.1))
            .into_owned(),
        kind: i32::from(s.kind),
        start_time_unix_nano: nanos(s.start_ms),
        end_time_unix_nano: nanos(s.end_ms),
        attributes: attributes(&s.attributes, redactor),
        events: s.events.iter().map(|e| event(e, redactor)).collect(),
        status: Some(Status {
            message: redactor.apply(&s.status_message).into_owned(),
            code: i32::from(s.status_code),
        }),
        ..PbSpan::default()
    }
}

/// One run's spans of trace `trace_hex` with the resource and scope of `version`.
pub(super) fn resource_spans(
    trace_hex: &str,
    spans: &[Span<'_>],
    service: &str,
    version: &str,
    redactor: &Redactor,
) -> ResourceSpans {
    let trace_id = unhex(trace_hex.as_bytes());
    let text = |key: &str, value: &str| PbKeyValue {
        key: key.to_owned(),
        value: Some(PbAny {
            value: Some(Value::StringValue(value.to_owned())),
        }),
        ..PbKeyValue::default()
    };
    ResourceSpans {
        resource: Some(Resource {
            attributes: vec![
                text("service.name", service),
                text("service.version", version),
            ],
            ..Resource::default()
        }),
        scope_spans: vec![ScopeSpans {
            scope: Some(InstrumentationScope {
                name: "art".to_owned(),
                version: version.to_owned(),
                ..InstrumentationScope::default()
            }),
            spans: spans.iter().map(|s| span(&trace_id, s, redactor)).collect(),
            schema_url: String::new(),
        }],
        schema_url: String::new(),
    }
}

/// `resource` as one entry of `resource_spans` (its field key, length and bytes): a run
/// of such entries is, as it stands, an `ExportTraceServiceRequest` or a `TracesData`.
pub fn entry(resource: &ResourceSpans) -> Vec<u8> {
    let mut out = Vec::with_capacity(resource.encoded_len() + 8);
    prost::encoding::message::encode(RESOURCE_SPANS_FIELD, resource, &mut out);
    out
}

/// Append `message` to a `.pb` file's bytes: its length as 4 bytes, big-endian, then it.
pub(super) fn append_framed(out: &mut Vec<u8>, message: &[u8]) {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
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
    use super::super::wire::{SPAN_KIND_CLIENT, STATUS_ERROR, hex_id, int, text};
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

    #[test]
    fn spans_decode_as_the_collectors_request_with_secrets_replaced() {
        let span = Span {
            span_id: hex_id(&[0xab; 8]),
            parent: Some(hex_id(&[0x01; 8])),
            name: ("chat ", "llama"),
            kind: SPAN_KIND_CLIENT,
            start_ms: 1_700_000_000_000,
            end_ms: 1_700_000_000_005,
            attributes: vec![text("a", "key sk-secret-0123456789"), int("n", 7)],
            events: vec![Event {
                time_ms: 1_700_000_000_001,
                name: "TOOL_CALL",
                attributes: vec![],
            }],
            status_code: STATUS_ERROR,
            status_message: "failed".into(),
        };
        let redactor = Redactor::new(["sk-secret-0123456789".to_owned()]);
        let trace = "00112233445566778899aabbccddeeff";
        let one = entry(&resource_spans(trace, &[span], "svc", "1.2", &redactor));
        // Two entries side by side are a request of two.
        let both = [one.as_slice(), one.as_slice()].concat();
        let request = ExportTraceServiceRequest::decode(both.as_slice()).unwrap();
        assert_eq!(request.resource_spans.len(), 2);
        let s = &request.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(s.trace_id, unhex(trace.as_bytes()));
        assert_eq!(s.trace_id.len(), 16);
        assert_eq!(s.span_id, [0xab; 8]);
        assert_eq!(s.parent_span_id, [0x01; 8]);
        assert_eq!(s.name, "chat llama");
        assert_eq!(s.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(s.events[0].name, "TOOL_CALL");
        let Some(Value::StringValue(a)) = &s.attributes[0].value.as_ref().unwrap().value else {
            panic!("a text attribute")
        };
        assert_eq!(a, "key [REDACTED]");
        assert_eq!(s.status.as_ref().unwrap().code, 2);
    }
}
