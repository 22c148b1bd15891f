//! How an `IpcError` looks to a user: the message first, the code for reference.

use art_types::IpcError;
use leptos::prelude::*;

/// A card showing one error with its stable code and any details.
#[component]
pub fn ErrorCard(error: IpcError) -> impl IntoView {
    let details = (!error.details.is_null())
        .then(|| serde_json_pretty(&error.details))
        .map(|text| view! { <pre class="error-details">{text}</pre> });
    view! {
        <div class="error-card" role="alert">
            <div class="error-message">{error.message.clone()}</div>
            <div class="error-code">{error.code.as_str()}</div>
            {details}
        </div>
    }
}

fn serde_json_pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
