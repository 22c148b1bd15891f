//! A `tools/call` result as the model reads it: text as text, images and audio as a
//! short note (never base64), resources by their text or link, structured content as
//! JSON when nothing else says it — and at most the server's limit of characters, with
//! a visible marker. The whole result stays in the trace.

use serde_json::Value;

/// The model's view of a result's `content` (and `structuredContent`), at most `limit`
/// characters.
pub(super) fn for_model(result: &Value, limit: usize) -> String {
    let mut parts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(item).collect())
        .unwrap_or_default();
    let has_text = result
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|items| items.iter().any(|i| i["type"] == "text"));
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
        && !has_text
    {
        parts.push(structured.to_string());
    }
    truncate(parts.join("\n"), limit)
}

/// One content item as text.
fn item(item: &Value) -> Option<String> {
    let kind = item.get("type")?.as_str()?;
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    let size = |key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .map_or(0, |d| d.len() / 4 * 3)
    };
    Some(match kind {
        "text" => text("text").to_owned(),
        "image" | "audio" => format!("[{kind}: {}, {} bytes]", text("mimeType"), size("data")),
        "resource_link" => format!("[resource link: {} {}]", text("name"), text("uri")),
        "resource" => {
            let resource = item.get("resource")?;
            match resource.get("text").and_then(Value::as_str) {
                Some(body) => body.to_owned(),
                None => format!(
                    "[resource: {} {}]",
                    resource.get("uri").and_then(Value::as_str).unwrap_or(""),
                    resource
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                ),
            }
        }
        other => format!("[{other} content]"),
    })
}

/// `text` cut to `limit` characters, saying so.
fn truncate(text: String, limit: usize) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text;
    }
    let mut kept: String = text.chars().take(limit).collect();
    kept.push_str(&format!(
        "\n… [truncated: the first {limit} of {total} characters; the whole result is in the trace]"
    ));
    kept
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn images_are_described_not_pasted() {
        let result = json!({ "content": [
            { "type": "text", "text": "Here is the image:" },
            { "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAA=" },
            { "type": "resource_link", "name": "readme", "uri": "file:///r.md" },
            { "type": "resource", "resource": { "uri": "test://1", "text": "Resource text" } },
        ]});
        assert_eq!(
            for_model(&result, 1000),
            "Here is the image:\n[image: image/png, 12 bytes]\n[resource link: readme file:///r.md]\nResource text"
        );
    }

    #[test]
    fn structured_content_speaks_when_no_text_does() {
        let result = json!({ "content": [], "structuredContent": { "time": "12:00" } });
        assert_eq!(for_model(&result, 100), r#"{"time":"12:00"}"#);
        let both = json!({ "content": [{ "type": "text", "text": "noon" }], "structuredContent": { "time": "12:00" } });
        assert_eq!(for_model(&both, 100), "noon");
    }

    #[test]
    fn long_results_are_cut_with_a_marker() {
        let result = json!({ "content": [{ "type": "text", "text": "é".repeat(50) }] });
        let shown = for_model(&result, 10);
        assert!(shown.starts_with(&"é".repeat(10)));
        assert!(shown.ends_with(
            "[truncated: the first 10 of 50 characters; the whole result is in the trace]"
        ));
    }
}
