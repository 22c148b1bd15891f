//! Runs: send a message (starts the agent, returns the run's trace id at once),
//! regenerate the last answer or edit and resend a question (each a new branch beside
//! the old), cancel a run, and read a thread's observations.

use art::agent::AgentError;
use art::clock;
use art::observation::ObservationQuery;
use art_types::approval::ApprovalDecision;
use art_types::commands::{
    CancelRun, DecideApproval, EditAndResend, ListObservations, Regenerate, SendMessage,
    StopWaiting,
};
use art_types::{AgentProps, Attachment, ErrorCode, IpcError, Observation, RunFinished};
use std::sync::Arc;

use tauri::{AppHandle, Emitter, Manager};

use super::{Handler, workbench};
use crate::error::{context_error, require};
use crate::events::threads_changed;
use crate::state::AppState;
use crate::workbench::Workbench;

/// Longest message accepted (characters); larger pastes belong in a file.
pub const MAX_MESSAGE: usize = 200_000;

/// Most files on one message.
pub const MAX_ATTACHMENTS: usize = 20;

/// Check a message before anything is stored.
fn check_text(text: &str) -> Result<(), IpcError> {
    require(!text.trim().is_empty(), "text", "type a message first")?;
    require(
        text.chars().count() <= MAX_MESSAGE,
        "text",
        format!("a message has at most {MAX_MESSAGE} characters"),
    )
}

/// Check a question and its files before anything is stored (files alone need no text).
pub(super) fn check_message(text: &str, attachments: &[Attachment]) -> Result<(), IpcError> {
    if attachments.is_empty() || !text.trim().is_empty() {
        check_text(text)?;
    }
    require(
        attachments.len() <= MAX_ATTACHMENTS,
        "attachments",
        format!("a message takes at most {MAX_ATTACHMENTS} files"),
    )
}

/// Refuse when a run may not start (the thread does not exist, has no provider and
/// model yet, waits for a decision or is answering — `art`'s rules); nothing is changed.
pub(super) async fn check_ready(wb: &Workbench, thread_id: &str) -> Result<(), IpcError> {
    if wb.is_running(thread_id) {
        return Err(busy());
    }
    wb.art.ready(thread_id).await.map_err(agent_error)
}

/// The thread answers already.
pub(super) fn busy() -> IpcError {
    IpcError::new(
        ErrorCode::InvalidInput,
        "this thread is still answering: stop it or wait for the answer first",
    )
}

fn awaiting(tool: &str) -> IpcError {
    IpcError::new(
        ErrorCode::InvalidInput,
        format!("this thread waits for your decision on `{tool}`: approve, deny or stop it first"),
    )
}

/// A run's error that is not recorded as the run's end.
pub(super) fn agent_error(e: AgentError) -> IpcError {
    match e {
        AgentError::Context(e) => context_error(e),
        AgentError::AwaitingApproval(tool) => awaiting(&tool),
        AgentError::AwaitingAnswer(_) | AgentError::Closing => {
            IpcError::new(ErrorCode::InvalidInput, e.to_string())
        }
        AgentError::Busy(_) => busy(),
        AgentError::NotConfigured => IpcError::new(ErrorCode::InvalidInput, e.to_string())
            .with_details(serde_json::json!({ "field": "providerConfig" })),
        AgentError::NothingWaiting(_) => IpcError::new(ErrorCode::NotFound, e.to_string()),
        AgentError::InvalidInput(message) => IpcError::new(ErrorCode::InvalidInput, message),
    }
}

/// What a run in the background does: answer a question, go on after a decision, or go
/// on with a run kept on a server's question (its id) with the answer to it.
pub(super) enum Work {
    Ask(AgentProps),
    Resume(ApprovalDecision),
    Answer(String, art_types::mcp::elicit::ElicitAnswer),
}

