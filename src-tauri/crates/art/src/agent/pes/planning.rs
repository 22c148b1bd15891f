//! Phase 1, planning: one call that yields a title, an intent and a todo list (plus any
//! calls of the first step whose arguments the planner already knows), recorded as
//! TITLE / INTENT / PLAN observations before any step runs.

use std::collections::HashMap;
use std::time::Instant;

use art_types::record::{ErrorContent, PlanContent, PlanStep};
use art_types::{FailureCode, ObservationType, ParsedToolCall, Phase, PromptMessage, PromptRole};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::history;
use super::super::streaming::Ending;
use super::calls::{Call, stage_error, stopped};
use super::run::{Run, Stop, ms_since};
use super::{PesAgent, Setup, history_budget, tools_list};
use crate::clock;
use crate::context::UNTITLED;
use crate::reasoning::output_parser::{self, PlanningOutput, fresh_id};
use crate::reasoning::plan_schema::{MAX_TITLE, PLAN_MAX_TOKENS, plan_schema, refuses_schema};
use crate::reasoning::provider::CallStage;

/// What planning decided.
pub(super) struct Planned {
    /// What the user wants, in the model's words.
    pub intent: Option<String>,
    /// Calls of the first step the planner already wrote.
    pub calls: Vec<ParsedToolCall>,
}

impl PesAgent {
    /// Save that thread `thread_id` asks for plans without a schema (its settings as
    /// saved now, not as the run read them: a change made meanwhile stays).
    async fn remember_plain_plans(&self, thread_id: &str) {
        let saved = async {
            let mut config = self.state.saved(thread_id).await?.0.unwrap_or_default();
            config.plain_plans = true;
            self.state.set_thread_config(thread_id, &config).await
        }
        .await;
        if let Err(e) = saved {
            tracing::warn!("could not remember that the server refuses plan schemas: {e}");
        }
    }

    pub(super) async fn plan(
        &self,
        run: &mut Run,
        setup: &mut Setup,
        cancel: &CancellationToken,
    ) -> Result<Planned, Stop> {
        let values = HashMap::from([("tools", tools_list(&setup.schemas))]);
        let planning_text = self
            .prompts
            .render("pes_planning", &values)
            .map_err(|e| super::AgentError::InvalidInput(e.to_string()))?;
        let planning_system = format!("{}\n\n{planning_text}", setup.system);
        let budget = history_budget(setup.window, &planning_system, &setup.config.generation);
        run.history_left_out = history::fit(&mut setup.history, budget);
        let mut prompt = vec![PromptMessage::text(PromptRole::System, planning_system)];
        prompt.extend(history::to_prompt(&setup.history, &setup.attached));

        let span = clock::new_id();
        let start_ms = clock::now_ms();
        let started = Instant::now();
        let root = run.root_span.clone();
        let names: Vec<String> = setup.schemas.iter().map(|t| t.name.clone()).collect();
        let mut schema = (!setup.config.plain_plans).then(|| plan_schema(&names));
        // A plan is short: a model that rambles is cut off, not waited for.
        let mut generation = setup.config.generation.clone();
        generation.max_tokens = Some(
            generation
                .max_tokens
                .map_or(PLAN_MAX_TOKENS, |m| m.min(PLAN_MAX_TOKENS)),
        );
        let planned = loop {
            let call = Call {
                provider: &setup.provider,
                generation: &generation,
                prompt: prompt.clone(),
                stage: CallStage::Planning,
                phase: Phase::Planning,
                parent_span: &span,
                tools: Vec::new(),
                checkpoint: None,
                schema: schema.clone(),
            };
            let planned = self.llm_call(run, call, cancel).await;
            match &planned.ending {
                // The server does not take a response schema: asked again without, and
                // the thread remembers not to ask for one.
                Ending::Failed(e) if schema.is_some() && refuses_schema(&e.message) => {
                    tracing::info!(
                        "the server refuses the plan's schema ({}); asking in text",
                        e.message
                    );
                    schema = None;
                    self.remember_plain_plans(&run.thread_id).await;
                }
                _ => break planned,
            }
        };
        run.planning_ms = Some(ms_since(started));
        match &planned.ending {
            Ending::Cancelled => return Err(Stop::run(stopped(), Phase::Planning, None)),
            Ending::Failed(e) => return Err(Stop::run(stage_error(e), Phase::Planning, None)),
            Ending::Completed => {}
        }
        let mut plan = output_parser::parse_planning(&planned.text);
        if plan.tool_calls.is_empty() && !planned.tool_calls.is_empty() {
            plan.tool_calls = planned.tool_calls.clone();
        }
        if planned.metadata.ran_out_of_tokens() && (plan.unreadable || !plan.problems.is_empty()) {
            plan.problems.insert(
                0,
                format!(
                    "the model ran out of tokens mid-plan ({} at most)",
                    generation.max_tokens.unwrap_or(PLAN_MAX_TOKENS)
                ),
            );
            plan.unreadable = true;
        }
        if plan.unreadable {
            plan = without_a_plan(plan.problems, &names);
        }
        run.steps = todo_list(&plan);
        self.record_plan(run, &plan, &span, start_ms, &root).await;
        if setup.thread_title == UNTITLED {
            let question = run.question.as_ref().map_or("", |q| q.content.as_str());
            let title = plan
                .title
                .as_deref()
                .filter(|t| plan.problems.is_empty() && sound_title(t, question))
                .map(str::to_owned)
                .or_else(|| crate::context::title_from_question(question));
            if let Some(title) = title
                && let Err(e) = self
                    .conversation
                    .rename_thread(&run.thread_id, &title)
                    .await
            {
                tracing::debug!("could not title the thread: {e}");
            }
        }
        Ok(Planned {
            intent: plan.intent,
            calls: plan.tool_calls,
        })
    }

