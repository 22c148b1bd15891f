//! Runs: send a message (starts the agent, returns the run's trace id at once), cancel
//! it, and read a thread's observations.

use art::clock;
use art::observation::ObservationQuery;
use art_types::{AgentProps, ErrorCode, IpcError, Observation, ObservationType, RunFinished};
use tauri::{AppHandle, Emitter, Manager, State};

use crate::error::{context_error, require};
use crate::events::threads_changed;
use crate::state::AppState;

/// Longest message accepted (characters); larger pastes belong in a file.
pub const MAX_MESSAGE: usize = 200_000;

/// Start a run of the thread's agent on `text`; progress arrives as events.
#[tauri::command]
pub async fn send_message(
    app: AppHandle,
    state: State<'_, AppState>,
    thread_id: String,
    text: String,
) -> Result<String, IpcError> {
    let wb = state.workbench()?;
    require(!text.trim().is_empty(), "text", "type a message first")?;
    require(
        text.chars().count() <= MAX_MESSAGE,
        "text",
        format!("a message has at most {MAX_MESSAGE} characters"),
    )?;
    wb.art
        .conversation
        .thread(&thread_id)
        .await
        .map_err(context_error)?;
    let context = wb
        .art
        .state
        .load_thread_context(&thread_id)
        .await
        .map_err(context_error)?;
    let provider = &context.config.provider_config;
    if provider.provider_name.is_empty() || provider.model_id.is_empty() {
        return Err(IpcError::new(
            ErrorCode::InvalidInput,
            "choose a provider and a model in this thread's settings first",
        )
        .with_details(serde_json::json!({ "field": "providerConfig" })));
    }
    let trace_id = clock::new_id();
    let cancel = wb.start_run(&trace_id);
    let props = AgentProps {
        query: text,
        thread_id: thread_id.clone(),
        trace_id: Some(trace_id.clone()),
        options: Default::default(),
    };
    let trace = trace_id.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        let Ok(wb) = state.workbench() else { return };
        let outcome = wb.art.process(props, cancel).await;
        wb.finish_run(&trace);
        let finished = match outcome {
            Ok(out) => RunFinished {
                thread_id,
                trace_id: trace,
                metadata: Some(out.metadata),
                error: None,
            },
            Err(e) => RunFinished {
                thread_id,
                trace_id: trace,
                metadata: None,
                error: Some(IpcError::new(ErrorCode::Internal, e.to_string())),
            },
        };
        if let Err(e) = app.emit(art_types::events::RUN_FINISHED, &finished) {
            tracing::warn!("cannot emit the end of a run: {e}");
        }
        threads_changed(&app);
    });
    Ok(trace_id)
}

/// Stop a run: it ends at its next step, keeping what was streamed (marked stopped).
#[tauri::command]
pub fn cancel_run(state: State<'_, AppState>, trace_id: String) -> Result<(), IpcError> {
    let wb = state.workbench()?;
    if wb.cancel_run(&trace_id) {
        Ok(())
    } else {
        Err(IpcError::new(
            ErrorCode::NotFound,
            "that run is not running (it may have just finished)",
        ))
    }
}

/// Observations of a thread (optionally one run, optionally some types), oldest first.
#[tauri::command]
pub async fn list_observations(
    state: State<'_, AppState>,
    thread_id: String,
    trace_id: Option<String>,
    types: Option<Vec<ObservationType>>,
) -> Result<Vec<Observation>, IpcError> {
    let wb = state.workbench()?;
    let query = ObservationQuery {
        thread_id: Some(thread_id),
        trace_id,
        types: types.unwrap_or_default(),
        newest_first: false,
        limit: Some(10_000),
    };
    wb.art
        .observations
        .query(&query)
        .await
        .map_err(|e| IpcError::new(ErrorCode::Storage, e.to_string()))
}