/// Queue run `trace` of `thread_id` for the trace collector, in the background: the
/// spans that ended while it waits on a decision (`waiting`), else the rest, redacted
/// with the redactor kept between runs. Nothing at all when the thread's runs are not
/// sent.
fn queue_for_collector(wb: &Arc<Workbench>, thread_id: &str, trace: &str, waiting: bool) {
    if !wb.push.sends(thread_id) {
        // Turned off while it ran: nothing kept for it.
        wb.art.observations.tap().forget(trace);
        return;
    }
    let (wb, thread_id, trace) = (Arc::clone(wb), thread_id.to_owned(), trace.to_owned());
    tauri::async_runtime::spawn(async move {
        let redactor = wb.push_redactor().await;
        let queued = if waiting {
            wb.push
                .run_waiting(&wb.art, &redactor, &thread_id, &trace)
                .await
        } else {
            wb.push
                .run_ended(&wb.art, &redactor, &thread_id, &trace)
                .await
        };
        if let Err(e) = queued {
            tracing::warn!(trace, "the run was not queued for the trace collector: {e}");
        }
    });
}

/// Start a run of the thread's agent on `text` in the background; returns its trace id.
fn launch(
    app: AppHandle,
    wb: &Workbench,
    thread_id: String,
    text: String,
    attachments: Vec<Attachment>,
) -> Result<String, IpcError> {
    let trace_id = clock::new_id();
    let props = AgentProps {
        query: text,
        thread_id: thread_id.clone(),
        trace_id: Some(trace_id.clone()),
        options: Default::default(),
        attachments,
    };
    spawn(app, wb, thread_id, trace_id, Work::Ask(props))
}

/// Run `work` in the background as run `trace` of `thread_id`; its end is the
/// `RunFinished` event.
pub(super) fn spawn(
    app: AppHandle,
    wb: &Workbench,
    thread_id: String,
    trace: String,
    work: Work,
) -> Result<String, IpcError> {
    let cancel = wb.start_run(&trace, &thread_id).ok_or_else(busy)?;
    let trace_id = trace.clone();
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        let Ok(wb) = state.workbench() else { return };
        let outcome = match work {
            Work::Ask(props) => {
                // Kept as it records, when it will be sent: queuing it reads nothing back.
                wb.push.watch(&wb.art, &thread_id, &trace);
                wb.art.process(props, cancel).await
            }
            Work::Resume(decision) => wb.art.resume(&thread_id, decision, cancel).await,
            Work::Answer(question, answer) => {
                wb.art
                    .answer_held(&thread_id, &question, answer, cancel)
                    .await
            }
        };
        let outcome = outcome.map(|out| out.metadata).map_err(agent_error);
        ended(&app, &wb, thread_id, trace, outcome);
    });
    Ok(trace_id)
}

/// Run `trace` of `thread_id` has ended — answered, failed, stopped, waiting on a
/// decision, or refused before it ran (`Err`): it is no longer at work; it is queued for
/// the trace collector when sending is on (one waiting on a decision, what of it
/// ended; a refused one never ran); the page hears of it (`RunFinished`), and the
/// thread list changes.
pub(super) fn ended(
    app: &AppHandle,
    wb: &Arc<Workbench>,
    thread_id: String,
    trace: String,
    outcome: Result<art_types::ExecutionMetadata, IpcError>,
) {
    wb.finish_run(&trace);
    match &outcome {
        Ok(metadata) => {
            let waiting = metadata.status == art_types::RunStatus::Suspended;
            queue_for_collector(wb, &thread_id, &trace, waiting);
        }
        Err(_) => wb.art.observations.tap().forget(&trace),
    }
    let (metadata, error) = match outcome {
        Ok(metadata) => (Some(metadata), None),
        Err(e) => (None, Some(e)),
    };
    let finished = RunFinished {
        thread_id,
        trace_id: trace,
        metadata,
        error,
    };
    if let Err(e) = app.emit(art_types::events::RUN_FINISHED, &finished) {
        tracing::warn!("cannot emit the end of a run: {e}");
    }
    threads_changed(app);
}

impl Handler for SendMessage {
    async fn handle(self, app: AppHandle) -> Result<String, IpcError> {
        let wb = workbench(&app)?;
        check_message(&self.text, &self.attachments)?;
        check_ready(&wb, &self.thread_id).await?;
        launch(app, &wb, self.thread_id, self.text, self.attachments)
    }
}

/// The active branch's last question is asked again on a new branch beside it
/// ([`ArtInstance::branch_to_regenerate`](art::ArtInstance::branch_to_regenerate)).
impl Handler for Regenerate {
    async fn handle(self, app: AppHandle) -> Result<String, IpcError> {
        let Self { thread_id } = self;
        let wb = workbench(&app)?;
        check_ready(&wb, &thread_id).await?;
        let question = wb
            .art
            .branch_to_regenerate(&thread_id)
            .await
            .map_err(agent_error)?;
        threads_changed(&app);
        launch(app, &wb, thread_id, question.content, question.attachments)
    }
}

