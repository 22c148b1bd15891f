//! The thread settings' "Agent" rows: how far one run may go (LLM calls per step, tool
//! calls, tokens and seconds per run), whether the plan waits for review before any step
//! runs, and how a step offers tools to the model. They
//! edit the form's configuration in place; the backend checks the ranges on save and
//! names the field of any problem.

use art_types::{RunLimits, ThreadConfig, ToolCalling};
use leptos::prelude::*;

/// `text` as a count: empty is `None`, anything else must be a whole number.
fn count(text: &str) -> Result<Option<u64>, ()> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| ())
}

/// A limit's value written into `limits` (`None` where a limit is optional clears it;
/// a required one keeps its value). `false` when the text is not a number.
fn set_limit(limits: &mut RunLimits, field: &str, text: &str) -> bool {
    let Ok(value) = count(text) else {
        return false;
    };
    let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    match field {
        "stepIterations" => {
            if let Some(v) = value {
                limits.step_iterations = small(v);
            }
        }
        "toolCalls" => {
            if let Some(v) = value {
                limits.tool_calls = small(v);
            }
        }
        "tokens" => limits.tokens = value,
        "seconds" => limits.seconds = value.map(small),
        _ => return false,
    }
    true
}

fn shown(limits: &RunLimits, field: &str) -> String {
    match field {
        "stepIterations" => limits.step_iterations.to_string(),
        "toolCalls" => limits.tool_calls.to_string(),
        "tokens" => limits.tokens.map(|n| n.to_string()).unwrap_or_default(),
        "seconds" => limits.seconds.map(|n| n.to_string()).unwrap_or_default(),
        _ => String::new(),
    }
}

/// The rows; `edited` marks the form unsaved, `problem_for` shows the backend's word on
/// a field.
#[component]
pub fn AgentSettings(
    config: RwSignal<Option<ThreadConfig>>,
    edited: Callback<()>,
    problem_for: Callback<&'static str, AnyView>,
) -> impl IntoView {
    let local = RwSignal::new(None::<&'static str>);
    let limit = move |field: &'static str,
                      label: &'static str,
                      placeholder: &'static str,
                      note: &'static str| {
        let id = format!("limit-{field}");
        view! {
            <label for=id.clone()>{label}</label>
            <div>
                <input id=id inputmode="numeric" placeholder=placeholder
                    prop:value=move || config.with(|c| c.as_ref().map(|c| shown(&c.limits, field)).unwrap_or_default())
                    on:change=move |ev| {
                        let text = event_target_value(&ev);
                        let mut ok = true;
                        config.update(|c| if let Some(c) = c { ok = set_limit(&mut c.limits, field, &text) });
                        local.set((!ok).then_some(field));
                        edited.run(());
                    } />
                <p class="muted small">{note}</p>
                {move || (local.get() == Some(field)).then(|| view! { <p class="field-problem">"Write a whole number."</p> })}
                {problem_for.run(match field {
                    "stepIterations" => "limits.stepIterations",
                    "toolCalls" => "limits.toolCalls",
                    "tokens" => "limits.tokens",
                    _ => "limits.seconds",
                })}
            </div>
        }
    };
    view! {
        {limit("stepIterations", "LLM calls per step", "5", "How many times one step may ask the model before it counts as failed.")}
        {limit("toolCalls", "Tool calls per run", "20", "The most tools one answer may run; the answer is still written from what was done.")}
        {limit("tokens", "Token budget", "no limit", "Input and output tokens of every call of a run together; past it, no more steps start.")}
        {limit("seconds", "Time budget", "no limit (seconds)", "Past it, no more steps start (time spent waiting for your approval does not count).")}
        <span class="label">"Plan review"</span>
        <div>
            <label><input type="checkbox" id="plan-checkpoint"
                prop:checked=move || config.with(|c| c.as_ref().is_some_and(|c| c.plan_checkpoint))
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    config.update(|c| if let Some(c) = c { c.plan_checkpoint = on });
                    edited.run(());
                } />
                " Show me the plan before any step runs (edit, reorder or remove steps, or cancel)"</label>
        </div>
        <label for="tool-calling">"Tool calling"</label>
        <div>
            <select id="tool-calling"
                prop:value=move || config.with(|c| match c.as_ref().map(|c| c.tool_calling) {
                    Some(ToolCalling::Text) => "text",
                    _ => "native",
                })
                on:change=move |ev| {
                    let text = event_target_value(&ev) == "text";
                    config.update(|c| if let Some(c) = c {
                        c.tool_calling = if text { ToolCalling::Text } else { ToolCalling::Native };
                    });
                    edited.run(());
                }>
                <option value="native">"The provider's own"</option>
                <option value="text">"Described in the prompt"</option>
            </select>
            <p class="muted small">"Described in the prompt, calls are written as JSON: for models without tool calling. A model whose server refuses tools is asked that way anyway."</p>
        </div>
        <span class="label">"Plans"</span>
        <div>
            <label><input type="checkbox" id="structured-plans"
                prop:checked=move || config.with(|c| c.as_ref().is_some_and(|c| !c.plain_plans))
                on:change=move |ev| {
                    let structured = event_target_checked(&ev);
                    config.update(|c| if let Some(c) = c { c.plain_plans = !structured });
                    edited.run(());
                } />
                " Ask for the plan by its JSON Schema (the provider's structured output)"</label>
            <p class="muted small">"Small local models then write a plan that parses every time. Turned off by itself when the server refuses it."</p>
            <label><input type="checkbox" id="plan-first"
                prop:checked=move || config.with(|c| c.as_ref().is_some_and(|c| c.plan_first))
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    config.update(|c| if let Some(c) = c { c.plan_first = on });
                    edited.run(());
                } />
                " Plan first even without tools"</label>
            <p class="muted small" id="plans-now">{move || config.with(|c| match c.as_ref() {
                Some(c) if c.answers_directly() => "Now: no tools, so each question is answered in one streamed call, without a plan.",
                Some(_) => "Now: each question is planned first, then answered.",
                None => "",
            })}</p>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_take_numbers_and_optional_ones_clear() {
        let mut limits = RunLimits::default();
        assert!(set_limit(&mut limits, "stepIterations", " 8 "));
        assert!(set_limit(&mut limits, "tokens", "50000"));
        assert!(!set_limit(&mut limits, "toolCalls", "many"));
        assert!(set_limit(&mut limits, "toolCalls", ""), "kept");
        assert_eq!((limits.step_iterations, limits.tool_calls), (8, 20));
        assert_eq!(shown(&limits, "tokens"), "50000");
        assert!(set_limit(&mut limits, "tokens", ""));
        assert_eq!(limits.tokens, None);
    }
}
