//! Observations as the OTLP exporter reads them: only the fields spans need, decoded
//! straight from the stored JSON into a small struct (no `serde_json::Value` tree per
//! observation, which was a quarter of an export's time). A field of an unexpected type
//! reads as absent: a trace is still written.

use art_types::{ObservationType, SpanInfo};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::observation::StoredObservation;
use crate::storage::{Collection, StorageError};

/// Token counts and stop reason, where a content carries them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Usage {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) stop_reason: Option<String>,
    /// FINAL_RESPONSE: `metadata.usage`.
    pub(super) usage: Option<Box<Usage>>,
}

/// The parts of a content the spans use.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Content {
    pub(super) tool_name: Option<String>,
    pub(super) call_id: Option<String>,
    pub(super) status: Option<String>,
    pub(super) error: Option<String>,
    pub(super) code: Option<String>,
    pub(super) message: Option<String>,
    pub(super) stage: Option<String>,
    pub(super) arguments: Option<Box<RawValue>>,
    pub(super) output: Option<Box<RawValue>>,
    /// LLM_STREAM_METADATA carries usage at the top.
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) stop_reason: Option<String>,
    /// LLM_STREAM_END: `metadata`; FINAL_RESPONSE: `metadata` (with `usage`).
    pub(super) metadata: Option<Usage>,
}

/// Token counts and stop reason of a call or run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tokens<'a> {
    pub(super) input: Option<u64>,
    pub(super) output: Option<u64>,
    pub(super) stop: Option<&'a str>,
}

impl Usage {
    fn tokens(&self) -> Tokens<'_> {
        Tokens {
            input: self.input_tokens,
            output: self.output_tokens,
            stop: self.stop_reason.as_deref(),
        }
    }
}

/// The parts of an observation's metadata the spans use.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Meta {
    pub(super) provider: Option<String>,
    pub(super) model: Option<String>,
    pub(super) error_code: Option<String>,
    pub(super) recoverable: Option<bool>,
}

/// `raw` as a `T`, or `T`'s default when it does not fit.
fn lenient<T: serde::de::DeserializeOwned + Default>(raw: &RawValue) -> T {
    serde_json::from_str(raw.get()).unwrap_or_default()
}

#[derive(Deserialize)]
struct Body<'a> {
    title: String,
    #[serde(borrow)]
    content: &'a RawValue,
    #[serde(default, borrow)]
    metadata: Option<&'a RawValue>,
    #[serde(default)]
    span: Option<SpanInfo>,
}

/// An observation, light.
#[derive(Debug)]
pub(super) struct Obs {
    pub(super) id: String,
    pub(super) trace_id: String,
    pub(super) timestamp: i64,
    pub(super) kind: ObservationType,
    pub(super) title: String,
    pub(super) span: Option<SpanInfo>,
    pub(super) content: Content,
    pub(super) meta: Meta,
    /// The content as JSON text (kept only when content is exported).
    pub(super) raw: Option<String>,
}

impl Obs {
    /// Decode what the spans need; `raw` keeps the content's JSON text too.
    pub(super) fn decode(stored: &StoredObservation, raw: bool) -> Result<Self, StorageError> {
        let r = stored.record();
        let corrupt = |message: String| StorageError::Corrupt {
            collection: Collection::Observations.as_str(),
            id: r.id.clone(),
            message,
        };
        let kind = r
            .kind
            .as_deref()
            .and_then(ObservationType::parse)
            .ok_or_else(|| corrupt("unknown observation type".into()))?;
        let trace_id = r
            .trace_id
            .clone()
            .ok_or_else(|| corrupt("observation without a run".into()))?;
        let body: Body<'_> = serde_json::from_str(&r.body).map_err(|e| corrupt(e.to_string()))?;
        Ok(Self {
            id: r.id.clone(),
            trace_id,
            timestamp: r.timestamp,
            kind,
            title: body.title,
            span: body.span,
            content: lenient(body.content),
            meta: body.metadata.map(lenient).unwrap_or_default(),
            raw: raw.then(|| body.content.get().to_owned()),
        })
    }

    /// Input / output tokens and stop reason of an LLM call, wherever its kind keeps
    /// them (top level for LLM_STREAM_METADATA, `metadata` for LLM_STREAM_END).
    pub(super) fn call_tokens(&self) -> Option<Tokens<'_>> {
        let c = &self.content;
        if c.input_tokens.is_some() || c.output_tokens.is_some() {
            return Some(Tokens {
                input: c.input_tokens,
                output: c.output_tokens,
                stop: c.stop_reason.as_deref(),
            });
        }
        c.metadata.as_ref().map(Usage::tokens)
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
            "toolName": "calculator", "callId": "c1", "status": "error", "error": "bad",
            "arguments": { "expression": "1/0" }, "output": null,
            "metadata": { "inputTokens": 3, "usage": { "outputTokens": 9 } },
        });
        let mut new = NewObservation::new("t", "r", ObservationType::ToolExecution, content);
        new.metadata = serde_json::json!({ "errorCode": "TOOL_FAILED", "model": "m" });
        let stored = StoredObservation::for_tests(new);
        let o = Obs::decode(&stored, true).unwrap();
        assert_eq!(o.content.tool_name.as_deref(), Some("calculator"));
        assert_eq!(o.content.error.as_deref(), Some("bad"));
        assert_eq!(
            o.content.arguments.as_ref().unwrap().get(),
            r#"{"expression":"1/0"}"#
        );
        assert!(o.content.output.is_none());
        assert_eq!(o.call_tokens().unwrap().input, Some(3));
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