    async fn record_plan(
        &self,
        run: &Run,
        plan: &PlanningOutput,
        span: &str,
        start_ms: i64,
        root: &str,
    ) {
        let point = |kind, content| {
            run.obs(
                kind,
                content,
                run.span(Phase::Planning, span, Some(root), start_ms, false),
            )
        };
        let mut batch = Vec::new();
        if let Some(title) = &plan.title {
            batch.push(point(ObservationType::Title, json!({ "title": title })));
        }
        if let Some(intent) = &plan.intent {
            batch.push(point(ObservationType::Intent, json!({ "intent": intent })));
        }
        let content = PlanContent::new(
            plan.intent.clone(),
            run.steps.clone(),
            plan.tool_calls.clone(),
        );
        batch.push(run.obs(
            ObservationType::Plan,
            json!(content),
            run.span(Phase::Planning, span, Some(root), start_ms, true),
        ));
        if !plan.problems.is_empty() {
            let title = match (plan.unreadable, plan.steps.is_empty()) {
                (false, _) => "Could not fully read the plan",
                (true, true) => "Could not read the plan: answering without one",
                (true, false) => {
                    "Could not read the plan: one step with the thread's tools instead"
                }
            };
            let mut o = point(
                ObservationType::Error,
                json!(ErrorContent {
                    code: FailureCode::PlanningOutputUnparseable,
                    message: None,
                    phase: Some(Phase::Planning),
                    problems: plan.problems.clone(),
                }),
            );
            o.title = Some(title.into());
            o.metadata = json!({ "recoverable": true });
            batch.push(o);
        }
        if let Err(e) = self.observations.record_all(batch).await {
            tracing::warn!("could not record the plan: {e}");
        }
    }
}

/// The run's todo list: the planner's steps; calls it wrote without any step become
/// one step of their own.
fn todo_list(plan: &PlanningOutput) -> Vec<PlanStep> {
    let mut steps = plan.steps.clone();
    if steps.is_empty() && !plan.tool_calls.is_empty() {
        let mut tools: Vec<String> = plan
            .tool_calls
            .iter()
            .map(|c| c.tool_name.clone())
            .collect();
        tools.dedup();
        steps.push(PlanStep {
            id: fresh_id(&steps),
            description: format!("Call {}", tools.join(", ")),
            status: art_types::record::StepStatus::Pending,
            tools,
            tools_optional: false,
        });
    }
    steps
}

/// What a run does when its plan cannot be read: no plan from the fragments. With
/// tools, one step that may use them all (the model works in one loop of calls);
/// without, no steps (the answer is written at once).
fn without_a_plan(problems: Vec<String>, tools: &[String]) -> PlanningOutput {
    let steps = if tools.is_empty() {
        Vec::new()
    } else {
        vec![PlanStep {
            id: "1".into(),
            description: "Answer the question, using the tools where they help".into(),
            status: art_types::record::StepStatus::Pending,
            tools: tools.to_vec(),
            tools_optional: true,
        }]
    };
    PlanningOutput {
        steps,
        problems,
        unreadable: true,
        ..PlanningOutput::default()
    }
}

/// Whether a plan's title names the thread better than its question would: a few words
/// with letters (not "2,3,4"), at most [`MAX_TITLE`] characters, sharing a word with the
/// question (by its first five letters: "Capitals" for "the capital of France"), so a
/// title about something else ("A question that can be answered multiple times") is not.
fn sound_title(title: &str, question: &str) -> bool {
    let title = title.trim();
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3)
            .map(|w| w.to_lowercase().chars().take(5).collect())
            .collect()
    };
    let asked = words(question);
    let named = words(title);
    !title.is_empty()
        && title.chars().count() <= MAX_TITLE
        && title.split_whitespace().count() <= 10
        && named.iter().any(|w| asked.contains(w))
}

#[cfg(test)]
mod tests {
    use super::sound_title;

    #[test]
    fn a_title_is_sound_when_it_names_what_was_asked() {
        assert!(sound_title("Capitals", "What is the capital of France?"));
        assert!(sound_title(
            "Sum of 19 and 23",
            "What is the sum of 19 + 23?"
        ));
        assert!(!sound_title("2,3,4", "What comes after 1?"));
        assert!(!sound_title(
            "A question that can be answered multiple times.",
            "What is 2+3+4?"
        ));
        assert!(!sound_title("greet", "hi"));
        assert!(!sound_title("", "anything at all"));
        assert!(!sound_title(&"capital ".repeat(20), "capital"));
    }
}
