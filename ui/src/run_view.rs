//! What the run card needs besides the fold itself (`art_types::record::view`, shared
//! with the Markdown export and the `art` printer): the images of an MCP result, made
//! safe for a `data:` URL, and the files it returned (embedded resources) that can be
//! attached to the next question. Pure, unit-tested natively.

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

/// A file an MCP result returned: an image, or an embedded resource with text or a
/// binary blob. `data` is base64 (a text resource's text encoded here).
#[derive(Debug, Clone, PartialEq)]
pub struct ReturnedFile {
    /// A name for the attachment (the resource URI's last segment, else `<tool>-N`).
    pub name: String,
    /// The bytes, base64.
    pub data: String,
}

/// What `tool`'s MCP result returned that can be attached: its images and its embedded
/// resources (`{"type": "resource", "resource": {uri, mimeType?, text | blob}}`).
pub fn returned_files(tool: &str, result: &Value) -> Vec<ReturnedFile> {
    use base64::Engine;
    // (Unknown types get no extension: the bytes then say what the file is.)
    let extension = |mime: &str| match mime {
        "image/png" => ".png",
        "image/jpeg" => ".jpg",
        "image/webp" => ".webp",
        "image/gif" => ".gif",
        "text/markdown" => ".md",
        "text/html" => ".html",
        "application/pdf" => ".pdf",
        m if m.starts_with("text/") || m.ends_with("json") => ".txt",
        _ => "",
    };
    let mut files: Vec<ReturnedFile> = result_images(result)
        .into_iter()
        .enumerate()
        .map(|(i, (mime, data))| ReturnedFile {
            name: format!("{tool}-{}{}", i + 1, extension(&mime)),
            data,
        })
        .collect();
    let resources = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "resource")
        .filter_map(|i| i.get("resource"));
    for (i, resource) in resources.enumerate() {
        let mime = resource["mimeType"].as_str().unwrap_or("text/plain");
        let name = resource["uri"]
            .as_str()
            .and_then(|uri| uri.trim_end_matches('/').rsplit('/').next())
            .filter(|last| !last.is_empty() && last.contains('.'))
            .map_or_else(
                || format!("{tool}-resource-{}{}", i + 1, extension(mime)),
                str::to_owned,
            );
        let data = match (resource["text"].as_str(), resource["blob"].as_str()) {
            (Some(text), _) => base64::engine::general_purpose::STANDARD.encode(text),
            (None, Some(blob)) => blob.to_owned(),
            (None, None) => continue,
        };
        files.push(ReturnedFile { name, data });
    }
    files
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

    #[test]
    fn images_and_embedded_resources_can_be_attached_by_name() {
        let result = json!({ "content": [
            { "type": "text", "text": "here" },
            { "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=" },
            { "type": "resource", "resource": { "uri": "file:///docs/notes.md", "mimeType": "text/markdown", "text": "# Hi" } },
            { "type": "resource", "resource": { "uri": "test://static/resource/2", "mimeType": "application/octet-stream", "blob": "AAEC" } },
            { "type": "resource", "resource": { "uri": "x://empty" } },
        ]});
        let files = returned_files("getResource", &result);
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["getResource-1.png", "notes.md", "getResource-resource-2"]
        );
        assert_eq!(files[1].data, "IyBIaQ==", "the text, base64");
        assert_eq!(files[2].data, "AAEC");
    }
}
