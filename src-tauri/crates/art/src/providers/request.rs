//! Pieces of the request bodies several protocols share: tools in the function shape,
//! turns merged by role, and the `thinking_budget` option.

use art_types::{PromptImage, PromptMessage, ToolSchema};
use base64::Engine;
use serde_json::{Value, json};

/// Append `items` as a turn of `role` under `key` (`content`, `parts`), merging them into
/// the previous turn when it has the same role (Anthropic and Gemini want alternation).
pub fn push_merged(turns: &mut Vec<Value>, role: &str, key: &str, items: Vec<Value>) {
    if items.is_empty() {
        return;
    }
    if let Some(last) = turns.last_mut().filter(|t| t["role"] == role)
        && let Some(existing) = last[key].as_array_mut()
    {
        existing.extend(items);
        return;
    }
    turns.push(json!({ "role": role, key: items }));
}

/// The `thinking_budget` provider option (tokens), if set.
pub fn thinking_budget(options: &serde_json::Map<String, Value>) -> Option<u32> {
    options
        .get("thinking_budget")
        .and_then(Value::as_u64)
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// Tool schemas in the `{"type": "function", "function": {…}}` shape that OpenAI-style
/// and Ollama requests both use.
pub fn function_tools(tools: &[ToolSchema]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": { "name": t.name, "description": t.description, "parameters": t.input_schema }
            })
        })
        .collect()
}

/// An image's bytes as base64, as every provider's JSON carries them.
pub fn base64_of(image: &PromptImage) -> Option<String> {
    image
        .data()
        .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The user's text, with a line for each image whose bytes are not at hand (a prompt read
/// back from a record): said in the text rather than dropped in silence.
pub fn user_text(m: &PromptMessage) -> String {
    let mut text = m.content.clone();
    for image in m.images.iter().filter(|i| i.data().is_none()) {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "[The image {} could not be sent: its bytes were not loaded.]",
            image.attachment.name
        ));
    }
    text
}

/// The images of `m` that have their bytes, each with its base64 form.
pub fn images_base64(m: &PromptMessage) -> impl Iterator<Item = (&PromptImage, String)> {
    m.images
        .iter()
        .filter_map(|image| Some((image, base64_of(image)?)))
}
