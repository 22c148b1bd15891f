//! The Trace panel of a thread: its recent runs as timelines (one bar per span, coloured
//! by kind, scaled by duration; click one to see its observation), filters by
//! observation type, and Export (format and scope; the backend asks where to save and
//! reports progress). Each run can be replayed, and two chosen runs compared
//! ([`super::run_compare`]).

use art_types::commands as cmd;
use art_types::{ExportDone, ExportRequest, ExportScope, IpcError, Observation, ObservationType};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::ipc;
use crate::store::Store;
use crate::timeline::{Bar, Timeline, timelines};
use crate::views::run_compare::{DiffView, ReplayForm};

fn pretty(o: &Observation) -> String {
    serde_json::to_string_pretty(&o.content).unwrap_or_default()
}

fn seconds(ms: i64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else {
        format!("{:.2} s", ms as f64 / 1000.0)
    }
}

/// One bar of a timeline: label on the left, the bar and its marks on a track.
fn bar_row(bar: Bar, selected: RwSignal<Option<String>>) -> impl IntoView {
    let id = bar.observation_id.clone();
    let x = bar.start * 1000.0;
    let width = (bar.width * 1000.0).max(2.0);
    let class = format!(
        "trace-bar {}{}",
        bar.kind.class(),
        if bar.failed { " failed" } else { "" }
    );
    let marks = bar
        .marks
        .into_iter()
        .map(|m| {
            let mark_id = m.observation_id.clone();
            view! {
                <rect class="trace-mark" x=m.at * 1000.0 - 2.0 y="0" width="4" height="16"
                    on:click=move |ev| { ev.stop_propagation(); selected.set(Some(mark_id.clone())); }>
                    <title>{m.kind.as_str()}</title>
                </rect>
            }
        })
        .collect_view();
    let indent = format!("trace-label depth-{}", bar.depth.min(4));
    view! {
        <div class="trace-row" class:selected=move || selected.get().as_deref() == Some(id.as_str())
            on:click={
                let id = bar.observation_id.clone();
                move |_| selected.set(Some(id.clone()))
            }>
            <span class=indent title=bar.label.clone()>{bar.label.clone()}</span>
            <svg class="trace-track" viewBox="0 0 1000 16" preserveAspectRatio="none">
                <rect class=class x=x y="3" width=width height="10" rx="2"></rect>
                {marks}
            </svg>
            <span class="trace-duration muted small">{seconds(bar.duration_ms)}</span>
        </div>
    }
}

/// What the runs' headers choose: the runs to compare (two at most, the older one
/// giving way) and the run whose replay form is open.
#[derive(Clone, Copy)]
struct Choice {
    compared: RwSignal<Vec<String>>,
    replaying: RwSignal<Option<String>>,
    comparing: RwSignal<bool>,
    replays: Signal<Vec<(String, String)>>,
}

fn timeline_view(
    t: Timeline,
    index: usize,
    selected: RwSignal<Option<String>>,
    choice: Choice,
) -> impl IntoView {
    let tools = t.tool_calls;
    let trace = StoredValue::new(t.trace_id.clone());
    let chosen = move || choice.compared.with(|c| c.contains(&trace.get_value()));
    let original = move || {
        choice.replays.with(|r| {
            r.iter()
                .find(|(replay, _)| *replay == trace.get_value())
                .map(|(_, of)| of.clone())
        })
    };
    view! {
        <section class="trace-run" data-trace-id=t.trace_id.clone()>
            <header class="trace-run-head muted small">
                <span>{format!("Run {} · {} · {tools} tool call(s)", index + 1, seconds(t.duration_ms))}</span>
                <label class="trace-compare" title="Choose two runs to compare">
                    <input type="checkbox" class="compare-run" prop:checked=chosen
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            choice.compared.update(|c| {
                                c.retain(|id| *id != trace.get_value());
                                if on {
                                    c.push(trace.get_value());
                                    if c.len() > 2 { c.remove(0); }
                                }
                            });
                        } />
                    " Compare"
                </label>
                {move || original().map(|of| view! {
                    <button class="small compare-original" on:click=move |_| {
                        choice.compared.set(vec![of.clone(), trace.get_value()]);
                        choice.comparing.set(true);
                    }>"Compare with the original"</button>
                })}
                <button class="small replay-run" on:click=move |_| choice.replaying.set(Some(trace.get_value()))>
                    "Replay…"</button>
            </header>
            {t.bars.into_iter().map(|b| bar_row(b, selected)).collect_view()}
        </section>
    }
}

