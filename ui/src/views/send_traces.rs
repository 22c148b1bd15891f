//! "Send traces to": the OTLP/HTTP collector each finished run's trace goes to, how
//! (protobuf or JSON, headers kept in the OS keychain), which threads, with or without
//! what was written, and how many spans wait at most while it is away; above the form,
//! the status line (sent, queued, failing and what to do), asked for again each second.

use std::time::Duration;

use art_types::IpcError;
use art_types::commands as cmd;
use art_types::push::{PushEncoding, PushScope, PushSettings, PushState, PushStatus};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde::Deserialize;

use crate::components::error_card::ErrorCard;
use crate::ipc;
use crate::store::Store;

const POLL: Duration = Duration::from_secs(1);

#[derive(Deserialize)]
struct Problem {
    field: String,
    message: String,
}

/// The status, asked for again while the page is open.
fn watch(status: RwSignal<Option<PushStatus>>) {
    spawn_local(async move {
        let Ok(now) = ipc::call(&cmd::TracePushStatus {}).await else {
            return;
        };
        if status.try_set(Some(now)).is_some() {
            return; // The page was closed.
        }
        set_timeout(move || watch(status), POLL);
    });
}

fn state_class(state: PushState) -> &'static str {
    match state {
        PushState::Off => "off",
        PushState::Idle | PushState::Sending => "ok",
        PushState::Failing => "failing",
    }
}

