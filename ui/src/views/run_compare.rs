//! Runs compared and replayed, from the Trace panel: "Replay…" on a run (another model,
//! tools run again or answered from the record) and the diff of two chosen runs — the
//! figures side by side, the plans step by step, the tool calls aligned with the
//! arguments that differ, the answers word by word — copied as Markdown or JSON.

use art_types::commands as cmd;
use art_types::record::diff::{Edit, RunDiff, RunFigures, ToolPair, ToolSide};
use art_types::{IpcError, ModelChoice, ProviderConfig, ReplayMode, Unmatched};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::ipc;
use crate::views::thread::message::copy;

/// The class of a place that compares as `edit`.
fn edit_class(edit: Edit) -> &'static str {
    match edit {
        Edit::Same => "diff-same",
        Edit::Changed => "diff-changed",
        Edit::Removed => "diff-removed",
        Edit::Added => "diff-added",
    }
}

/// A value in a table cell: a text as it is, anything else as compact JSON.
fn shown(value: Option<&serde_json::Value>) -> String {
    match value {
        None => "—".to_owned(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A figure, or "—" when the run did not record it.
fn figure<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| v.to_string())
}

fn figures_table(a: &RunFigures, b: &RunFigures) -> impl IntoView + use<> {
    let model = |f: &RunFigures| match (&f.provider, &f.model) {
        (Some(p), Some(m)) => format!("{p}:{m}"),
        (_, Some(m)) => m.clone(),
        _ => "—".to_owned(),
    };
    let status = |f: &RunFigures| figure(f.status.map(|s| format!("{s:?}").to_lowercase()));
    let seconds =
        |f: &RunFigures| figure(f.duration_ms.map(|ms| format!("{:.2} s", ms as f64 / 1e3)));
    let first_token = |f: &RunFigures| {
        figure(
            f.first_token_ms
                .map(|ms| format!("{:.2} s", ms as f64 / 1e3)),
        )
    };
    let cost = |f: &RunFigures| figure(f.cost_nanos.map(|n| format!("${:.4}", n as f64 / 1e9)));
    let rows: Vec<(&str, String, String)> = vec![
        ("Model", model(a), model(b)),
        ("Ended", status(a), status(b)),
        ("First token", first_token(a), first_token(b)),
        ("Time", seconds(a), seconds(b)),
        (
            "Tokens in",
            a.input_tokens.to_string(),
            b.input_tokens.to_string(),
        ),
        (
            "Tokens out",
            a.output_tokens.to_string(),
            b.output_tokens.to_string(),
        ),
        (
            "Model calls",
            a.llm_calls.to_string(),
            b.llm_calls.to_string(),
        ),
        (
            "Tool calls",
            a.tool_calls.to_string(),
            b.tool_calls.to_string(),
        ),
        ("Cost", cost(a), cost(b)),
    ];
    view! {
        <table class="diff-figures small">
            <thead><tr><th></th><th>"A"</th><th>"B"</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|(name, va, vb)| {
                    let differs = va != vb;
                    view! { <tr class:diff-changed=differs><th>{name}</th><td>{va}</td><td>{vb}</td></tr> }
                }).collect_view()}
            </tbody>
        </table>
    }
}

fn side(call: Option<&ToolSide>) -> String {
    match call {
        None => "—".to_owned(),
        Some(c) if c.failed => format!("failed: {}", shown(c.result.as_ref())),
        Some(c) => shown(c.result.as_ref()),
    }
}

fn tool_row(pair: &ToolPair) -> impl IntoView + use<> {
    let name = pair
        .a
        .as_ref()
        .or(pair.b.as_ref())
        .map(|c| c.tool_name.clone())
        .unwrap_or_default();
    let changes = pair
        .arguments
        .iter()
        .map(|c| {
            view! {
                <li class="diff-changed"><code>{c.path.clone()}</code>": "
                    <del>{shown(c.a.as_ref())}</del>" → "<ins>{shown(c.b.as_ref())}</ins></li>
            }
        })
        .collect_view();
    view! {
        <li class=format!("diff-tool {}", edit_class(pair.edit))>
            <strong>{name}</strong>
            {(!pair.arguments.is_empty()).then(|| view! { <ul class="diff-arguments">{changes}</ul> })}
            <div class="diff-results small">
                <span class:diff-changed=pair.result_differs>"A: "{side(pair.a.as_ref())}</span>
                <span class:diff-changed=pair.result_differs>"B: "{side(pair.b.as_ref())}</span>
            </div>
        </li>
    }
}

