//! Phase 3, the answer: one call streams it from the plan, what each step produced and
//! every tool result (checkpointed as it streams); then the answer, the steps done by it,
//! the state and FINAL_RESPONSE are saved.

use std::collections::HashMap;
use std::time::Instant;

use art_types::record::StepStatus;
use art_types::{
    AgentFinalResponse, ConversationMessage, MessageRole, MessageStatus, ObservationType, Phase,
    PromptMessage, PromptRole,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::history;
use super::super::streaming::Ending;
use super::calls::{Call, stage_error, stopped};
use super::exchange::{plan_text, results_text};
use super::run::{Run, Stop, ms_since};
use super::{PesAgent, Setup, history_budget};
use crate::clock;
use crate::context::MessageOptions;
use crate::reasoning::output_parser;
use crate::reasoning::provider::CallStage;

impl PesAgent {
    /// Stream the answer; the answer message it saved.
    pub(super) async fn synthesize(
        &self,
        run: &mut Run,
        setup: &Setup,
        intent: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(ConversationMessage, art_types::LlmMetadata), Stop> {
        // A direct answer has no plan, steps or results to be told of.
        let system = if run.direct {
            setup.system.clone()
        } else {
            let values = HashMap::from([
                ("intent", intent.unwrap_or("(not stated)").to_owned()),
                ("steps", plan_text(run, usize::MAX)),
                ("tool_results", results_text(&run.results)),
            ]);
            let synthesis_text = self
                .prompts
                .render("pes_synthesis", &values)
                .map_err(|e| super::AgentError::InvalidInput(e.to_string()))?;
            format!("{}\n\n{synthesis_text}", setup.system)
        };
        // The active branch as it is now: with this run's tool calls and results (a
        // direct answer added none to what the run read at its start).
        let mut history_now = if run.direct && run.results.is_empty() {
            setup.history.clone()
        } else {
            self.conversation
                .path_to(
                    &run.thread_id,
                    run.tip.as_deref(),
                    MessageOptions {
                        limit: Some(setup.limit as usize + run.results.len()),
                        before: None,
                    },
                )
                .await?
        };
        let budget = history_budget(setup.window, &system, &setup.config.generation);
        let left_out = history::fit(&mut history_now, budget);
        run.history_left_out = run.history_left_out.max(left_out);
        let mut prompt = vec![PromptMessage::text(PromptRole::System, system)];
        prompt.extend(history::to_prompt(&history_now, &setup.attached));
        let provider = &setup.provider;
        let answer = ConversationMessage {
            message_id: clock::new_id(),
            thread_id: run.thread_id.clone(),
            role: MessageRole::Ai,
            content: String::new(),
            timestamp: clock::now_ms(),
            status: MessageStatus::Streaming,
            metadata: json!({ "traceId": run.trace_id, "provider": provider.provider_name, "model": provider.model_id }),
            parent_id: run.tip.clone(),
            attachments: Vec::new(),
        };
        let span = clock::new_id();
        let start_ms = clock::now_ms();
        let started = Instant::now();
        let call = Call {
            provider,
            generation: &setup.config.generation,
            prompt,
            stage: CallStage::Synthesis,
            phase: Phase::Synthesis,
            parent_span: &span,
            tools: Vec::new(),
            checkpoint: Some(answer.clone()),
            schema: None,
        };
        let synthesized = self.llm_call(run, call, cancel).await;
        run.synthesis_ms = Some(ms_since(started));
        let mut partial = answer.clone();
        partial.content = synthesized.text.clone();
        match &synthesized.ending {
            Ending::Cancelled => {
                return Err(Stop::run(stopped(), Phase::Synthesis, Some(partial)));
            }
            Ending::Failed(e) => {
                return Err(Stop::run(stage_error(e), Phase::Synthesis, Some(partial)));
            }
            Ending::Completed => {}
        }
        let (text, _) = output_parser::parse_synthesis(&synthesized.text);
        let root = run.root_span.clone();
        let mut obs = run.obs(
            ObservationType::Synthesis,
            json!({ "length": text.len() }),
            run.span(Phase::Synthesis, &span, Some(&root), start_ms, true),
        );
        obs.metadata = json!({ "provider": provider.provider_name, "model": provider.model_id });
        self.record(obs).await;
        let mut message = answer;
        message.content = text;
        Ok((message, synthesized.metadata))
    }

    /// The run succeeded: steps of pure reasoning are done (by the answer), the answer
    /// and state are saved, FINAL_RESPONSE closes the run's span.
    pub(super) async fn finalise(
        &self,
        run: &mut Run,
        mut message: ConversationMessage,
        usage: art_types::LlmMetadata,
        state: &art_types::AgentState,
    ) -> Result<AgentFinalResponse, Stop> {
        for index in 0..run.steps.len() {
            if run.steps[index].status != StepStatus::Pending {
                continue;
            }
            // A step of pure reasoning is done by the answer; one that named tools that
            // never ran (none of them available) was not done.
            let tools = &run.steps[index].tools;
            if tools.is_empty() {
                self.record_point(run, index, StepStatus::Done, None, None)
                    .await;
            } else {
                let reason = format!("not run: {} not available", tools.join(", "));
                self.record_point(run, index, StepStatus::Skipped, None, Some(reason))
                    .await;
            }
        }
        let status = run.status(None);
        message.status = MessageStatus::Complete;
        message.metadata = json!({
            "traceId": run.trace_id,
            "provider": message.metadata["provider"],
            "model": message.metadata["model"],
            "usage": usage,
            "status": status,
        });
        self.conversation
            .add_messages(&run.thread_id, std::slice::from_ref(&message))
            .await?;
        if self
            .state
            .save_state_if_modified(&run.thread_id, state)
            .await?
        {
            self.record(run.obs(
                ObservationType::StateUpdate,
                json!({ "implicit": true }),
                None,
            ))
            .await;
        }
        let metadata = run.metadata(status, None);
        let root = run.root_span.clone();
        let root_span = run.span(Phase::Run, &root, None, run.run_start_ms, true);
        self.record(run.obs(
            ObservationType::FinalResponse,
            json!({ "messageId": message.message_id, "metadata": metadata }),
            root_span,
        ))
        .await;
        Ok(AgentFinalResponse {
            response: message,
            metadata,
        })
    }
}
