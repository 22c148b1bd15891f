//! What `art run` prints as a run goes: the plan with its steps, each step as it starts
//! and ends, plan changes, tool calls with their outcome (and a long call's progress,
//! on stderr), errors, and the answer as it
//! streams (thinking too, on request). Observations go through the shared fold
//! (`art_types::record::view`), so the terminal says what the app's run card shows.

use art_types::knowledge::SearchOutput;
use art_types::record::StepStatus;
use art_types::record::view::{Change, RunView, ToolState};
use art_types::{Observation, ObservationType, StreamEvent, StreamEventKind, TokenType};
use serde_json::Value;

use crate::out::{note, noteln, say, sayln};

/// Prints what a run does.
pub struct Printer {
    run: RunView,
    thinking: bool,
    answered: bool,
    /// Thinking was printed and its last line is not ended yet.
    thinking_open: bool,
    /// The run's error was printed (as it happened): the end does not repeat it.
    error_shown: bool,
    /// When the printer started following the run (the question asked, a decision
    /// given), and how long after it the first answer text came.
    started: std::time::Instant,
    first_token: Option<std::time::Duration>,
}

impl Printer {
    /// The observations the printer reads.
    pub const TYPES: [ObservationType; 10] = [
        ObservationType::PlanReview,
        ObservationType::Suspension,
        ObservationType::Approval,
        ObservationType::Plan,
        ObservationType::Step,
        ObservationType::PlanUpdate,
        ObservationType::ToolCall,
        ObservationType::ToolExecution,
        ObservationType::ToolProgress,
        ObservationType::Error,
    ];

    /// A printer for run `trace_id` of `thread_id`; `thinking` prints the model's too.
    pub fn new(thread_id: &str, trace_id: &str, thinking: bool) -> Self {
        Self {
            run: RunView::new(thread_id, trace_id),
            thinking,
            answered: false,
            thinking_open: false,
            error_shown: false,
            started: std::time::Instant::now(),
            first_token: None,
        }
    }

    /// How long the answer's first text took to come, from when the printer started
    /// following the run (`None` before any).
    pub fn first_token(&self) -> Option<std::time::Duration> {
        self.first_token
    }

    /// The run it prints.
    pub fn trace_id(&self) -> &str {
        &self.run.trace_id
    }

    /// Whether the run's error was printed as it happened.
    pub fn error_shown(&self) -> bool {
        self.error_shown
    }

    /// Whether any of the answer was printed.
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// A batch of tokens.
    pub fn stream(&mut self, event: &StreamEvent) {
        if let StreamEventKind::Token { text, token_type } = &event.kind {
            let answer = matches!(
                token_type,
                TokenType::FinalSynthesisLlmResponse | TokenType::LlmResponse
            );
            if answer {
                self.end_thinking();
                self.answered = true;
                if self.first_token.is_none() && !text.is_empty() {
                    self.first_token = Some(self.started.elapsed());
                }
                say!("{text}");
            } else if self.thinking && token_type.is_thinking() && !text.is_empty() {
                note!("{text}");
                self.thinking_open = !text.ends_with('\n');
            }
        }
    }

    /// Whatever follows thinking starts on a line of its own.
    pub fn end_thinking(&mut self) {
        if std::mem::take(&mut self.thinking_open) {
            noteln!();
        }
    }

    fn print_steps(&self) {
        let Some(plan) = &self.run.plan else { return };
        for (i, step) in plan.steps.iter().enumerate() {
            sayln!("  {}. {}", i + 1, step.description);
        }
    }

