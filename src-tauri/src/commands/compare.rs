//! Runs compared and replayed: "Replay with…" starts a run on a branch beside a recorded
//! one (tools run again, or answered from the record); the diff of two runs is read
//! back from what they recorded.

use art::compare::CompareError;
use art_types::commands::{DiffRuns, ReplayRun};
use art_types::record::diff::RunDiff;
use art_types::{AgentOptions, AgentProps, ErrorCode, IpcError, Replay};
use tauri::AppHandle;

use super::runs::{Work, agent_error, check_ready, spawn};
use super::{Handler, workbench};
use crate::error::{context_error, storage_error};
use crate::events::threads_changed;

/// The question of run `trace_id` asked again on a new branch beside it
/// ([`ArtInstance::branch_to_replay`](art::ArtInstance::branch_to_replay)), with the
/// replay's model, prompt, tools and mode; returns the replay's trace id.
impl Handler for ReplayRun {
    async fn handle(self, app: AppHandle) -> Result<String, IpcError> {
        let ReplayRun {
            thread_id,
            trace_id,
            provider_config,
            system_prompt,
            tools,
            mode,
            unmatched,
        } = self;
        let wb = workbench(&app)?;
        check_ready(&wb, &thread_id).await?;
        if let Some(tools) = &tools {
            // MCP tools are known once their servers run.
            wb.art.mcp.start_for(tools).await;
        }
        let question = wb
            .art
            .branch_to_replay(&thread_id, &trace_id)
            .await
            .map_err(agent_error)?;
        threads_changed(&app);
        let replay_id = art::clock::new_id();
        let props = AgentProps {
            query: question.content,
            thread_id: thread_id.clone(),
            trace_id: Some(replay_id.clone()),
            options: AgentOptions {
                provider_config,
                system_prompt,
                tools,
                replay: Some(Replay {
                    of: trace_id,
                    mode,
                    unmatched,
                }),
                ..AgentOptions::default()
            },
            attachments: question.attachments,
        };
        spawn(app, &wb, thread_id, replay_id, Work::Ask(props))
    }
}

/// Runs `a` and `b` read back and compared ([`art::compare::diff`]).
impl Handler for DiffRuns {
    async fn handle(self, app: AppHandle) -> Result<RunDiff, IpcError> {
        let wb = workbench(&app)?;
        art::compare::diff(&wb.art, &self.a, &self.b)
            .await
            .map_err(|e| match e {
                CompareError::NotFound(ref id) => IpcError::new(ErrorCode::NotFound, e.to_string())
                    .with_details(serde_json::json!({ "traceId": id })),
                CompareError::Storage(e) => storage_error(e),
                CompareError::Context(e) => context_error(e),
            })
    }
}