/// The diff of runs `a` and `b`, read when shown.
#[component]
pub fn DiffView(a: String, b: String) -> impl IntoView {
    let diff = LocalResource::new(move || {
        let args = cmd::DiffRuns {
            a: a.clone(),
            b: b.clone(),
        };
        async move { ipc::call(&args).await }
    });
    let body = move |d: RunDiff| {
        let markdown = d.markdown();
        let json = serde_json::to_string_pretty(&d).unwrap_or_default();
        let copied = RwSignal::new("");
        view! {
            <div class="diff-view" id="diff-view">
                {figures_table(&d.a, &d.b)}
                {(!d.same_thread()).then(|| view! {
                    <p class="muted small">"The runs are of different threads: their history may differ."</p>
                })}
                {d.alike().then(|| view! { <p class="small" id="diff-alike">"Same plan, same calls, same answer."</p> })}
                <h4>"Plan"</h4>
                <ol class="diff-steps">
                    {d.steps.iter().map(|s| {
                        let text = match (s.edit, &s.a, &s.b) {
                            (Edit::Changed, Some(a), Some(b)) => format!("{a} → {b}"),
                            (_, a, b) => a.clone().or_else(|| b.clone()).unwrap_or_default(),
                        };
                        view! { <li class=edit_class(s.edit)>{text}</li> }
                    }).collect_view()}
                </ol>
                <h4>"Tool calls"</h4>
                <ol class="diff-tools">{d.tools.iter().map(tool_row).collect_view()}</ol>
                <h4>"Answer"</h4>
                <p class="diff-answer" id="diff-answer">
                    {d.answer.iter().map(|w| match w.edit {
                        Edit::Removed => view! { <del>{w.text.clone()}</del> }.into_any(),
                        Edit::Added => view! { <ins>{w.text.clone()}</ins> }.into_any(),
                        _ => view! { <span>{w.text.clone()}</span> }.into_any(),
                    }).collect_view()}
                </p>
                <footer class="diff-export">
                    <button class="small" id="diff-copy-md" on:click=move |_| { copy(&markdown); copied.set("Markdown copied"); }>
                        "Copy as Markdown"</button>
                    <button class="small" id="diff-copy-json" on:click=move |_| { copy(&json); copied.set("JSON copied"); }>
                        "Copy as JSON"</button>
                    <span class="muted small">{move || copied.get()}</span>
                </footer>
            </div>
        }
    };
    view! {
        {move || match diff.get() {
            None => view! { <p class="muted">"Comparing…"</p> }.into_any(),
            Some(Err(error)) => view! { <ErrorCard error /> }.into_any(),
            Some(Ok(d)) => body(d).into_any(),
        }}
    }
}

/// `prompt` as a replay's system prompt: `None` (the thread's) when left blank.
pub fn other_prompt(prompt: &str) -> Option<String> {
    let prompt = prompt.trim();
    (!prompt.is_empty()).then(|| prompt.to_owned())
}

