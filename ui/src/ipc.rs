//! The only door to the backend: Tauri `invoke` for commands and `listen` for events,
//! through the global `window.__TAURI__` API (`app.withGlobalTauri`).
//!
//! Every failure comes back as an [`IpcError`]: the backend's own `{code, message,
//! details}` when it sent one, else an `IPC_FAILURE` wrapping whatever Tauri said.

use art_types::commands::Command;
use art_types::{ErrorCode, IpcError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["window", "__TAURI__", "core"], js_name = invoke, catch)]
    async fn tauri_invoke(cmd: &str, args: JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_namespace = ["window", "__TAURI__", "event"], js_name = listen, catch)]
    async fn tauri_listen(
        event: &str,
        handler: &Closure<dyn FnMut(JsValue)>,
    ) -> Result<JsValue, JsValue>;
}

/// Turn whatever a rejected promise carried into an [`IpcError`].
fn to_ipc_error(value: JsValue) -> IpcError {
    if let Ok(err) = serde_wasm_bindgen::from_value::<IpcError>(value.clone()) {
        return err;
    }
    let text = value
        .as_string()
        .or_else(|| {
            js_sys::JSON::stringify(&value)
                .ok()
                .and_then(|s| s.as_string())
        })
        .unwrap_or_else(|| "unknown error".into());
    IpcError::new(ErrorCode::IpcFailure, text)
}

fn to_js<A: Serialize>(args: &A) -> Result<JsValue, IpcError> {
    args.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| {
            IpcError::new(
                ErrorCode::InvalidInput,
                format!("cannot encode arguments: {e}"),
            )
        })
}

/// Call a backend command and decode its answer: `call(&SendMessage { … })` gives the
/// run's trace id. The command's name and output type come from `art_types::commands`.
pub async fn call<C: Command>(command: &C) -> Result<C::Output, IpcError> {
    let value = tauri_invoke(C::NAME, to_js(command)?)
        .await
        .map_err(to_ipc_error)?;
    serde_wasm_bindgen::from_value(value).map_err(|e| {
        IpcError::new(
            ErrorCode::IpcFailure,
            format!("unexpected answer from `{}`: {e}", C::NAME),
        )
    })
}

/// Subscribe to a backend event for the life of the page. Resolves once the
/// subscription is active, so a command sent afterwards cannot outrun it.
pub async fn listen<T: DeserializeOwned + 'static>(
    event: &str,
    mut handler: impl FnMut(T) + 'static,
) -> Result<(), IpcError> {
    let name = event.to_owned();
    let closure = Closure::<dyn FnMut(JsValue)>::new(move |ev: JsValue| {
        let payload =
            js_sys::Reflect::get(&ev, &JsValue::from_str("payload")).unwrap_or(JsValue::NULL);
        match serde_wasm_bindgen::from_value::<T>(payload) {
            Ok(value) => handler(value),
            Err(e) => web_log(&format!("dropped malformed `{name}` event: {e}")),
        }
    });
    tauri_listen(event, &closure).await.map_err(to_ipc_error)?;
    // App-lifetime subscription: the closure must outlive this function.
    closure.forget();
    Ok(())
}

/// Log to the webview console (visible in devtools).
pub fn web_log(message: &str) {
    leptos::logging::warn!("{message}");
}
