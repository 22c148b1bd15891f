//! What the agent did for one answer, shown inline above it: the plan card, the
//! thinking (collapsible, live), one card per tool call, and errors in plain words.

use art_types::FailureCode;
use leptos::prelude::*;
use serde_json::Value;

use art_types::approval::{ApprovalContent, Decider};
use art_types::record::{PlanUpdateContent, StepStatus};

use crate::components::approval::{ApprovalCard, PlanReviewCard};
use crate::components::error_card::FailureCard;
use crate::components::question::QuestionForm;
use crate::components::sources::{Sources, search_of};
use crate::failure::Failure;
use crate::run_view::{RunView, ToolState, result_images, returned_files};
use crate::views::thread::attachments::Tray;

fn pretty(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// A step's status at a glance (its word is the item's title and `data-status`).
fn step_mark(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Pending => "○",
        StepStatus::InProgress => "◐",
        StepStatus::Done => "✓",
        StepStatus::Failed => "✗",
        StepStatus::Skipped => "–",
    }
}

/// Who decided on a call, in a line.
fn approval_note(approval: &ApprovalContent) -> String {
    let mut note = match (approval.approved, approval.decided_by) {
        (true, _) => "Approved by you".to_owned(),
        (false, Decider::User) => "Denied by you".to_owned(),
        (false, Decider::Policy) => "Not run: this thread's policy denies this tool".to_owned(),
    };
    if approval.edited() {
        note.push_str(", with edited arguments");
    }
    if approval.always {
        note.push_str(" (always in this thread)");
    }
    if let Some(reason) = approval.reason.as_deref().filter(|r| !r.is_empty())
        && approval.decided_by == Decider::User
    {
        note.push_str(": ");
        note.push_str(reason);
    }
    note
}

/// What the latest plan change did, in a line.
/// Whether `run` is kept waiting on question `question_id` (after a restart, a run
/// whose call's question waited goes on when it is answered).
fn kept_on(run: &RunView, question_id: &str) -> bool {
    run.waiting
        .as_ref()
        .is_some_and(|w| w.question_id.as_deref() == Some(question_id))
}

fn update_note(update: &PlanUpdateContent) -> String {
    let mut parts = Vec::new();
    for (count, what) in [
        (update.added.len(), "added"),
        (update.changed.len(), "changed"),
        (update.removed.len(), "removed"),
    ] {
        if count > 0 {
            parts.push(format!("{count} step(s) {what}"));
        }
    }
    let reason = update
        .reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let when = if update.step_id.is_some() {
        "while it ran"
    } else {
        "before it ran"
    };
    format!("Plan changed {when} — {}{reason}", parts.join(", "))
}

