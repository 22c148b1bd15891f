//! The cards of a run that waits for the user. A tool call: the tool, its server and the
//! full arguments the model proposed — editable as JSON, checked against the tool's
//! schema by the backend — with Approve, "Always allow in this thread", Deny (an optional
//! reason goes back to the model as the tool's result) and Stop. A plan (the thread asks
//! to review it): its steps one a line, editable, with Run this plan and Cancel.

use art_types::approval::ApprovalDecision;
use art_types::commands as cmd;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;

use crate::ipc;
use crate::run_view::RunView;
use crate::store::Store;

/// What the user chose.
#[derive(Clone, Copy)]
enum Choice {
    Approve,
    Always,
    Deny,
    Stop,
}

/// The decision the form says, or why it cannot be sent (arguments that are not a
/// JSON object).
fn decision(
    choice: Choice,
    proposed: &Value,
    text: &str,
    reason: &str,
) -> Result<ApprovalDecision, String> {
    let arguments = || -> Result<Option<Value>, String> {
        let edited: Value = serde_json::from_str(text)
            .map_err(|e| format!("the arguments are not valid JSON: {e}"))?;
        if !edited.is_object() {
            return Err("the arguments must be a JSON object".into());
        }
        Ok((edited != *proposed).then_some(edited))
    };
    Ok(match choice {
        Choice::Approve | Choice::Stop => ApprovalDecision::Approve {
            arguments: arguments()?,
            always: false,
        },
        Choice::Always => ApprovalDecision::Approve {
            arguments: arguments()?,
            always: true,
        },
        Choice::Deny => ApprovalDecision::Deny {
            reason: Some(reason.trim().to_owned()).filter(|r| !r.is_empty()),
        },
    })
}

/// The waiting call of `run` (which must wait).
#[component]
pub fn ApprovalCard(run: RunView) -> impl IntoView {
    let store = expect_context::<Store>();
    let Some(waiting) = run.waiting.clone() else {
        return ().into_any();
    };
    let proposed = waiting.arguments.clone();
    let args = RwSignal::new(serde_json::to_string_pretty(&proposed).unwrap_or_default());
    let reason = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let thread_id = StoredValue::new(run.thread_id.clone());
    let proposed = StoredValue::new(proposed);
    let run = StoredValue::new(run);
    let act = move |choice: Choice| {
        // The card may be built again under the click (the thread's page reloaded as the
        // run changed): this one's values are then gone, and the new card takes the click.
        let (Some(run), Some(thread_id), Some(text), Some(why)) = (
            run.try_get_value(),
            thread_id.try_get_value(),
            args.try_get_untracked(),
            reason.try_get_untracked(),
        ) else {
            return;
        };
        problem.try_set(None);
        let decided = match choice {
            Choice::Stop => None,
            _ => match proposed.try_with_value(|p| decision(choice, p, &text, &why)) {
                Some(Ok(d)) => Some(d),
                Some(Err(e)) => {
                    problem.try_set(Some(e));
                    return;
                }
                None => return,
            },
        };
        busy.try_set(true);
        store.resume(run.clone());
        // A comparison's column waits where it is (stopped like any column at work);
        // a lone run that waits is the thread's.
        let trace_id = run.trace_id.clone();
        let column = store
            .comparisons
            .with_untracked(|all| all.iter().any(|c| c.has(&trace_id)));
        spawn_local(async move {
            let outcome = match decided {
                None if column => ipc::call(&cmd::CancelRun { trace_id }).await,
                None => ipc::call(&cmd::StopWaiting { thread_id }).await,
                Some(decided) => {
                    let args = cmd::DecideApproval {
                        thread_id,
                        decision: decided,
                        trace_id: column.then_some(trace_id),
                    };
                    ipc::call(&args).await.map(|_| ())
                }
            };
            busy.try_set(false);
            if let Err(e) = outcome {
                // Still waiting: the card comes back (a new one), the banner says why.
                store.show(run);
                store.banner.set(Some(e));
            }
        });
    };
    let schema = serde_json::to_string_pretty(&waiting.input_schema).unwrap_or_default();
    view! {
        <section class="card approval-card" data-tool=waiting.tool_name.clone()>
            <header class="card-title">
                <span class="badge approval-badge">"Approval needed"</span>
                {waiting.server.clone().map(|s| view! { <span class="badge server-badge">{s}</span> })}
                <strong>{waiting.tool_name.clone()}</strong>
            </header>
            <p class="muted small">"The agent wants to run this tool with these arguments. You may edit them first."</p>
            <textarea class="approval-args" rows="6" spellcheck="false"
                prop:value=move || args.get()
                on:input=move |ev| args.set(event_target_value(&ev))></textarea>
            <details class="approval-schema">
                <summary class="muted small">"What the arguments must look like"</summary>
                <pre>{schema}</pre>
            </details>
            <input class="approval-reason" type="text"
                placeholder="Why not (optional, the model reads it if you deny)"
                prop:value=move || reason.get()
                on:input=move |ev| reason.set(event_target_value(&ev)) />
            {move || problem.get().map(|p| view! { <p class="run-error approval-problem">{p}</p> })}
            <div class="approval-actions">
                <button class="primary approve" disabled=move || busy.get()
                    on:click=move |_| act(Choice::Approve)>"Approve"</button>
                <button class="always" disabled=move || busy.get()
                    on:click=move |_| act(Choice::Always)>"Always allow in this thread"</button>
                <button class="danger deny" disabled=move || busy.get()
                    on:click=move |_| act(Choice::Deny)>"Deny"</button>
                <button class="ghost stop" disabled=move || busy.get()
                    on:click=move |_| act(Choice::Stop)>"Stop"</button>
            </div>
        </section>
    }
    .into_any()
}

