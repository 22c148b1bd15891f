//! The common chunk of a Chat Completions stream — one choice whose delta carries text and
//! nothing else — decoded into borrowed typed fields, without building a JSON tree. Any
//! other chunk (errors, usage, tool calls, reasoning, unexpected types) is left to the
//! full decoder, which handles every shape.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::providers::stream::{Text, borrowed_text as text};

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default, deserialize_with = "text")]
    model: Text<'a>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    /// The first choice (a stream chunk has one); the rest are skipped, no list is built.
    #[serde(borrow, default, deserialize_with = "first_choice")]
    choices: Option<Choice<'a>>,
}

/// The first element of a `choices` array, borrowing from the input.
fn first_choice<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Choice<'de>>, D::Error> {
    struct First;
    impl<'de> Visitor<'de> for First {
        type Value = Option<Choice<'de>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of choices")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_seq(First)
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default, deserialize_with = "text")]
    finish_reason: Text<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default, deserialize_with = "text")]
    content: Text<'a>,
    #[serde(borrow, default)]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reasoning: Option<&'a RawValue>,
}

/// What a plain chunk says: its text, finish reason and model (each if any).
#[derive(Debug, PartialEq)]
pub(super) struct Plain<'a> {
    pub(super) text: Text<'a>,
    pub(super) finish_reason: Text<'a>,
    pub(super) model: Text<'a>,
}

/// `data` as a plain chunk, or `None` when the full decoder must look at it.
pub(super) fn plain(data: &str) -> Option<Plain<'_>> {
    let chunk: Chunk = serde_json::from_str(data).ok()?;
    if chunk.error.is_some() || chunk.usage.is_some() {
        return None;
    }
    let Some(choice) = chunk.choices else {
        return Some(Plain {
            text: None,
            finish_reason: None,
            model: chunk.model,
        });
    };
    let delta = choice.delta;
    if delta.as_ref().is_some_and(|d| {
        d.tool_calls.is_some() || d.reasoning_content.is_some() || d.reasoning.is_some()
    }) {
        return None;
    }
    Some(Plain {
        text: delta.and_then(|d| d.content),
        finish_reason: choice.finish_reason,
        model: chunk.model,
    })
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn text_chunks_are_plain_and_borrow_their_text() {
        let data = r#"{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}"#;
        let hi = plain(data).unwrap();
        assert!(matches!(hi.text, Some(Cow::Borrowed("Hi"))));
        assert_eq!(hi.finish_reason, None);
        let escaped = plain_text(r#"{"choices":[{"delta":{"content":"a\n\"b\""}}]}"#);
        assert_eq!(escaped.as_deref(), Some("a\n\"b\""));
        let end = plain(r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#).unwrap();
        assert_eq!(end.finish_reason.as_deref(), Some("stop"));
    }

    fn plain_text(data: &str) -> Option<String> {
        plain(data).unwrap().text.map(Cow::into_owned)
    }

    #[test]
    fn everything_else_goes_to_the_full_decoder() {
        for data in [
            r#"{"error":{"message":"x"}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
            r#"{"choices":[{"delta":{"content":7}}]}"#,
            r#"{"choices":{}}"#,
            "not json",
        ] {
            assert!(plain(data).is_none(), "{data}");
        }
        // A null usage is no usage (OpenAI sends it on every chunk with include_usage).
        assert!(plain(r#"{"choices":[{"delta":{"content":"a"}}],"usage":null}"#).is_some());
    }
}
