//! One question to several models at once ("compare"). Each column is a run of its own
//! (its own trace, model and stop) on its own branch of the thread: its own copy of the
//! question, below the message the thread showed, so nothing new is stored — a
//! comparison is branches. The columns run together while the comparison holds the
//! thread; the thread shows the first column's branch until the user keeps another
//! (a branch switch). Local models (Ollama) answer one at a time, as the local singleton
//! wants: a local column waits for the local columns before it ([`queued_behind`] says
//! which), and its run starts when its turn comes.
//!
//! A column's call that asks first waits for the user in the column (`column_wait.rs`)
//! while the others go on — or, where no one can be asked (`art compare`), is refused by
//! policy. The thread's plan checkpoint does not hold the columns: the
//! plans are what the columns show side by side.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use art_types::{AgentFinalResponse, AgentOptions, AgentProps, ProviderConfig};
use tokio_util::sync::CancellationToken;

use super::run::Run;
use super::{PesAgent, check_question};
use crate::agent::AgentError;
use crate::clock;

/// Fewest models a comparison asks.
pub const MIN_COLUMNS: usize = 2;
/// Most models a comparison asks (four columns fit a window side by side).
pub const MAX_COLUMNS: usize = 4;

/// One column of a comparison.
#[derive(Debug, Clone)]
pub struct Column {
    /// Its run's trace id.
    pub trace_id: String,
    /// The model it asks (a provider's own options are the thread's when it is the
    /// thread's provider and none are given).
    pub provider: ProviderConfig,
    /// Stops this column alone.
    pub cancel: CancellationToken,
    /// Whether a call that asks first waits in the column for the user's decision
    /// ([`PesAgent::decide_column`]); with no one to ask (`art compare`), it is refused
    /// by policy and the model told why.
    pub can_ask: bool,
}

/// Told of each column's end as it comes — the column's place and how it ended —
/// before the comparison as a whole ends (the app shows a column's figures at once); of
/// the last column's once the comparison has given the thread back.
pub type ColumnEnded<'a> =
    &'a (dyn Fn(usize, &Result<AgentFinalResponse, AgentError>) + Send + Sync);

/// For each column, the column it waits for (the local one just before it), when it
/// asks a local model: a machine runs one local model at a time.
pub fn queued_behind(
    providers: &[&ProviderConfig],
    is_local: impl Fn(&str) -> bool,
) -> Vec<Option<usize>> {
    let mut last_local = None;
    providers
        .iter()
        .enumerate()
        .map(|(i, provider)| {
            if is_local(&provider.provider_name) {
                last_local.replace(i)
            } else {
                None
            }
        })
        .collect()
}