/// The agent's work for one run. `run` is a snapshot (re-rendered on change).
#[component]
pub fn RunCard(run: RunView) -> impl IntoView {
    // A plan the model left empty (no title, intent or steps) says nothing: not shown.
    // While the model plans, its draft (the title and the steps written so far).
    let drafting = run.plan.is_none() && run.draft.is_some();
    let plan = run.plan.clone().or_else(|| run.draft.clone()).filter(|p| {
        p.title.is_some() || p.intent.is_some() || !p.steps.is_empty() || p.unread.is_some()
    });
    let plan = plan.map(|plan| {
        view! {
            <section class="card plan-card">
                <header class="card-title">
                    <span class="badge">{if drafting { "Planning…" } else { "Plan" }}</span>
                    {plan.title.clone().map(|t| view! { <strong class="plan-title">{t}</strong> })}
                </header>
                {plan.intent.clone().map(|i| view! { <p class="plan-intent">{i}</p> })}
                {plan.unread.clone().map(|u| view! { <p class="muted small plan-unread">{u}</p> })}
                <ol class="plan-steps">
                    {plan.steps.into_iter().map(|s| {
                        let status = s.status;
                        let class = format!("step {}", status.label().replace(' ', "-"));
                        view! {
                            <li class=class data-status=status.label() title=status.label()>
                                <span class="step-mark" aria-hidden="true">{step_mark(status)}</span>
                                {s.description}
                            </li>
                        }
                    }).collect_view()}
                </ol>
                // An edit made in review is said by the line below, not as a change.
                {plan.update.filter(|_| !plan.review.as_ref().is_some_and(|r| r.edited()))
                    .map(|u| view! { <p class="muted small plan-update">{update_note(&u)}</p> })}
                {plan.review.as_ref().filter(|r| r.approved).map(|r| view! {
                    <p class="muted small plan-reviewed">{if r.edited() { "You edited this plan before it ran." } else { "You reviewed this plan before it ran." }}</p>
                })}
            </section>
        }
    });
    let thinking = (!run.thinking.is_empty()).then(|| {
        let open = !run.finished;
        view! {
            <details class="card thinking" open=open>
                <summary>{if run.finished { "Thinking" } else { "Thinking…" }}</summary>
                <pre class="thinking-text">{run.thinking.clone()}</pre>
            </details>
        }
    });
    let tools = run
        .tools
        .iter()
        .map(|tool| {
            let waits = run
                .waiting
                .as_ref()
                .is_some_and(|w| w.call_id == tool.call_id && w.question_id.is_none());
            let asks = tool.question.as_ref().is_some_and(|q| {
                q.outcome.is_none() && (!run.finished || kept_on(&run, &q.asked.question_id))
            });
            let (class, label) = match tool.state {
                ToolState::Running if waits => ("waiting", "waiting for approval"),
                ToolState::Running if asks => ("waiting", "waiting for your answer"),
                ToolState::Running => ("running", "running"),
                ToolState::Ok => ("ok", "ok"),
                ToolState::Error => ("error", "error"),
            };
            // A knowledge search shows its sources rather than its raw result.
            let search = tool.output.as_ref().and_then(|o| search_of(&tool.tool_name, o));
            let result = match (&tool.output, &tool.error, &search) {
                (_, Some(error), _) => Some(view! { <pre class="tool-error">{error.clone()}</pre> }.into_any()),
                (_, None, Some(found)) => found.results.is_empty().then(|| {
                    view! { <p class="muted small search-note">"No passage matched."</p> }.into_any()
                }),
                (Some(output), None, None) => Some(view! { <pre class="tool-output">{pretty(output)}</pre> }.into_any()),
                _ => None,
            };
            view! {
                <section class=format!("card tool-card {class}") data-tool=tool.tool_name.clone()>
                    <header class="card-title">
                        <span class="badge">"Tool"</span>
                        {tool.mcp.as_ref().map(|m| view! { <span class="badge server-badge">{m.server.clone()}</span> })}
                        <strong>{tool.tool_name.clone()}</strong>
                        <span class=format!("tool-status {class}")>{label}</span>
                        {match &tool.recorded_from {
                            Some(run) => view! {
                                <span class="badge recorded-badge" title=format!("Answered from run {run}'s record: nothing ran")>
                                    "recorded"</span>
                            }.into_any(),
                            None => tool.duration_ms.map(|ms| view! { <span class="muted small">{format!("{ms} ms")}</span> }).into_any(),
                        }}
                    </header>
                    {tool.approval.as_ref().map(|a| view! { <p class="muted small tool-approval">{approval_note(a)}</p> })}
                    <pre class="tool-args">{pretty(&tool.arguments)}</pre>
                    {tool.progress.clone().filter(|_| tool.state == ToolState::Running && !run.finished).map(|p| {
                        let said = p.to_string();
                        match p.fraction() {
                            Some(done) => view! {
                                <p class="tool-progress"><progress max="1" value=done.to_string()></progress>" "<span class="muted small">{said}</span></p>
                            }.into_any(),
                            None => view! { <p class="tool-progress"><progress></progress>" "<span class="muted small">{said}</span></p> }.into_any(),
                        }
                    })}
                    {tool.question.clone().map(|card| {
                        let kept = (run.finished && kept_on(&run, &card.asked.question_id))
                            .then(|| run.clone());
                        let live = !run.finished || kept.is_some();
                        match kept {
                            Some(kept) => view! { <QuestionForm card live kept /> }.into_any(),
                            None => view! { <QuestionForm card live /> }.into_any(),
                        }
                    })}
                    {result}
                    {tool.result.as_ref().map(result_images).unwrap_or_default().into_iter().map(|(mime, data)| view! {
                        <img class="tool-image" alt=format!("{mime} from {}", tool.tool_name) src=format!("data:{mime};base64,{data}") />
                    }).collect_view()}
                    {returned(&tool.tool_name, tool.result.as_ref())}
                    {search.map(|found| found.results).filter(|s| !s.is_empty())
                        .map(|sources| view! { <Sources sources /> })}
                </section>
            }
        })
        .collect_view();
    let error = run.error.clone().map(|(code, message)| {
        if code == FailureCode::Cancelled {
            view! { <p class="run-note" data-code=code.to_string()>"Stopped."</p> }.into_any()
        } else {
            view! { <div class="run-error"><FailureCard failure=Failure::of_run(&code, &message) /></div> }
                .into_any()
        }
    });
    let left_out = (run.history_left_out > 0).then(|| {
        view! {
            <p class="run-note history-left-out">
                {format!(
                    "{} earlier message(s) left out to fit the model's context window.",
                    run.history_left_out
                )}
            </p>
        }
    });
    let direct = run.direct().then(|| {
        view! {
            <p class="run-note muted small answered-directly">
                "Answered directly: no tools, so no plan (Settings → Plans to plan anyway)."
            </p>
        }
    });
    let approval = run
        .waiting
        .as_ref()
        .is_some_and(|w| w.question_id.is_none())
        .then(|| view! { <ApprovalCard run=run.clone() /> });
    let review = run
        .waits_for_review()
        .then(|| view! { <PlanReviewCard run=run.clone() /> });
    view! { <div class="run-card">{left_out}{direct}{plan}{thinking}{review}{tools}{approval}{error}</div> }
}

/// "Attach" for each file a tool returned (images, embedded resources), when the card
/// is in an open thread: one click puts it on the next question.
fn returned(tool: &str, result: Option<&serde_json::Value>) -> Option<impl IntoView + use<>> {
    let tray = use_context::<Tray>()?;
    let files = returned_files(tool, result?);
    (!files.is_empty()).then(|| {
        view! {
            <div class="returned-files">
                {files.into_iter().map(|file| {
                    let (name, data) = (file.name.clone(), file.data);
                    view! {
                        <button class="ghost small attach-returned" title="Attach to the next question"
                            on:click=move |_| tray.attach(name.clone(), data.clone())>
                            {format!("Attach {}", file.name)}
                        </button>
                    }
                }).collect_view()}
            </div>
        }
    })
}
