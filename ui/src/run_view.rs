//! What the run card needs besides the fold itself (`art_types::record::view`, shared
//! with the Markdown export and the `art` printer): the images of an MCP result, made
//! safe for a `data:` URL. Pure, unit-tested natively.

pub use art_types::record::view::{RunView, ToolState};
use serde_json::Value;

/// The images of an MCP result's `content`: only `image/…` types with base64 data, so
/// the `data:` URL made of them can be nothing but an image.
pub fn result_images(result: &Value) -> Vec<(String, String)> {
    let Some(items) = result.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|i| i["type"] == "image")
        .filter_map(|i| {
            let mime = i.get("mimeType")?.as_str()?;
            let data = i.get("data")?.as_str()?;
            let mime_ok = mime.strip_prefix("image/").is_some_and(|sub| {
                !sub.is_empty()
                    && sub
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            });
            let data_ok = data
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c));
            (mime_ok && data_ok).then(|| (mime.to_owned(), data.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_real_images_become_data_urls() {
        let result = json!({ "content": [
            { "type": "text", "text": "Here:" },
            { "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=" },
            { "type": "image", "mimeType": "text/html", "data": "PHNjcmlwdD4=" },
            { "type": "image", "mimeType": "image/png", "data": "\"><script>" },
        ]});
        assert_eq!(
            result_images(&result),
            [("image/png".to_owned(), "iVBORw0KGgo=".to_owned())]
        );
        assert!(result_images(&json!({})).is_empty());
    }
}
