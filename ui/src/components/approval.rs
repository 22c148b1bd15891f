//! The card of a tool call that waits for the user: the tool, its server and the full
//! arguments the model proposed — editable as JSON, checked against the tool's schema by
//! the backend — with Approve, "Always allow in this thread", Deny (an optional reason
//! goes back to the model as the tool's result) and Stop.

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
        problem.set(None);
        let decided = match choice {
            Choice::Stop => None,
            _ => match proposed
                .with_value(|p| decision(choice, p, &args.get_untracked(), &reason.get_untracked()))
            {
                Ok(d) => Some(d),
                Err(e) => return problem.set(Some(e)),
            },
        };
        busy.set(true);
        let thread_id = thread_id.get_value();
        spawn_local(async move {
            let outcome = match decided {
                None => ipc::call(&cmd::StopWaiting { thread_id }).await,
                Some(decided) => {
                    let args = cmd::DecideApproval {
                        thread_id,
                        decision: decided,
                    };
                    match ipc::call(&args).await {
                        Ok(_) => {
                            store.resume(run.get_value());
                            Ok(())
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            busy.try_set(false);
            if let Err(e) = outcome {
                problem.try_set(Some(e.message));
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