/// The plan's steps as the form shows them (one a line) and what the user's lines make
/// of them: `None` when nothing changed, else `{"steps": [...]}`; an empty plan cannot
/// be run.
fn plan_edit(proposed: &[String], text: &str) -> Result<Option<Value>, String> {
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if lines.is_empty() {
        return Err("a plan needs a step; to run none, cancel the run".into());
    }
    Ok((lines != proposed).then(|| serde_json::json!({ "steps": lines })))
}

/// The plan of `run`, waiting for the user's word before any step runs: its steps one a
/// line (edit, reorder, remove or add lines), Run this plan, or Cancel the run.
#[component]
pub fn PlanReviewCard(run: RunView) -> impl IntoView {
    let store = expect_context::<Store>();
    let proposed: Vec<String> = run
        .plan
        .as_ref()
        .map(|p| p.steps.iter().map(|s| s.description.clone()).collect())
        .unwrap_or_default();
    let text = RwSignal::new(proposed.join("\n"));
    let problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let thread_id = StoredValue::new(run.thread_id.clone());
    let proposed = StoredValue::new(proposed);
    let run = StoredValue::new(run);
    let act = move |go: bool| {
        // As for a tool call: a card built again under the click leaves it to the new one.
        let (Some(run), Some(thread_id), Some(lines)) = (
            run.try_get_value(),
            thread_id.try_get_value(),
            text.try_get_untracked(),
        ) else {
            return;
        };
        problem.try_set(None);
        let decision = if go {
            match proposed.try_with_value(|p| plan_edit(p, &lines)) {
                Some(Ok(arguments)) => ApprovalDecision::Approve {
                    arguments,
                    always: false,
                },
                Some(Err(e)) => {
                    problem.try_set(Some(e));
                    return;
                }
                None => return,
            }
        } else {
            ApprovalDecision::Deny { reason: None }
        };
        busy.try_set(true);
        let args = cmd::DecideApproval {
            thread_id,
            decision,
            trace_id: None,
        };
        // The run goes on (or ends, cancelled) in the card the user sees.
        store.resume(run.clone());
        spawn_local(async move {
            if let Err(e) = ipc::call(&args).await {
                store.show(run);
                store.banner.set(Some(e));
            }
            busy.try_set(false);
        });
    };
    view! {
        <section class="card approval-card plan-review">
            <header class="card-title">
                <span class="badge approval-badge">"Review the plan"</span>
            </header>
            <p class="muted small">"Nothing has run yet. One step a line: change, reorder, remove or add steps, then run it."</p>
            <textarea class="plan-review-steps" rows="5" spellcheck="false"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            {move || problem.get().map(|p| view! { <p class="run-error approval-problem">{p}</p> })}
            <div class="approval-actions">
                <button class="primary run-plan" disabled=move || busy.get()
                    on:click=move |_| act(true)>"Run this plan"</button>
                <button class="ghost cancel-plan" disabled=move || busy.get()
                    on:click=move |_| act(false)>"Cancel the run"</button>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_form_sends_edits_only_when_they_change_something() {
        let proposed = json!({ "url": "https://a" });
        let same = decision(
            Choice::Approve,
            &proposed,
            "{\n  \"url\": \"https://a\"\n}",
            "",
        );
        assert_eq!(
            same.unwrap(),
            ApprovalDecision::Approve {
                arguments: None,
                always: false
            }
        );
        let edited = decision(Choice::Always, &proposed, r#"{"url": "https://b"}"#, "");
        assert_eq!(
            edited.unwrap(),
            ApprovalDecision::Approve {
                arguments: Some(json!({ "url": "https://b" })),
                always: true
            }
        );
        assert!(decision(Choice::Approve, &proposed, "[1]", "").is_err());
        let steps = ["list".to_owned(), "read".to_owned()];
        assert_eq!(plan_edit(&steps, " list\nread \n\n"), Ok(None));
        assert_eq!(
            plan_edit(&steps, "read\nlist"),
            Ok(Some(json!({ "steps": ["read", "list"] })))
        );
        assert!(plan_edit(&steps, "  \n").is_err());
        assert!(decision(Choice::Approve, &proposed, "{", "").is_err());
        let denied = decision(Choice::Deny, &proposed, "not json", "  too risky ");
        assert_eq!(
            denied.unwrap(),
            ApprovalDecision::Deny {
                reason: Some("too risky".into())
            }
        );
    }
}