/// The page.
#[component]
pub fn SendTraces() -> impl IntoView {
    let store = expect_context::<Store>();
    let settings = RwSignal::new(None::<PushSettings>);
    let status = RwSignal::new(None::<PushStatus>);
    let limit = RwSignal::new(String::new());
    // Header rows being written (name, value); `None` while the kept ones stay.
    let headers = RwSignal::new(None::<Vec<(String, String)>>);
    let problems = RwSignal::new(Vec::<(String, String)>::new());
    let failure = RwSignal::new(None::<IpcError>);
    let saved = RwSignal::new(false);
    let loaded = RwSignal::new(false);
    spawn_local(async move {
        match ipc::call(&cmd::GetAppSettings {}).await {
            Ok(app) => {
                limit.try_set(app.trace_push.queue_limit.to_string());
                settings.try_set(Some(app.trace_push));
                loaded.try_set(true);
            }
            Err(e) => {
                failure.try_set(Some(e));
            }
        }
    });
    watch(status);

    let edit = move |change: &dyn Fn(&mut PushSettings)| {
        saved.set(false);
        settings.update(|s| {
            if let Some(s) = s {
                change(s);
            }
        });
    };
    let problem_for = move |field: &'static str| {
        move || {
            problems.with(|ps| {
                ps.iter()
                    .filter(|(f, _)| f == field)
                    .map(|(_, m)| view! { <p class="field-problem" data-field=field>{m.clone()}</p> })
                    .collect_view()
            })
        }
    };
    let save = move |_| {
        let Some(mut chosen) = settings.get_untracked() else {
            return;
        };
        problems.set(Vec::new());
        failure.set(None);
        match limit.get_untracked().trim().parse::<u64>() {
            Ok(n) => chosen.queue_limit = n,
            Err(_) => {
                problems.set(vec![("queueLimit".into(), "a number of spans".into())]);
                return;
            }
        }
        let given = headers.get_untracked().map(|rows| {
            rows.into_iter()
                .filter(|(n, v)| !n.trim().is_empty() || !v.trim().is_empty())
                .collect::<Vec<_>>()
        });
        spawn_local(async move {
            let args = cmd::SetTracePush {
                settings: chosen,
                headers: given,
            };
            match ipc::call(&args).await {
                Ok(now) => {
                    status.try_set(Some(now));
                    saved.try_set(true);
                    if let Ok(app) = ipc::call(&cmd::GetAppSettings {}).await {
                        settings.try_set(Some(app.trace_push));
                    }
                    headers.try_set(None);
                }
                Err(e) => {
                    let listed: Option<Vec<Problem>> = e
                        .details
                        .get("problems")
                        .and_then(|p| serde_json::from_value(p.clone()).ok());
                    match listed {
                        Some(list) => {
                            problems
                                .try_set(list.into_iter().map(|p| (p.field, p.message)).collect());
                        }
                        None => {
                            failure.try_set(Some(e));
                        }
                    }
                }
            }
        });
    };

    view! {
        <section class="pane send-traces" id="send-traces">
            <h1>"Send traces to"</h1>
            <p class="muted">
                "Each run's trace goes to an OpenTelemetry collector when the run ends (Phoenix, \
                 Langfuse, Jaeger, Tempo: anything that takes OTLP over HTTP). Runs wait in a \
                 queue on this computer while the collector is away, and are sent when it is back, \
                 after a restart too."
            </p>
            {move || status.get().map(|s| view! {
                <div id="push-status" class=format!("push-status {}", state_class(s.state))>
                    <span class="dot"></span>
                    <span class="line">{s.line()}</span>
                    {s.hint.clone().map(|hint| view! { <p class="muted small hint">{hint}</p> })}
                </div>
            })}
            {move || failure.get().map(|error| view! { <ErrorCard error /> })}
            // Built once when loaded (not at each edit: rebuilding under a click that
            // follows a change would swallow the click).
            {move || loaded.get().then(|| settings.get_untracked()).flatten().map(|s| {
                let chosen_ids = match &s.scope {
                    PushScope::All => Vec::new(),
                    PushScope::Threads { ids } => ids.clone(),
                };
                let every = matches!(s.scope, PushScope::All);
                view! {
                    <div class="form push-form">
                        <label class="check">
                            <input type="checkbox" id="push-enabled" prop:checked=s.enabled
                                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|s| s.enabled = on) } />
                            "Send each run's trace when it ends"
                        </label>
                        <label for="push-endpoint">"Collector address (OTLP/HTTP)"</label>
                        <input id="push-endpoint" type="url" placeholder="http://localhost:4318"
                            prop:value=s.endpoint.clone()
                            on:change=move |ev| { let url = event_target_value(&ev); edit(&|s| s.endpoint = url.clone()) } />
                        <p class="muted small">"Spans go to …/v1/traces at this address (added when it is not there)."</p>
                        {problem_for("endpoint")}
                        <label for="push-encoding">"Sent as"</label>
                        <select id="push-encoding" on:change=move |ev| {
                            let json = event_target_value(&ev) == "json";
                            edit(&|s| s.encoding = if json { PushEncoding::Json } else { PushEncoding::Protobuf })
                        }>
                            <option value="protobuf" selected=s.encoding == PushEncoding::Protobuf>"Protobuf (every collector takes it)"</option>
                            <option value="json" selected=s.encoding == PushEncoding::Json>"JSON"</option>
                        </select>
                        <fieldset class="push-headers">
                            <legend>"Headers (an API key, an Authorization): kept in the OS keychain"</legend>
                            {move || match headers.get() {
                                None => view! {
                                    <p class="muted small" id="push-headers-kept">
                                        {move || settings.with(|s| {
                                            let kept = s.as_ref().map(|s| s.header_names.join(", ")).unwrap_or_default();
                                            if kept.is_empty() { "None.".to_owned() } else { format!("Kept: {kept} (values never shown).") }
                                        })}
                                    </p>
                                    <button class="ghost small" id="push-headers-edit"
                                        on:click=move |_| headers.set(Some(vec![(String::new(), String::new())]))>
                                        "Replace headers"
                                    </button>
                                }.into_any(),
                                Some(rows) => view! {
                                    {rows.into_iter().enumerate().map(|(i, (name, value))| view! {
                                        <div class="key-row header-row">
                                            <input class="header-name" placeholder="Name" prop:value=name
                                                on:input=move |ev| { let v = event_target_value(&ev); saved.set(false); headers.update_untracked(|h| if let Some(h) = h { h[i].0 = v; }) } />
                                            <input class="header-value" type="password" autocomplete="off" placeholder="Value" prop:value=value
                                                on:input=move |ev| { let v = event_target_value(&ev); saved.set(false); headers.update_untracked(|h| if let Some(h) = h { h[i].1 = v; }) } />
                                        </div>
                                    }).collect_view()}
                                    <button class="ghost small" on:click=move |_| headers.update(|h| if let Some(h) = h { h.push((String::new(), String::new())); })>
                                        "Add a header"
                                    </button>
                                }.into_any(),
                            }}
                            {problem_for("headers")}
                        </fieldset>
                        <fieldset class="push-scope">
                            <legend>"Which threads"</legend>
                            <label class="check">
                                <input type="radio" name="push-scope" id="push-scope-all" prop:checked=every
                                    on:change=move |_| edit(&|s| s.scope = PushScope::All) />
                                "Every thread"
                            </label>
                            <label class="check">
                                <input type="radio" name="push-scope" id="push-scope-chosen" prop:checked=!every
                                    on:change=move |_| edit(&|s| if matches!(s.scope, PushScope::All) { s.scope = PushScope::Threads { ids: Vec::new() } }) />
                                "Only these:"
                            </label>
                            <Show when=move || settings.with(|s| s.as_ref().is_some_and(|s| !matches!(s.scope, PushScope::All)))>
                                <ul class="push-threads">
                                    {store.threads.get().into_iter().map(|t| {
                                        let id = t.thread_id.clone();
                                        let checked = chosen_ids.contains(&id);
                                        view! {
                                            <li><label class="check">
                                                <input type="checkbox" data-thread=id.clone() prop:checked=checked
                                                    on:change=move |ev| {
                                                        let on = event_target_checked(&ev);
                                                        let id = id.clone();
                                                        edit(&|s| if let PushScope::Threads { ids } = &mut s.scope {
                                                            ids.retain(|x| *x != id);
                                                            if on { ids.push(id.clone()); }
                                                        })
                                                    } />
                                                {t.title.clone()}
                                            </label></li>
                                        }
                                    }).collect_view()}
                                </ul>
                            </Show>
                            {problem_for("scope")}
                        </fieldset>
                        <label class="check">
                            <input type="checkbox" id="push-content" prop:checked=s.include_content
                                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|s| s.include_content = on) } />
                            "Include what was written: questions, answers, messages sent to models, tool arguments and results (keys are always removed)"
                        </label>
                        <label for="push-limit">"Spans kept while the collector is away (then the oldest are dropped, and counted)"</label>
                        <input id="push-limit" inputmode="numeric" prop:value=move || limit.get()
                            on:input=move |ev| { saved.set(false); limit.set(event_target_value(&ev)) } />
                        {problem_for("queueLimit")}
                        <div class="key-row">
                            <button class="primary" id="push-save" on:click=save>"Save"</button>
                            <Show when=move || saved.get()><span class="note ok" id="push-saved">"Saved."</span></Show>
                        </div>
                    </div>
                }
            })}
        </section>
    }
}
