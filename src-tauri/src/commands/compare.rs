//! Runs compared and replayed: one question to several models at once (each column a
//! run of its own, on its own branch); "Replay with…" starts a run on a branch beside a
//! recorded one (tools run again, or answered from the record); the diff of two runs is
//! read back from what they recorded.

use art::agent::AgentError;
use art::agent::pes::{Column, MAX_COLUMNS, MIN_COLUMNS, queued_behind};
use art::compare::CompareError;
use art::reasoning::provider::ProviderSource as _;
use art_types::commands::{
    CompareModels, Comparison, ComparisonColumn, DiffRuns, ReplayRun, ShowRun,
};
use art_types::record::diff::RunDiff;
use art_types::{
    AgentFinalResponse, AgentOptions, AgentProps, ErrorCode, IpcError, ProviderConfig, Replay,
    ThreadSummary,
};
use tauri::AppHandle;

use super::runs::{Work, agent_error, busy, check_message, check_ready, ended, spawn};
use super::settings::settings_error;
use super::{Handler, workbench};
use crate::error::{context_error, require, storage_error};
use crate::events::threads_changed;

/// One question to 2–4 models at once ([`ArtInstance::compare`](art::ArtInstance::compare)):
/// checked, then every column started in the background; returns the columns (which
/// local model waits for which). Each column's end is its own `RunFinished`; a
/// comparison that cannot start after all ends every column with the reason.
impl Handler for CompareModels {
    async fn handle(self, app: AppHandle) -> Result<Comparison, IpcError> {
        let CompareModels {
            thread_id,
            text,
            attachments,
            models,
        } = self;
        let wb = workbench(&app)?;
        check_message(&text, &attachments)?;
        require(
            (MIN_COLUMNS..=MAX_COLUMNS).contains(&models.len()),
            "models",
            format!(
                "choose {MIN_COLUMNS} to {MAX_COLUMNS} models to compare, not {}",
                models.len()
            ),
        )?;
        wb.art
            .conversation
            .thread(&thread_id)
            .await
            .map_err(context_error)?;
        let thread_provider = wb
            .art
            .state
            .load_thread_context(&thread_id)
            .await
            .map_err(context_error)?
            .config
            .provider_config
            .provider_name;
        let models =
            art::standard::column_models(&wb.art, &wb.providers, &thread_provider, &models)
                .await
                .map_err(settings_error)?;
        check_ready(&wb, &thread_id).await?;
        let traces: Vec<String> = models.iter().map(|_| art::clock::new_id()).collect();
        let tokens = wb.start_runs(&traces, &thread_id).ok_or_else(busy)?;
        let refs: Vec<&ProviderConfig> = models.iter().collect();
        let behind = queued_behind(&refs, |name| wb.providers.is_local(name));
        let comparison = Comparison {
            comparison_id: art::clock::new_id(),
            thread_id: thread_id.clone(),
            columns: models
                .iter()
                .zip(&traces)
                .zip(behind)
                .map(|((model, trace), waits_for)| ComparisonColumn {
                    trace_id: trace.clone(),
                    provider: model.provider_name.clone(),
                    model: model.model_id.clone(),
                    waits_for,
                })
                .collect(),
        };
        let columns: Vec<Column> = models
            .into_iter()
            .zip(&traces)
            .zip(tokens)
            .map(|((provider, trace), cancel)| Column {
                trace_id: trace.clone(),
                provider,
                cancel,
                // Its approval card is in the column.
                can_ask: true,
            })
            .collect();
        for trace in &traces {
            // Kept as they record, when they will be sent (as every run the app starts).
            wb.push.watch(&wb.art, &thread_id, trace);
        }
        let props = AgentProps {
            query: text,
            thread_id: thread_id.clone(),
            trace_id: Some(comparison.comparison_id.clone()),
            options: AgentOptions::default(),
            attachments,
        };
        tauri::async_runtime::spawn(async move {
            let column_ended = |place: usize, out: &Result<AgentFinalResponse, AgentError>| {
                let outcome = match out {
                    Ok(out) => Ok(out.metadata.clone()),
                    Err(e) => Err(column_error(e)),
                };
                ended(&app, &wb, thread_id.clone(), traces[place].clone(), outcome);
            };
            if let Err(e) = wb.art.compare(props, columns, &column_ended).await {
                let error = agent_error(e);
                for trace in &traces {
                    ended(
                        &app,
                        &wb,
                        thread_id.clone(),
                        trace.clone(),
                        Err(error.clone()),
                    );
                }
            }
        });
        Ok(comparison)
    }
}

/// The thread shows run `trace_id`'s branch: the branch through the run's last message
/// ([`ArtInstance::switch_branch`](art::ArtInstance::switch_branch)).
impl Handler for ShowRun {
    async fn handle(self, app: AppHandle) -> Result<ThreadSummary, IpcError> {
        let ShowRun {
            thread_id,
            trace_id,
        } = self;
        let wb = workbench(&app)?;
        if wb.is_running(&thread_id) {
            return Err(busy());
        }
        let messages = wb
            .art
            .conversation
            .messages_of_run(&thread_id, &trace_id)
            .await
            .map_err(context_error)?;
        let Some(last) = messages.last() else {
            wb.art
                .conversation
                .thread(&thread_id)
                .await
                .map_err(context_error)?;
            return Err(IpcError::new(
                ErrorCode::NotFound,
                "that run left no message in this thread",
            )
            .with_details(serde_json::json!({ "traceId": trace_id })));
        };
        let thread = wb
            .art
            .switch_branch(&thread_id, &last.message_id)
            .await
            .map_err(agent_error)?;
        threads_changed(&app);
        Ok(thread)
    }
}

/// Why a column could not run at all (its failures once running are in its record).
fn column_error(e: &AgentError) -> IpcError {
    let code = match e {
        AgentError::Context(art::context::ContextError::ThreadNotFound(_)) => ErrorCode::NotFound,
        AgentError::Context(_) => ErrorCode::Storage,
        _ => ErrorCode::InvalidInput,
    };
    IpcError::new(code, e.to_string())
}

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
