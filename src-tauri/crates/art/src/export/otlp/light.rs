//! Observations as the OTLP exporter reads them: only the fields spans need, decoded
//! straight from the stored JSON into a small struct that borrows its text from the
//! stored record (no `serde_json::Value` tree and almost no allocation per observation:
//! decoding and allocating were most of an export's time). A field of an unexpected type
//! reads as absent: a trace is still written.

use std::borrow::Cow;

use art_types::{ObservationType, Phase};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::observation::StoredObservation;
use crate::storage::{Collection, StorageError};

/// Text borrowed from the stored JSON (owned only when it had escapes).
pub(super) type Text<'a> = Option<Cow<'a, str>>;

/// Deserialize optional text borrowed where it can be (serde borrows a `Cow` only when
/// it is the field's own type, not inside an `Option`).
pub(super) fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'de>>::deserialize(d)?.map(|b| b.0))
}

/// Token counts and stop reason, where a content carries them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Usage<'a> {
    pub(super) input_tokens: Option<u64>,
    pub(super) cached_input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) stop_reason: Text<'a>,
    /// LLM_STREAM_END: the model that answered.
    #[serde(borrow, deserialize_with = "text")]
    pub(super) response_model: Text<'a>,
    /// FINAL_RESPONSE: `metadata.usage`.
    #[serde(borrow)]
    pub(super) usage: Option<Box<Usage<'a>>>,
}

/// The parts of a content the spans use.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Content<'a> {
    #[serde(borrow, deserialize_with = "text")]
    pub(super) tool_name: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) call_id: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) status: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) error: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) code: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) message: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) stage: Text<'a>,
    #[serde(borrow)]
    pub(super) arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(super) output: Option<&'a RawValue>,
    /// LLM_STREAM_START: what the call sent, as GenAI-convention messages
    /// ([`crate::observation::sent`]).
    #[serde(borrow)]
    pub(super) input: Option<&'a RawValue>,
    /// LLM_STREAM_METADATA carries usage at the top.
    pub(super) input_tokens: Option<u64>,
    pub(super) cached_input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) stop_reason: Text<'a>,
    /// LLM_STREAM_METADATA: the model that answered.
    #[serde(borrow, deserialize_with = "text")]
    pub(super) response_model: Text<'a>,
    /// LLM_STREAM_END: `metadata`; FINAL_RESPONSE: `metadata` (with `usage`).
    #[serde(borrow)]
    pub(super) metadata: Option<Usage<'a>>,
    /// APPROVAL: the decision and who took it.
    pub(super) approved: Option<bool>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) decided_by: Text<'a>,
    /// STEP: the step and its status.
    #[serde(borrow, deserialize_with = "text")]
    pub(super) step_id: Text<'a>,
}

/// Token counts and stop reason of a call or run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tokens<'a> {
    pub(super) input: Option<u64>,
    /// Of the input, read from the provider's prompt cache.
    pub(super) cached: Option<u64>,
    pub(super) output: Option<u64>,
    pub(super) stop: Option<&'a str>,
}

impl Usage<'_> {
    fn tokens(&self) -> Tokens<'_> {
        Tokens {
            input: self.input_tokens,
            cached: self.cached_input_tokens,
            output: self.output_tokens,
            stop: self.stop_reason.as_deref(),
        }
    }
}

/// The parts of an observation's metadata the spans use.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Meta<'a> {
    #[serde(borrow, deserialize_with = "text")]
    pub(super) provider: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) model: Text<'a>,
    #[serde(borrow, deserialize_with = "text")]
    pub(super) error_code: Text<'a>,
    pub(super) recoverable: Option<bool>,
    /// An MCP tool call's server (`art_types::mcp::ORIGIN_KEY`).
    pub(super) mcp: Option<art_types::mcp::McpOrigin>,
}

/// Span information (`art_types::SpanInfo`, borrowed).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SpanRef<'a> {
    pub(super) phase: Phase,
    #[serde(borrow)]
    pub(super) span_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "text")]
    pub(super) parent_span_id: Text<'a>,
    pub(super) start_ms: i64,
    #[serde(default)]
    pub(super) end_ms: Option<i64>,
}

/// `raw` as a `T`, or `T`'s default when it does not fit.
fn lenient<'a, T: Deserialize<'a> + Default>(raw: &'a RawValue) -> T {
    serde_json::from_str(raw.get()).unwrap_or_default()
}

/// An observation's body with its content and metadata typed: one pass over the JSON
/// when every field has the expected type (nearly always).
#[derive(Deserialize)]
struct TypedBody<'a> {
    #[serde(borrow)]
    title: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Content<'a>,
    #[serde(default, borrow)]
    metadata: Option<Meta<'a>>,
    #[serde(default, borrow)]
    span: Option<SpanRef<'a>>,
}

/// An observation's body with content and metadata as raw JSON, read on their own.
#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    title: Cow<'a, str>,
    #[serde(borrow)]
    content: &'a RawValue,
    #[serde(default, borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(default, borrow)]
    span: Option<SpanRef<'a>>,
}