/// The trace panel for `thread_id`, showing the runs `traces` (the thread's newest); a
/// replay offers to compare it with its original.
#[component]
pub fn TracePanel(
    thread_id: String,
    traces: Signal<Vec<String>>,
    /// The replays among the runs, with the run each replays.
    replays: Signal<Vec<(String, String)>>,
) -> impl IntoView {
    let store = expect_context::<Store>();
    let thread = StoredValue::new(thread_id);
    let observations = LocalResource::new(move || {
        let ids = traces.get();
        let thread = thread.get_value();
        async move {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let args = cmd::ListObservations {
                thread_id: thread,
                trace_ids: Some(ids),
                types: None,
            };
            ipc::call(&args).await
        }
    });
    let hidden = RwSignal::new(Vec::<ObservationType>::new());
    let selected = RwSignal::new(None::<String>);
    let choice = Choice {
        compared: RwSignal::new(Vec::new()),
        replaying: RwSignal::new(None),
        comparing: RwSignal::new(false),
        replays,
    };
    let comparing = choice.comparing;
    let shown_types = move || {
        let hidden = hidden.get();
        ObservationType::ALL
            .into_iter()
            .filter(|t| !hidden.contains(t))
            .collect::<Vec<_>>()
    };
    let detail = move || {
        let id = selected.get()?;
        observations.with(|loaded| {
            loaded
                .as_ref()?
                .as_ref()
                .ok()?
                .iter()
                .find(|o| o.id == id)
                .cloned()
        })
    };
    // Export.
    let format = RwSignal::new("otlp".to_owned());
    let scope = RwSignal::new("thread".to_owned());
    let content = RwSignal::new(false);
    let thinking = RwSignal::new(false);
    let exporting = RwSignal::new(false);
    let outcome = RwSignal::new(None::<Result<Option<ExportDone>, IpcError>>);
    let export = move |_| {
        let last_run = traces.with_untracked(|t| t.last().cloned());
        let scope = match (scope.get_untracked().as_str(), last_run) {
            ("run", Some(id)) => ExportScope::Trace { id },
            ("all", _) => ExportScope::All,
            _ => ExportScope::Thread {
                id: thread.get_value(),
            },
        };
        let request = ExportRequest {
            scope,
            format: format.get_untracked(),
            include_content: content.get_untracked(),
            include_thinking: thinking.get_untracked(),
        };
        exporting.set(true);
        outcome.set(None);
        store.export_progress.set(None);
        spawn_local(async move {
            let done = ipc::call(&cmd::ExportTraces { request }).await;
            exporting.try_set(false);
            outcome.try_set(Some(done));
        });
    };
    view! {
        <section class="trace-panel card" id="trace-panel">
            <div class="trace-filters">
                {ObservationType::ALL.into_iter().map(|t| view! {
                    <label class="trace-filter small">
                        <input type="checkbox" data-type=t.as_str()
                            prop:checked=move || !hidden.get().contains(&t)
                            on:change=move |_| hidden.update(|h| match h.iter().position(|x| *x == t) {
                                Some(i) => { h.remove(i); }
                                None => h.push(t),
                            }) />
                        {t.as_str()}
                    </label>
                }).collect_view()}
            </div>
            <div class="trace-body">
                {move || match observations.get() {
                    None => view! { <p class="muted">"Loading the trace…"</p> }.into_any(),
                    Some(Err(error)) => view! { <ErrorCard error /> }.into_any(),
                    Some(Ok(list)) if list.is_empty() => view! {
                        <p class="muted">"No runs yet: ask something, and each step the agent takes shows here."</p>
                    }.into_any(),
                    Some(Ok(list)) => timelines(&list, &shown_types())
                        .into_iter()
                        .enumerate()
                        .map(|(i, t)| timeline_view(t, i, selected, choice))
                        .collect_view()
                        .into_any(),
                }}
            </div>
            {move || choice.replaying.get().map(|trace_id| view! {
                <ReplayForm thread_id=thread.get_value() trace_id
                    done=Callback::new(move |()| choice.replaying.set(None)) />
            })}
            <div class="trace-diff">
                <button class="small" id="compare-runs"
                    disabled=move || choice.compared.with(|c| c.len() != 2)
                    on:click=move |_| comparing.set(true)>
                    "Compare the two runs"</button>
                {move || {
                    let pair = choice.compared.get();
                    (comparing.get() && pair.len() == 2).then(|| view! {
                        <DiffView a=pair[0].clone() b=pair[1].clone() />
                    })
                }}
            </div>
            {move || detail().map(|o| view! {
                <div class="trace-detail" id="trace-detail">
                    <header class="card-title">
                        <span class="badge">{o.kind.as_str()}</span>
                        <strong>{o.title.clone()}</strong>
                    </header>
                    <pre class="tool-output">{pretty(&o)}</pre>
                </div>
            })}
            <footer class="trace-export">
                <select id="export-format" prop:value=move || format.get()
                    on:change=move |ev| format.set(event_target_value(&ev))>
                    <option value="otlp">"OpenTelemetry (OTLP JSON)"</option>
                    <option value="otlp-proto">"OpenTelemetry (OTLP protobuf, .pb)"</option>
                    <option value="jsonl">"Native JSONL (importable)"</option>
                    <option value="markdown">"Markdown transcript"</option>
                </select>
                <select id="export-scope" prop:value=move || scope.get()
                    on:change=move |ev| scope.set(event_target_value(&ev))>
                    <option value="run">"Last run"</option>
                    <option value="thread">"This thread"</option>
                    <option value="all">"All threads"</option>
                </select>
                <Show when=move || format.with(|f| f.starts_with("otlp"))>
                    <label class="small"><input type="checkbox" id="export-content"
                        prop:checked=move || content.get()
                        on:change=move |ev| content.set(event_target_checked(&ev)) />
                        " Include message content"</label>
                </Show>
                <Show when=move || format.get() == "markdown">
                    <label class="small"><input type="checkbox" id="export-thinking"
                        prop:checked=move || thinking.get()
                        on:change=move |ev| thinking.set(event_target_checked(&ev)) />
                        " Include thinking"</label>
                </Show>
                <button id="export-button" class="primary small" disabled=move || exporting.get()
                    on:click=export>"Export…"</button>
                <Show when=move || exporting.get()>
                    <progress id="export-progress"
                        max=move || store.export_progress.get().map_or(1, |p| p.total.max(1)) as f64
                        value=move || store.export_progress.get().map_or(0, |p| p.done) as f64></progress>
                </Show>
                {move || outcome.get().map(|done| match done {
                    Ok(Some(d)) => view! {
                        <p class="muted small" id="export-done">
                            {format!("Saved {} observation(s) and {} message(s) to {}", d.observations, d.messages, d.path)}
                        </p>
                    }.into_any(),
                    Ok(None) => view! { <p class="muted small">"Export cancelled."</p> }.into_any(),
                    Err(error) => view! { <ErrorCard error id="export-error" /> }.into_any(),
                })}
            </footer>
        </section>
    }
}