impl PesAgent {
    /// Ask `props`'s question of every column's model at once, in `props`'s thread:
    /// each column's end (answered, failed or stopped — one column's failure is its
    /// own). `Err` when the comparison cannot start: a bad question, too few or too
    /// many columns, a replay, a thread that is missing, busy or waits on the user.
    /// `props.trace_id` names the comparison (its claim on the thread); `ended` hears
    /// of each column's end as it comes — of the last one once the thread is free again,
    /// so whoever hears it may start the next run there at once.
    pub async fn compare(
        &self,
        props: AgentProps,
        columns: Vec<Column>,
        ended: ColumnEnded<'_>,
    ) -> Result<Vec<Result<AgentFinalResponse, AgentError>>, AgentError> {
        check_question(&props)?;
        if !(MIN_COLUMNS..=MAX_COLUMNS).contains(&columns.len()) {
            return Err(AgentError::InvalidInput(format!(
                "a comparison asks {MIN_COLUMNS} to {MAX_COLUMNS} models, not {}",
                columns.len()
            )));
        }
        if props.options.replay.is_some() {
            return Err(AgentError::InvalidInput(
                "a comparison asks a new question; a replay is a run of its own".into(),
            ));
        }
        if let Some(empty) = columns.iter().find(|c| {
            c.provider.provider_name.trim().is_empty() || c.provider.model_id.trim().is_empty()
        }) {
            return Err(AgentError::InvalidInput(format!(
                "every column needs a provider and a model (column `{}:{}`)",
                empty.provider.provider_name, empty.provider.model_id
            )));
        }
        let thread = self.conversation.thread(&props.thread_id).await?;
        if let Some(waiting) = self.waiting_call(&props.thread_id).await? {
            return Err(waiting.why());
        }
        let context = self.state.load_thread_context(&props.thread_id).await?;
        let comparison = props.trace_id.clone().unwrap_or_else(clock::new_id);
        let claim = self.claims.claim(&props.thread_id, &comparison).await?;
        let started = self
            .start_columns(&props, &columns, &comparison, &context)
            .await;
        let runs = match started {
            Ok(runs) => runs,
            Err(e) => {
                claim.release().await;
                return Err(e);
            }
        };
        let providers: Vec<&ProviderConfig> = columns.iter().map(|c| &c.provider).collect();
        let local: Vec<bool> = providers
            .iter()
            .map(|p| self.engine.is_local(&p.provider_name))
            .collect();
        let behind = queued_behind(&providers, |name| self.engine.is_local(name));
        // Local columns take turns on one lock, in column order (tokio's is fair).
        let local_turn = tokio::sync::Mutex::new(());
        // Columns still running: the last to end is told of after the claim's release.
        let running = AtomicUsize::new(columns.len());
        let answers = runs
            .into_iter()
            .zip(&columns)
            .zip(local)
            .zip(behind)
            .enumerate()
            .map(
                |(place, ((((column_props, mut run), column), local), behind))| {
                    let (config, title, state) = (
                        context.config.clone(),
                        thread.title.clone(),
                        context.state.clone(),
                    );
                    let (local_turn, running) = (&local_turn, &running);
                    async move {
                        let _turn = if local {
                            let turn = local_turn.lock().await;
                            if behind.is_some() {
                                // Its time starts with its turn, not with the comparison.
                                run.run_start_ms = clock::now_ms();
                                run.started = Instant::now();
                            }
                            Some(turn)
                        } else {
                            None
                        };
                        // (A column stopped while it waited ends at once, as stopped.)
                        let out = self
                            .answer(&column_props, run, config, title, state, &column.cancel)
                            .await;
                        let last = running.fetch_sub(1, Ordering::SeqCst) == 1;
                        if !last {
                            ended(place, &out);
                        }
                        (out, last)
                    }
                },
            );
        let outcomes = futures::future::join_all(answers).await;
        claim.release().await;
        let mut answered = Vec::with_capacity(outcomes.len());
        for (place, (out, last)) in outcomes.into_iter().enumerate() {
            if last {
                ended(place, &out);
            }
            answered.push(out);
        }
        Ok(answered)
    }

    /// Each column's run, its question stored below the message the thread shows (in
    /// column order: the first column's question becomes the thread's head).
    async fn start_columns(
        &self,
        props: &AgentProps,
        columns: &[Column],
        comparison: &str,
        context: &art_types::ThreadContext,
    ) -> Result<Vec<(AgentProps, Run)>, AgentError> {
        let branch_point = self.conversation.shown_head_of(&props.thread_id).await?;
        let mut runs = Vec::with_capacity(columns.len());
        for column in columns {
            let column_props = AgentProps {
                trace_id: Some(column.trace_id.clone()),
                options: AgentOptions {
                    provider_config: Some(column.provider.clone()),
                    ..props.options.clone()
                },
                ..props.clone()
            };
            let mut run = Run::new(
                &props.thread_id,
                column.trace_id.clone(),
                context.config.limits,
                context.config.tool_calling,
            );
            run.comparison = Some(comparison.to_owned());
            run.column_asks = column.can_ask;
            // At the thread's start there is no message to hang the questions below (a
            // question without a parent follows the thread's head): the head goes back
            // to the start before each copy after the first.
            if let (None, Some((_, first))) = (&branch_point, runs.first()) {
                let first: &Run = first;
                if let Some(question) = &first.tip {
                    self.conversation
                        .branch_beside(&props.thread_id, question)
                        .await?;
                }
            }
            self.store_question(&column_props, &mut run, branch_point.clone())
                .await?;
            runs.push((column_props, run));
        }
        // The thread shows the first column.
        if branch_point.is_none()
            && runs.len() > 1
            && let Some(first) = runs.first().and_then(|(_, run)| run.tip.clone())
        {
            self.conversation
                .switch_to(&props.thread_id, &first)
                .await?;
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(provider: &str, model: &str) -> ProviderConfig {
        ProviderConfig {
            provider_name: provider.into(),
            model_id: model.into(),
            ..ProviderConfig::default()
        }
    }

    #[test]
    fn local_columns_wait_for_the_local_one_before_them() {
        let columns = [
            model("ollama", "llama3.2"),
            model("openai", "gpt-4o-mini"),
            model("ollama", "qwen3"),
            model("ollama", "gemma3"),
        ];
        let refs: Vec<&ProviderConfig> = columns.iter().collect();
        let behind = queued_behind(&refs, |name| name == "ollama");
        assert_eq!(behind, vec![None, None, Some(0), Some(2)]);
        let remote = queued_behind(&refs[1..2], |name| name == "ollama");
        assert_eq!(remote, vec![None]);
    }
}