/// An observation, light.
#[derive(Debug)]
pub(super) struct Obs<'a> {
    pub(super) id: &'a str,
    pub(super) timestamp: i64,
    pub(super) kind: ObservationType,
    pub(super) title: Cow<'a, str>,
    pub(super) span: Option<SpanRef<'a>>,
    pub(super) content: Content<'a>,
    pub(super) meta: Meta<'a>,
    /// The content as JSON text (kept only when content is exported).
    pub(super) raw: Option<&'a str>,
}

/// The run an observation belongs to, or why it has none.
pub(super) fn run_of(stored: &StoredObservation) -> Result<&str, StorageError> {
    let r = stored.record();
    r.trace_id
        .as_deref()
        .ok_or_else(|| corrupt(stored, "observation without a run".into()))
}

fn corrupt(stored: &StoredObservation, message: String) -> StorageError {
    StorageError::Corrupt {
        collection: Collection::Observations.as_str(),
        id: stored.record().id.clone(),
        message,
    }
}

impl<'a> Obs<'a> {
    /// Decode what the spans need; `raw` keeps the content's JSON text too.
    pub(super) fn decode(stored: &'a StoredObservation, raw: bool) -> Result<Self, StorageError> {
        let r = stored.record();
        let kind = r
            .kind
            .as_deref()
            .and_then(ObservationType::parse)
            .ok_or_else(|| corrupt(stored, "unknown observation type".into()))?;
        let light = |title, span, content, meta, raw| Self {
            id: &r.id,
            timestamp: r.timestamp,
            kind,
            title,
            span,
            content,
            meta,
            raw,
        };
        if !raw && let Ok(body) = serde_json::from_str::<TypedBody<'a>>(&r.body) {
            let meta = body.metadata.unwrap_or_default();
            return Ok(light(body.title, body.span, body.content, meta, None));
        }
        let body: Body<'a> =
            serde_json::from_str(&r.body).map_err(|e| corrupt(stored, e.to_string()))?;
        Ok(light(
            body.title,
            body.span,
            lenient(body.content),
            body.metadata.map(lenient).unwrap_or_default(),
            raw.then(|| body.content.get()),
        ))
    }

    /// Input / output tokens and stop reason of an LLM call, wherever its kind keeps
    /// them (top level for LLM_STREAM_METADATA, `metadata` for LLM_STREAM_END).
    pub(super) fn call_tokens(&self) -> Option<Tokens<'_>> {
        let c = &self.content;
        if c.input_tokens.is_some() || c.output_tokens.is_some() {
            return Some(Tokens {
                input: c.input_tokens,
                cached: c.cached_input_tokens,
                output: c.output_tokens,
                stop: c.stop_reason.as_deref(),
            });
        }
        c.metadata.as_ref().map(Usage::tokens)
    }

    /// The model that answered an LLM call, as its provider named it, wherever its kind
    /// keeps it (top level for LLM_STREAM_METADATA, `metadata` for LLM_STREAM_END).
    pub(super) fn response_model(&self) -> Option<&str> {
        let c = &self.content;
        c.response_model
            .as_deref()
            .or_else(|| c.metadata.as_ref()?.response_model.as_deref())
    }

    /// A run's token totals (FINAL_RESPONSE: `metadata.usage`).
    pub(super) fn run_tokens(&self) -> Option<Tokens<'_>> {
        let usage = self.content.metadata.as_ref()?.usage.as_deref()?;
        Some(usage.tokens())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observation::NewObservation;

    #[test]
    fn what_spans_need_is_read_and_odd_types_read_as_absent() {
        let content = serde_json::json!({
            "toolName": "calculator", "callId": "c1", "status": "error", "error": "bad \"quoted\"",
            "arguments": { "expression": "1/0" }, "output": null,
            "metadata": { "inputTokens": 3, "cachedInputTokens": 2, "usage": { "outputTokens": 9 } },
        });
        let mut new = NewObservation::new("t", "r", ObservationType::ToolExecution, content);
        new.metadata = serde_json::json!({ "errorCode": "TOOL_FAILED", "model": "m" });
        let stored = StoredObservation::for_tests(new);
        assert_eq!(run_of(&stored).unwrap(), "r");
        let o = Obs::decode(&stored, true).unwrap();
        assert_eq!(o.content.tool_name.as_deref(), Some("calculator"));
        // Escaped text is unescaped (owned); plain text is borrowed.
        assert_eq!(o.content.error.as_deref(), Some("bad \"quoted\""));
        assert!(matches!(o.content.call_id, Some(Cow::Borrowed("c1"))));
        assert_eq!(
            o.content.arguments.unwrap().get(),
            r#"{"expression":"1/0"}"#
        );
        assert!(o.content.output.is_none());
        assert_eq!(o.call_tokens().unwrap().input, Some(3));
        assert_eq!(o.call_tokens().unwrap().cached, Some(2));
        assert_eq!(o.run_tokens().unwrap().output, Some(9));
        assert_eq!(o.meta.error_code.as_deref(), Some("TOOL_FAILED"));
        assert!(o.raw.unwrap().contains("calculator"));
        // A code that is a number: the content reads as empty, the observation still decodes.
        let odd = StoredObservation::for_tests(NewObservation::new(
            "t",
            "r",
            ObservationType::Error,
            serde_json::json!({ "code": 42, "message": "x" }),
        ));
        let o = Obs::decode(&odd, false).unwrap();
        assert!(o.content.code.is_none() && o.raw.is_none());
    }
}