/// The edited question is asked on a new branch beside the user's question
/// ([`ArtInstance::branch_to_edit`](art::ArtInstance::branch_to_edit)).
impl Handler for EditAndResend {
    async fn handle(self, app: AppHandle) -> Result<String, IpcError> {
        let EditAndResend {
            thread_id,
            message_id,
            text,
        } = self;
        let wb = workbench(&app)?;
        check_text(&text)?;
        check_ready(&wb, &thread_id).await?;
        let original = wb
            .art
            .branch_to_edit(&thread_id, &message_id)
            .await
            .map_err(agent_error)?;
        threads_changed(&app);
        launch(app, &wb, thread_id, text, original.attachments)
    }
}

impl Handler for CancelRun {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        if workbench(&app)?.cancel_run(&self.trace_id) {
            Ok(())
        } else {
            Err(IpcError::new(
                ErrorCode::NotFound,
                "that run is not running (it may have just finished)",
            ))
        }
    }
}

/// The user's decision on the call a thread's run waits on: the run goes on in the
/// background (arguments that do not fit the tool's schema are refused first, and the
/// run keeps waiting).
impl Handler for DecideApproval {
    async fn handle(self, app: AppHandle) -> Result<String, IpcError> {
        let wb = workbench(&app)?;
        // Arguments that do not fit are refused here, at once, and the run keeps waiting.
        let refused = |e: AgentError| match e {
            AgentError::InvalidInput(message) => IpcError::new(ErrorCode::InvalidInput, message)
                .with_details(serde_json::json!({ "field": "decision.arguments" })),
            other => agent_error(other),
        };
        if wb.is_running(&self.thread_id) {
            // A comparison's column waits where it is: it goes on with the decision.
            let Some(trace) = self.trace_id else {
                return Err(busy());
            };
            wb.art
                .decide_column(&self.thread_id, &trace, self.decision)
                .map_err(refused)?;
            return Ok(trace);
        }
        let waiting = wb
            .art
            .check_decision(&self.thread_id, &self.decision)
            .await
            .map_err(refused)?;
        let work = Work::Resume(self.decision);
        spawn(app, &wb, self.thread_id, waiting.trace_id, work)
    }
}

/// Stop the run a thread waits on: it ends as stopped.
impl Handler for StopWaiting {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        let wb = workbench(&app)?;
        let stopped = wb
            .art
            .stop_waiting(&self.thread_id)
            .await
            .map_err(agent_error)?
            .ok_or_else(|| agent_error(AgentError::NothingWaiting(self.thread_id.clone())))?;
        let finished = RunFinished {
            thread_id: self.thread_id,
            trace_id: stopped.metadata.trace_id.clone(),
            metadata: Some(stopped.metadata),
            error: None,
        };
        if let Err(e) = app.emit(art_types::events::RUN_FINISHED, &finished) {
            tracing::warn!("cannot emit the end of a run: {e}");
        }
        threads_changed(&app);
        Ok(())
    }
}

/// Most runs one observation query may name (a page of history holds at most 500
/// messages, so at most 500 runs).
const MAX_RUNS: usize = 500;
/// Most observations one query returns.
const MAX_OBSERVATIONS: usize = 10_000;

impl Handler for ListObservations {
    async fn handle(self, app: AppHandle) -> Result<Vec<Observation>, IpcError> {
        let wb = workbench(&app)?;
        let trace_ids = self.trace_ids.unwrap_or_default();
        require(
            trace_ids.len() <= MAX_RUNS,
            "traceIds",
            format!("ask for at most {MAX_RUNS} runs at a time"),
        )?;
        let query = ObservationQuery {
            thread_id: Some(self.thread_id),
            trace_ids,
            types: self.types.unwrap_or_default(),
            newest_first: false,
            limit: Some(MAX_OBSERVATIONS),
        };
        wb.art
            .observations
            .query(&query)
            .await
            .map_err(|e| IpcError::new(ErrorCode::Storage, e.to_string()))
    }
}