    /// An observation of the run.
    pub fn observation(&mut self, o: &Observation) {
        if o.trace_id != self.run.trace_id {
            return;
        }
        self.end_thinking();
        match self.run.apply_observation(o) {
            // What could not be read of the plan, and what the run does instead.
            Change::Plan if o.kind == ObservationType::Error => {
                if let Some(unread) = self.run.plan.as_ref().and_then(|p| p.unread.clone()) {
                    sayln!("{unread}");
                }
            }
            Change::Plan if o.kind == ObservationType::Plan => {
                let intent = self.run.plan.as_ref().and_then(|p| p.intent.clone());
                let steps = self.run.plan.as_ref().map_or(0, |p| p.steps.len());
                if intent.is_none() && steps == 0 {
                    return;
                }
                sayln!(
                    "Plan{}",
                    intent.map(|i| format!(": {i}")).unwrap_or_default()
                );
                self.print_steps();
            }
            Change::Step(i) => self.step(i),
            Change::PlanUpdate => {
                let reason = self
                    .run
                    .plan
                    .as_ref()
                    .and_then(|p| p.update.as_ref()?.reason.clone());
                sayln!(
                    "Plan changed{}",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                );
                self.print_steps();
            }
            Change::Tool(i) => {
                let tool = &self.run.tools[i];
                let args = tool.arguments.to_string();
                let outcome = match tool.state {
                    // A long call's progress, as its server says (on stderr).
                    ToolState::Running if o.kind == ObservationType::ToolProgress => {
                        if let Some(progress) = &tool.progress {
                            noteln!("  {} … {progress}", tool.tool_name);
                        }
                        return;
                    }
                    ToolState::Running => return,
                    // A search's passages as the answer cites them, one a line.
                    ToolState::Ok => match tool
                        .output
                        .as_ref()
                        .and_then(|o| SearchOutput::of_tool(&tool.tool_name, o))
                    {
                        Some(found) if found.results.is_empty() => "found nothing".to_owned(),
                        Some(found) => {
                            let mut said = format!("{} passage(s)", found.results.len());
                            for cited in &found.results {
                                said.push_str(&format!(
                                    "\n  [{}] {}, {}",
                                    cited.number, cited.document, cited.place
                                ));
                            }
                            said
                        }
                        None => format!(
                            "ok → {}",
                            tool.output
                                .as_ref()
                                .map(Value::to_string)
                                .unwrap_or_default()
                        ),
                    },
                    ToolState::Error => {
                        format!("error: {}", tool.error.as_deref().unwrap_or_default())
                    }
                };
                // The arguments that ran; an approval's edit says so and what was proposed.
                let edited = match tool.approval.as_ref().filter(|_| tool.edited()) {
                    Some(approval) => {
                        format!(" (edited; the model proposed {})", approval.proposed)
                    }
                    None => String::new(),
                };
                sayln!("Tool {} {args}{edited}: {outcome}", tool.tool_name);
            }
            Change::Waiting => {
                // (A wait on a server's question is said where the question is asked.)
                if let Some(waiting) = self
                    .run
                    .waiting
                    .as_ref()
                    .filter(|w| w.question_id.is_none())
                {
                    sayln!(
                        "Waiting for approval: {} {}",
                        waiting.tool_name,
                        waiting.arguments
                    );
                }
            }
            Change::Review => match self.run.plan.as_ref().and_then(|p| p.review.as_ref()) {
                None => sayln!("Waiting for your word on the plan"),
                Some(r) if !r.approved => sayln!("Plan cancelled"),
                Some(r) if r.edited() => sayln!("Plan approved as edited"),
                Some(_) => sayln!("Plan approved"),
            },
            Change::Decided(i) => {
                let tool = &self.run.tools[i];
                if let Some(decision) = &tool.approval {
                    let verb = if decision.approved {
                        "approved"
                    } else {
                        "denied"
                    };
                    let by = match decision.decided_by {
                        art_types::approval::Decider::User => "",
                        art_types::approval::Decider::Policy => " by the thread's policy",
                    };
                    sayln!("Tool {} {verb}{by}", tool.tool_name);
                }
            }
            Change::Error if o.kind == ObservationType::Error => {
                if let Some((code, message)) = &self.run.error {
                    noteln!("Error {code}: {message}");
                    self.error_shown = true;
                }
            }
            _ => {}
        }
    }

    fn step(&self, i: usize) {
        // Steps of pure reasoning are done by the answer, and marked so once it is
        // written: their line would land inside the answer's text.
        if self.answered {
            return;
        }
        let Some(plan) = &self.run.plan else { return };
        let step = &plan.steps[i];
        let number = i + 1;
        match step.status {
            StepStatus::InProgress => sayln!("Step {number}: {}", step.description),
            StepStatus::Done => sayln!("Step {number} done"),
            status => {
                let reason = plan
                    .outcomes
                    .get(&step.id)
                    .and_then(|o| o.reason.clone())
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                sayln!("Step {number} {}{reason}", status.label());
            }
        }
    }
}
