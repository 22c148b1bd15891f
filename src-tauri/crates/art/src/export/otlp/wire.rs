//! The OTLP/JSON shapes this exporter writes (a subset of `TracesData`): camelCase
//! fields, hex ids, 64-bit integers as decimal strings, enums as integers.

use serde::Serialize;

pub(super) const SPAN_KIND_INTERNAL: i32 = 1;
pub(super) const SPAN_KIND_CLIENT: i32 = 3;
pub(super) const STATUS_UNSET: i32 = 0;
pub(super) const STATUS_ERROR: i32 = 2;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TracesData<'a> {
    pub(super) resource_spans: [ResourceSpans<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourceSpans<'a> {
    pub(super) resource: Resource,
    pub(super) scope_spans: [ScopeSpans<'a>; 1],
}

#[derive(Serialize)]
pub(super) struct Resource {
    pub(super) attributes: Vec<KeyValue>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ScopeSpans<'a> {
    pub(super) scope: InstrumentationScope,
    pub(super) spans: &'a [Span],
}

#[derive(Serialize)]
pub(super) struct InstrumentationScope {
    pub(super) name: &'static str,
    pub(super) version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Span {
    pub(super) trace_id: String,
    pub(super) span_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) parent_span_id: String,
    pub(super) name: String,
    pub(super) kind: i32,
    pub(super) start_time_unix_nano: String,
    pub(super) end_time_unix_nano: String,
    pub(super) attributes: Vec<KeyValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) events: Vec<Event>,
    pub(super) status: Status,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Event {
    pub(super) time_unix_nano: String,
    pub(super) name: String,
    pub(super) attributes: Vec<KeyValue>,
}

#[derive(Serialize)]
pub(super) struct Status {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(super) message: String,
    pub(super) code: i32,
}

#[derive(Serialize)]
pub(super) struct KeyValue {
    pub(super) key: &'static str,
    pub(super) value: AnyValue,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum AnyValue {
    StringValue(String),
    IntValue(String),
}

pub(super) fn text(key: &'static str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::StringValue(value.into()),
    }
}

pub(super) fn int(key: &'static str, value: u64) -> KeyValue {
    KeyValue {
        key,
        value: AnyValue::IntValue(value.to_string()),
    }
}