/// "Replay…" on run `trace_id` of `thread_id`: a model (the recent ones, or the
/// thread's), another system prompt or tool set (the thread's when not changed), whether
/// tools run again, and what an unrecorded call gets. `done` is told once the replay
/// started (the thread shows it on its new branch).
#[component]
pub fn ReplayForm(thread_id: String, trace_id: String, done: Callback<()>) -> impl IntoView {
    let models = LocalResource::new(|| async {
        ipc::call(&cmd::GetAppSettings {})
            .await
            .map(|s| s.recent_models)
            .unwrap_or_default()
    });
    // Every tool, and the thread's own set (where the replay's starts from).
    let tool_names = LocalResource::new(|| async {
        ipc::call(&cmd::ListTools {})
            .await
            .map(|tools| tools.into_iter().map(|t| t.name).collect::<Vec<_>>())
            .unwrap_or_default()
    });
    let prompt = RwSignal::new(String::new());
    let other_tools = RwSignal::new(false);
    let tools = RwSignal::new(Vec::<String>::new());
    {
        let thread_id = thread_id.clone();
        spawn_local(async move {
            if let Ok(config) = ipc::call(&cmd::GetThreadConfig { thread_id }).await {
                tools.try_set(config.enabled_tools);
            }
        });
    }
    let model = RwSignal::new(String::new());
    let recorded = RwSignal::new(true);
    let ask = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<IpcError>);
    let (thread, trace) = (StoredValue::new(thread_id), StoredValue::new(trace_id));
    let start = move |_| {
        let provider_config =
            model
                .get_untracked()
                .split_once('\u{1f}')
                .map(|(p, m)| ProviderConfig {
                    provider_name: p.to_owned(),
                    model_id: m.to_owned(),
                    adapter_options: Default::default(),
                });
        let args = cmd::ReplayRun {
            thread_id: thread.get_value(),
            trace_id: trace.get_value(),
            provider_config,
            system_prompt: other_prompt(&prompt.get_untracked()),
            tools: other_tools.get_untracked().then(|| tools.get_untracked()),
            mode: if recorded.get_untracked() {
                ReplayMode::Recorded
            } else {
                ReplayMode::Live
            },
            unmatched: if ask.get_untracked() {
                Unmatched::Ask
            } else {
                Unmatched::NotRecorded
            },
        };
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            let started = ipc::call(&args).await;
            busy.try_set(false);
            match started {
                Ok(_) => done.run(()),
                Err(e) => {
                    error.try_set(Some(e));
                }
            }
        });
    };
    let option = |c: &ModelChoice| {
        let value = format!("{}\u{1f}{}", c.provider, c.model);
        view! { <option value=value>{format!("{} · {}", c.model, c.provider)}</option> }
    };
    view! {
        <div class="replay-form card" id="replay-form">
            <label class="small">"Model "
                <select id="replay-model" prop:value=move || model.get()
                    on:change=move |ev| model.set(event_target_value(&ev))>
                    <option value="">"The thread's model"</option>
                    {move || models.get().map(|list| list.iter().map(option).collect_view())}
                </select>
            </label>
            <textarea id="replay-prompt" class="replay-prompt" rows="2"
                placeholder="System prompt (leave blank for the thread's)"
                prop:value=move || prompt.get()
                on:input=move |ev| prompt.set(event_target_value(&ev))></textarea>
            <label class="small"><input type="checkbox" id="replay-other-tools"
                prop:checked=move || other_tools.get()
                on:change=move |ev| other_tools.set(event_target_checked(&ev)) />
                " Other tools than the thread's"</label>
            <Show when=move || other_tools.get()>
                <div class="replay-tools small" id="replay-tools">
                    {move || tool_names.get().unwrap_or_default().into_iter().map(|name| {
                        let (ticked, toggled, tool) = (name.clone(), name.clone(), name.clone());
                        view! {
                            <label data-tool=tool><input type="checkbox"
                                prop:checked=move || tools.with(|t| t.contains(&ticked))
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    tools.update(|t| {
                                        t.retain(|n| *n != toggled);
                                        if on { t.push(toggled.clone()); }
                                    });
                                } />" "{name}</label>
                        }
                    }).collect_view()}
                </div>
            </Show>
            <label class="small"><input type="checkbox" id="replay-recorded"
                prop:checked=move || recorded.get()
                on:change=move |ev| recorded.set(event_target_checked(&ev)) />
                " Answer tool calls from the record (nothing runs)"</label>
            <Show when=move || recorded.get()>
                <label class="small"><input type="checkbox" id="replay-ask"
                    prop:checked=move || ask.get()
                    on:change=move |ev| ask.set(event_target_checked(&ev)) />
                    " Ask me before running a call the run did not make"</label>
            </Show>
            <button class="primary small" id="replay-start" disabled=move || busy.get()
                on:click=start>"Replay"</button>
            <button class="small" on:click=move |_| done.run(())>"Cancel"</button>
            {move || error.get().map(|error| view! { <ErrorCard error /> })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_prompt_keeps_the_threads() {
        assert_eq!(other_prompt("  \n "), None);
        assert_eq!(
            other_prompt("  Answer in French. "),
            Some("Answer in French.".to_owned())
        );
    }
}
