//! The app's commands: a [`Handler`] for every command of `art_types::commands`, one
//! module per area. Each validates its arguments, makes one call into `art`, and returns
//! the command's output or an `IpcError`.
//!
//! [`route`] is the app's invoke handler, made from `art_types::for_each_command!`: a
//! command without a handler does not compile. Its arguments are decoded from the page's
//! JSON here, so a wrong type, a missing or an unknown key is refused with an
//! `INVALID_INPUT` error naming the key before the command runs.

use std::future::Future;
use std::sync::Arc;

use art_types::commands::Command;
use art_types::{ErrorCode, IpcError};
use serde_json::Value;
use tauri::ipc::{Invoke, InvokeBody, InvokeError};
use tauri::{AppHandle, Manager, Wry};

use crate::state::AppState;
use crate::workbench::Workbench;

pub mod app;
pub mod attachments;
pub mod catalog;
pub mod compare;
pub mod defaults;
pub mod knowledge;
pub mod mcp;
pub mod models;
pub mod picker;
pub mod prompts;
pub mod push;
pub mod runs;
pub mod settings;
pub mod threads;
pub mod traces;
pub mod usage;

/// What a command does when the page calls it.
pub trait Handler: Command {
    /// Run the command with its decoded arguments (`self`).
    fn handle(self, app: AppHandle) -> impl Future<Output = Result<Self::Output, IpcError>> + Send;
}

/// The app's invoke handler: decodes the arguments of the command called and runs its
/// handler. `false` when no command has that name (Tauri answers that it was not found).
pub fn route(invoke: Invoke<Wry>) -> bool {
    macro_rules! route {
        ($($command:ty),* $(,)?) => {{
            let name = invoke.message.command();
            $(if name == <$command as Command>::NAME {
                serve::<$command>(invoke);
                return true;
            })*
            false
        }};
    }
    art_types::for_each_command!(route)
}

/// Decode `C`'s arguments and answer the call with what its handler returns.
fn serve<C: Handler>(invoke: Invoke<Wry>) {
    let app = invoke.message.webview().app_handle().clone();
    let args = decode::<C>(invoke.message.payload());
    invoke.resolver.respond_async(async move {
        let args = args.map_err(InvokeError::from)?;
        args.handle(app).await.map_err(InvokeError::from)
    });
}

/// `C`'s arguments from the call's payload (a JSON object; none at all reads as `{}`).
fn decode<C: Command>(payload: &InvokeBody) -> Result<C, IpcError> {
    let empty = Value::Object(Default::default());
    let value = match payload {
        InvokeBody::Json(Value::Null) => &empty,
        InvokeBody::Json(value) => value,
        InvokeBody::Raw(_) => {
            return Err(IpcError::new(
                ErrorCode::InvalidInput,
                format!("{} takes its arguments as a JSON object", C::NAME),
            ));
        }
    };
    decode_value(value)
}

/// `C`'s arguments from a JSON value, or an error naming the key that is wrong.
fn decode_value<C: Command>(value: &Value) -> Result<C, IpcError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        let problem = e.into_inner();
        if key == "." {
            IpcError::new(ErrorCode::InvalidInput, format!("{}: {problem}", C::NAME))
        } else {
            IpcError::new(
                ErrorCode::InvalidInput,
                format!("{}: `{key}`: {problem}", C::NAME),
            )
            .with_details(serde_json::json!({ "field": key }))
        }
    })
}

/// The framework behind every command, or the error that kept it from opening.
fn workbench(app: &AppHandle) -> Result<Arc<Workbench>, IpcError> {
    app.state::<AppState>().workbench()
}

#[cfg(test)]
mod tests {
    use art_types::commands::{ListThreads, RenameThread};
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_missing_and_mistyped_keys_are_refused_by_name() {
        let ok: RenameThread = decode_value(&json!({ "threadId": "t", "title": "x" })).unwrap();
        assert_eq!(ok.title, "x");
        let typo = decode_value::<RenameThread>(&json!({ "threadId": "t", "titel": "x" }));
        let e = typo.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        assert!(
            e.message.starts_with("rename_thread:") && e.message.contains("titel"),
            "{}",
            e.message
        );
        let missing = decode_value::<RenameThread>(&json!({ "threadId": "t" })).unwrap_err();
        assert!(missing.message.contains("title"), "{}", missing.message);
        let mistyped = decode_value::<RenameThread>(&json!({ "threadId": 42, "title": "x" }));
        let e = mistyped.unwrap_err();
        assert_eq!(e.details["field"], "threadId", "{}", e.message);
        let extra = decode_value::<ListThreads>(&json!({ "bogus": 1 })).unwrap_err();
        assert!(extra.message.contains("bogus"), "{}", extra.message);
    }

    #[test]
    fn no_payload_reads_as_no_arguments_and_bytes_are_refused() {
        assert!(decode::<ListThreads>(&InvokeBody::Json(Value::Null)).is_ok());
        assert!(decode::<ListThreads>(&InvokeBody::Json(json!({}))).is_ok());
        let raw = decode::<ListThreads>(&InvokeBody::Raw(vec![1, 2])).unwrap_err();
        assert_eq!(raw.code, ErrorCode::InvalidInput);
    }
}
