//! One thread: its history (each answer with the agent's work above it), the live run,
//! and the composer (Enter sends, Shift+Enter breaks the line, Stop while running).

use std::collections::HashMap;

use art_types::{ConversationMessage, IpcError, MessageRole, MessageStatus, Observation};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::JsCast;

use crate::components::run_card::RunCard;
use crate::ipc::{self, ThreadArgs};
use crate::live::RunView;
use crate::markdown;
use crate::store::Store;
use crate::views::settings::ThreadSettings;

/// Messages per page of history.
const PAGE: usize = 200;

/// Messages kept in the page at first, counted from the newest; scrolling to the top
/// (or "Load earlier messages") adds this many more. A long thread thus costs the DOM
/// only what was looked at.
const WINDOW: usize = 60;

/// Within this many pixels of the bottom, the view follows new content.
const STICKY_PX: i32 = 80;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageArgs<'a> {
    thread_id: &'a str,
    limit: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    before: Option<i64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SendArgs<'a> {
    thread_id: &'a str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EditArgs<'a> {
    thread_id: &'a str,
    message_id: &'a str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TraceArgs<'a> {
    trace_id: &'a str,
}

/// The newest page of stored messages and, per run, what the agent did (folded from
/// observations).
#[derive(Clone, Default)]
struct History {
    messages: Vec<ConversationMessage>,
    runs: HashMap<String, RunView>,
}

/// Pages before the newest, oldest first, and whether older ones may exist.
#[derive(Clone, Default)]
struct Earlier {
    messages: Vec<ConversationMessage>,
    exhausted: bool,
    loading: bool,
}

/// The page of messages before `before` (unix ms). Asks for those up to and including
/// that millisecond, so messages sharing it are not skipped; `merged` drops the repeats.
async fn page_before(thread_id: &str, before: i64) -> Result<Vec<ConversationMessage>, IpcError> {
    let args = PageArgs {
        thread_id,
        limit: PAGE,
        before: Some(before.saturating_add(1)),
    };
    ipc::invoke("list_messages", &args).await
}

/// Earlier pages followed by the newest one, each message once (the newest copy).
fn merged(
    earlier: &[ConversationMessage],
    latest: &[ConversationMessage],
) -> Vec<ConversationMessage> {
    let newest: std::collections::HashSet<&str> =
        latest.iter().map(|m| m.message_id.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    earlier
        .iter()
        .filter(|m| !newest.contains(m.message_id.as_str()))
        .filter(|m| seen.insert(m.message_id.clone()))
        .chain(latest)
        .cloned()
        .collect()
}

/// Where a search hit shows: the message itself, or for a tool call (a TOOL message,
/// not shown on its own) the answer of its run, else the question that started it.
fn focus_target(messages: &[ConversationMessage], id: &str) -> Option<String> {
    let hit = messages.iter().find(|m| m.message_id == id)?;
    if hit.role != MessageRole::Tool {
        return Some(hit.message_id.clone());
    }
    let trace = trace_of(hit)?;
    let of_run = |role| {
        messages
            .iter()
            .find(|m| m.role == role && trace_of(m).as_deref() == Some(trace.as_str()))
            .map(|m| m.message_id.clone())
    };
    of_run(MessageRole::Ai).or_else(|| of_run(MessageRole::User))
}

/// Scroll the message into view and flash it.
fn reveal(message_id: &str) {
    let selector = format!("[data-message-id=\"{message_id}\"]");
    let Ok(Some(element)) = document().query_selector(&selector) else {
        return;
    };
    element.scroll_into_view();
    let classes = element.class_name();
    if !classes.split_whitespace().any(|c| c == "focused") {
        element.set_class_name(&format!("{classes} focused"));
    }
}

async fn load(thread_id: String) -> Result<History, IpcError> {
    let messages: Vec<ConversationMessage> = ipc::invoke(
        "list_messages",
        &PageArgs {
            thread_id: &thread_id,
            limit: PAGE,
            before: None,
        },
    )
    .await?;
    let observations: Vec<Observation> = ipc::invoke(
        "list_observations",
        &ThreadArgs {
            thread_id: &thread_id,
        },
    )
    .await?;
    let mut runs: HashMap<String, RunView> = HashMap::new();
    for o in &observations {
        runs.entry(o.trace_id.clone())
            .or_insert_with(|| RunView::new(&o.thread_id, &o.trace_id))
            .apply_observation(o);
    }
    for run in runs.values_mut() {
        run.finish(None);
    }
    Ok(History { messages, runs })
}

fn trace_of(m: &ConversationMessage) -> Option<String> {
    m.metadata
        .get("traceId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Runs that produced an answer (a checkpoint of one still streaming does not count).
fn answered(messages: &[ConversationMessage]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == MessageRole::Ai && m.status != MessageStatus::Streaming)
        .filter_map(trace_of)
        .collect()
}

/// Copy text to the clipboard through `navigator.clipboard.writeText`.
fn copy(text: &str) {
    let call = || -> Result<(), wasm_bindgen::JsValue> {
        let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into())?;
        let clipboard = js_sys::Reflect::get(&navigator, &"clipboard".into())?;
        let write: js_sys::Function =
            js_sys::Reflect::get(&clipboard, &"writeText".into())?.dyn_into()?;
        write.call1(&clipboard, &text.into()).map(drop)
    };
    if call().is_err() {
        ipc::web_log("the clipboard is not available");
    }
}

/// Clicks on a code block's Copy button (answers are HTML, so one listener per answer
/// serves all its blocks): copy the block's code and say so.
fn copy_code(ev: leptos::ev::MouseEvent) {
    use leptos::web_sys::Element;
    let Some(target) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
        return;
    };
    let Ok(Some(button)) = target.closest(".code-copy") else {
        return;
    };
    let code = button
        .closest(".code-block")
        .ok()
        .flatten()
        .and_then(|block| block.query_selector("code").ok().flatten())
        .and_then(|code| code.text_content());
    if let Some(code) = code {
        copy(&code);
        button.set_text_content(Some("Copied"));
    }
}

/// Model, tokens, time to first token and duration of an answer.
fn footer(m: &ConversationMessage) -> String {
    let meta = &m.metadata;
    let num = |p: &str| meta.pointer(p).and_then(Value::as_u64);
    let mut parts = Vec::new();
    if let Some(model) = meta.get("model").and_then(Value::as_str) {
        parts.push(model.to_owned());
    }
    if let (Some(i), Some(o)) = (num("/usage/inputTokens"), num("/usage/outputTokens")) {
        parts.push(format!("{i} → {o} tokens"));
    }
    if let Some(ttft) = num("/usage/timeToFirstTokenMs") {
        parts.push(format!("first token {ttft} ms"));
    }
    if let Some(total) = num("/usage/totalGenerationTimeMs") {
        parts.push(format!("{:.1} s", total as f64 / 1000.0));
    }
    if m.status == MessageStatus::Interrupted {
        parts.push("stopped".into());
    }
    parts.join(" · ")
}

/// What a message offers besides Copy: Regenerate on the last answer, Edit & resend on
/// questions (both only while the thread is idle).
#[derive(Clone, Copy)]
struct Actions {
    regenerate: Option<Callback<()>>,
    edit: Callback<(String, String)>,
    /// No run of this thread in flight (a memo: changes only when that flips, so the
    /// history is not re-rendered for every streamed token).
    idle: Memo<bool>,
}

/// A question, with Edit & resend turning it into a small form.
#[component]
fn Question(
    message: ConversationMessage,
    edit: Callback<(String, String)>,
    idle: Memo<bool>,
) -> impl IntoView {
    let editing = RwSignal::new(false);
    let text = RwSignal::new(message.content.clone());
    let original = StoredValue::new(message.content.clone());
    let id = StoredValue::new(message.message_id.clone());
    let resend = move || {
        editing.set(false);
        edit.run((id.get_value(), text.get_untracked()));
    };
    view! {
        <article class="message user" data-message-id=message.message_id.clone()>
            <Show when=move || editing.get()
                fallback=move || view! {
                    <div class="bubble">{original.get_value()}</div>
                    <Show when=move || idle.get()>
                        <button class="ghost small edit-button" title="Edit this message and send it again"
                            on:click=move |_| editing.set(true)>"Edit"</button>
                    </Show>
                }>
                <div class="edit-form">
                    <textarea class="edit-input" rows="3" prop:value=move || text.get()
                        on:input=move |ev| text.set(event_target_value(&ev))
                        on:change=move |ev| text.set(event_target_value(&ev))
                        on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                            if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                                ev.prevent_default();
                                resend();
                            } else if ev.key() == "Escape" {
                                editing.set(false);
                            }
                        }></textarea>
                    <p class="muted small">"Sending again replaces this message and everything after it."</p>
                    <div class="edit-actions">
                        <button class="ghost small" on:click=move |_| { text.set(original.get_value()); editing.set(false); }>"Cancel"</button>
                        <button class="primary small resend-button" on:click=move |_| resend()>"Send again"</button>
                    </div>
                </div>
            </Show>
        </article>
    }
}

fn message_view(m: ConversationMessage, run: Option<RunView>, actions: Actions) -> AnyView {
    match m.role {
        MessageRole::User => {
            view! { <Question message=m edit=actions.edit idle=actions.idle /> }.into_any()
        }
        MessageRole::Ai => {
            let html = markdown::to_html_highlighted(&m.content);
            let text = m.content.clone();
            let footer = footer(&m);
            view! {
                <article class="message ai" data-message-id=m.message_id.clone()>
                    {run.map(|run| view! { <RunCard run=run /> })}
                    <div class="answer markdown" inner_html=html on:click=copy_code></div>
                    <footer class="answer-footer">
                        <span class="muted small">{footer}</span>
                        {actions.regenerate.map(|again| view! {
                            <Show when=move || actions.idle.get()>
                                <button id="regenerate-button" class="ghost small" title="Answer the last question again"
                                    on:click=move |_| again.run(())>"Regenerate"</button>
                            </Show>
                        })}
                        <button class="ghost small" on:click=move |_| copy(&text)>"Copy"</button>
                    </footer>
                </article>
            }
            .into_any()
        }
        // Tool calls and results are shown in the run card of their answer.
        MessageRole::Tool | MessageRole::System => ().into_any(),
    }
}

/// A live run's answer as it streams: stable blocks are rendered once and stay in the
/// page untouched; only the last block is rendered again as tokens arrive.
#[component]
fn StreamingAnswer(trace_id: String) -> impl IntoView {
    let store = expect_context::<Store>();
    let text = Memo::new(move |_| {
        store.runs.with(|runs| {
            runs.iter()
                .find(|r| r.trace_id == trace_id)
                .map(|r| r.answer.clone())
                .unwrap_or_default()
        })
    });
    let renderer = StoredValue::new(markdown::Incremental::default());
    let chunks = RwSignal::new(Vec::<String>::new());
    let tail = RwSignal::new(String::new());
    Effect::new(move |_| {
        let step = text.with(|t| renderer.try_update_value(|r| r.advance(t)));
        let Some(step) = step else { return };
        if step.reset {
            chunks.set(Vec::new());
        }
        if !step.chunks.is_empty() {
            chunks.update(|c| c.extend(step.chunks));
        }
        tail.set(step.tail);
    });
    view! {
        <div class="answer markdown" on:click=copy_code>
            <For each=move || chunks.get().into_iter().enumerate() key=|(i, _)| *i
                children=|(_, html)| view! { <div class="md-chunk" inner_html=html></div> } />
            <div class="md-chunk" inner_html=move || tail.get()></div>
        </div>
    }
}

/// The open thread.
#[component]
pub fn ThreadView(thread_id: String) -> impl IntoView {
    let store = expect_context::<Store>();
    let id = StoredValue::new(thread_id.clone());
    let settings_open = RwSignal::new(false);
    let draft = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let history = LocalResource::new(move || {
        let thread = id.get_value();
        let _version = store.version(&thread);
        load(thread)
    });
    let earlier = RwSignal::new(Earlier::default());
    // Older messages may exist while the last page fetched was full.
    let more = move || {
        let latest_full = history
            .get()
            .and_then(|h| h.ok())
            .is_some_and(|h| h.messages.len() >= PAGE);
        earlier.with(|e| !e.exhausted && (latest_full || !e.messages.is_empty()))
    };
    let load_earlier = move || {
        if earlier.with_untracked(|e| e.loading) {
            return;
        }
        let oldest = earlier
            .with_untracked(|e| e.messages.first().map(|m| m.timestamp))
            .or_else(|| {
                history
                    .get_untracked()
                    .and_then(|h| h.ok())
                    .and_then(|h| h.messages.first().map(|m| m.timestamp))
            });
        let Some(oldest) = oldest else { return };
        earlier.update(|e| e.loading = true);
        let thread = id.get_value();
        // The view may be gone when the page arrives (another thread opened): every
        // signal below is touched with `try_`, which does nothing then.
        spawn_local(async move {
            match page_before(&thread, oldest).await {
                Ok(page) => {
                    earlier.try_update(|e| {
                        e.loading = false;
                        // Only repeats of what is shown: nothing older is left.
                        let known: std::collections::HashSet<&str> =
                            e.messages.iter().map(|m| m.message_id.as_str()).collect();
                        let fresh = page.iter().any(|m| !known.contains(m.message_id.as_str()));
                        e.exhausted = page.len() < PAGE || !fresh;
                        let mut all = page;
                        all.append(&mut e.messages);
                        e.messages = all;
                    });
                }
                Err(err) => {
                    earlier.try_update(|e| e.loading = false);
                    problem.try_set(Some(err.message));
                }
            }
        });
    };
    // The rendered window and the scroll position.
    let shown = RwSignal::new(WINDOW);
    let list = NodeRef::<leptos::html::Div>::new();
    let stick = StoredValue::new(true);
    // (scroll height, scroll top) before older messages were put above the view.
    let anchor = StoredValue::new(None::<(i32, i32)>);
    // Earlier pages and the newest one as one list, merged once per change (scrolling
    // and the window checks read it often).
    let messages = Memo::new(move |_| {
        history.with(|loaded| match loaded {
            Some(Ok(h)) => earlier.with(|e| merged(&e.messages, &h.messages)),
            _ => Vec::new(),
        })
    });
    let hidden = move || messages.with(Vec::len) > shown.get();
    let keep_position = move || {
        if let Some(el) = list.get_untracked() {
            anchor.set_value(Some((el.scroll_height(), el.scroll_top())));
        }
    };
    let show_more = move || {
        if earlier.with_untracked(|e| e.loading) {
            return;
        }
        keep_position();
        if !hidden() {
            load_earlier();
        }
        shown.update(|n| *n += WINDOW);
    };
    // After anything that changes the list: keep the reader's place when older
    // messages came in above, else follow the bottom while the reader is there.
    Effect::new(move |_| {
        history.track();
        earlier.track();
        shown.track();
        store.runs.track();
        // The frame may come after the view is gone: `try_` everything.
        request_animation_frame(move || {
            let Some(el) = list.try_get_untracked().flatten() else {
                return;
            };
            match anchor.try_update_value(Option::take).flatten() {
                Some((height, top)) => el.set_scroll_top(top + el.scroll_height() - height),
                None if stick.try_get_value() == Some(true) => {
                    el.set_scroll_top(el.scroll_height())
                }
                None => {}
            }
        });
    });
    // WebKit may deliver a scroll event to the list after its view is gone.
    let on_scroll = move |_| {
        let Some(el) = list.try_get_untracked().flatten() else {
            return;
        };
        let from_bottom = el.scroll_height() - el.scroll_top() - el.client_height();
        stick.set_value(from_bottom < STICKY_PX);
        if el.scroll_top() < STICKY_PX && (hidden() || more()) {
            show_more();
        }
    };
    // A search hit to bring into view: page back until it is loaded, widen the window
    // to include it, then reveal it.
    Effect::new(move |_| {
        let Some(target) = store.focus.get() else {
            return;
        };
        if !history.with(|loaded| matches!(loaded, Some(Ok(_)))) {
            return;
        }
        let found = messages.with(|all| {
            let id = focus_target(all, &target)?;
            let at = all.iter().position(|m| m.message_id == id).unwrap_or(0);
            Some((id, all.len() - at))
        });
        match found {
            Some((message_id, from_end)) => {
                store.focus.set(None);
                if shown.get_untracked() < from_end {
                    shown.set(from_end);
                }
                stick.set_value(false);
                request_animation_frame(move || reveal(&message_id));
            }
            None if more() => load_earlier(),
            None => store.focus.set(None),
        }
    });
    let title = move || {
        store.threads.with(|ts| {
            ts.iter()
                .find(|t| t.thread_id == id.get_value())
                .map(|t| t.title.clone())
                .unwrap_or_default()
        })
    };
    // Live runs whose answer is not (yet) in the loaded history, newest last; a run
    // that failed before answering stays here with its error.
    let live = move || {
        let shown: Vec<String> = history
            .get()
            .and_then(|h| h.ok())
            .map(|h| answered(&h.messages))
            .unwrap_or_default();
        store.runs.with(|runs| {
            runs.iter()
                .filter(|r| r.thread_id == id.get_value() && !shown.contains(&r.trace_id))
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    let running = move || live().into_iter().find(|r| !r.finished).map(|r| r.trace_id);
    // Start a run through `command`; `replaces` when it replaces stored answers.
    let start = move |command: &'static str, text: String, message_id: Option<String>| {
        problem.set(None);
        let thread = id.get_value();
        // The answer may come after the view is gone (another thread opened): only
        // `try_` on the view's own signals from here.
        spawn_local(async move {
            let started = match (command, &message_id) {
                ("edit_and_resend", Some(message_id)) => {
                    let args = EditArgs {
                        thread_id: &thread,
                        message_id,
                        text: &text,
                    };
                    ipc::invoke::<String, _>(command, &args).await
                }
                ("regenerate", _) => {
                    ipc::invoke::<String, _>(command, &ThreadArgs { thread_id: &thread }).await
                }
                _ => {
                    let args = SendArgs {
                        thread_id: &thread,
                        text: &text,
                    };
                    ipc::invoke::<String, _>(command, &args).await
                }
            };
            match started {
                Ok(trace) => {
                    stick.try_set_value(true);
                    if command == "send_message" {
                        draft.try_set(String::new());
                    } else {
                        // Removed messages may sit in earlier pages: start again.
                        earlier.try_set(Earlier::default());
                        shown.try_set(WINDOW);
                        store.forget_finished(&thread, &trace);
                    }
                    store.with_run(&thread, &trace, |_| {});
                }
                Err(e) => {
                    problem.try_set(Some(e.message));
                }
            }
        });
    };
    let send = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() || running().is_some() {
            return;
        }
        start("send_message", text, None);
    };
    let idle = Memo::new(move |_| running().is_none());
    let edit = Callback::new(move |(message_id, text): (String, String)| {
        start("edit_and_resend", text, Some(message_id))
    });
    let regenerate = Callback::new(move |()| start("regenerate", String::new(), None));
    let actions = move |is_last_answer: bool| Actions {
        regenerate: is_last_answer.then_some(regenerate),
        edit,
        idle,
    };
    let stop = move |_| {
        if let Some(trace) = running() {
            spawn_local(async move {
                if let Err(e) =
                    ipc::invoke::<(), _>("cancel_run", &TraceArgs { trace_id: &trace }).await
                {
                    problem.try_set(Some(e.message));
                }
            });
        }
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            send();
        }
    };
    view! {
        <section class="pane thread" id="thread">
            <header class="thread-header">
                <h2 id="thread-title">{title}</h2>
                <button id="settings-button" class="ghost" class:active=move || settings_open.get()
                    on:click=move |_| settings_open.update(|o| *o = !*o)>
                    "Settings"
                </button>
            </header>
            <Show when=move || settings_open.get()>
                <ThreadSettings thread_id=id.get_value() on_close=Callback::new(move |()| settings_open.set(false)) />
            </Show>
            <div class="messages" id="messages" node_ref=list on:scroll=on_scroll>
                <Show when=move || hidden() || more()>
                    <button id="load-earlier" class="ghost small load-earlier"
                        disabled=move || earlier.with(|e| e.loading)
                        on:click=move |_| show_more()>"Load earlier messages"</button>
                </Show>
                <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || history.get().map(|loaded| match loaded {
                        Ok(h) if h.messages.is_empty() && live().is_empty() => view! {
                            <div class="empty-thread">
                                <p>"Ask anything. Open " <strong>"Settings"</strong>
                                   " to pick the provider and model, and the tools the agent may use."</p>
                            </div>
                        }.into_any(),
                        Ok(h) => {
                            let messages = messages.get();
                            let done = answered(&messages);
                            let live_now: Vec<String> = store.runs.with_untracked(|rs| rs.iter().map(|r| r.trace_id.clone()).collect());
                            let last_answer = messages.iter().rev()
                                .find(|m| m.role == MessageRole::Ai)
                                .map(|m| m.message_id.clone());
                            let skip = messages.len().saturating_sub(shown.get());
                            messages.into_iter().skip(skip).map(|m| {
                                let trace = trace_of(&m);
                                let acts = actions(last_answer.as_ref() == Some(&m.message_id));
                                let run = trace.as_ref().and_then(|t| h.runs.get(t).cloned())
                                    .filter(|r| r.plan.is_some() || !r.tools.is_empty() || r.error.is_some());
                                // A run that never answered (failed, or stopped before any text)
                                // shows its card after the question, unless it is shown live.
                                let unanswered = m.role == MessageRole::User
                                    && trace.as_ref().is_some_and(|t| !done.contains(t) && !live_now.contains(t));
                                let streaming_live = m.status == MessageStatus::Streaming
                                    && trace.as_ref().is_some_and(|t| live_now.contains(t));
                                match (m.role, unanswered) {
                                    // Shown by its live card instead.
                                    (MessageRole::Ai, _) if streaming_live => ().into_any(),
                                    (MessageRole::Ai, _) => message_view(m, run, acts),
                                    (MessageRole::User, true) => {
                                        let card = run.map(|run| view! { <article class="message ai"><RunCard run=run /></article> });
                                        view! { {message_view(m, None, acts)} {card} }.into_any()
                                    }
                                    _ => message_view(m, None, acts),
                                }
                            }).collect_view().into_any()
                        }
                        Err(e) => view! { <p class="run-error">{e.message}</p> }.into_any(),
                    })}
                </Suspense>
                // Keyed without the answer: a run's card is rebuilt when its plan, tools,
                // thinking or state change, while the answer streams in place.
                <For each=live key=|r| (r.trace_id.clone(), r.tools.len(), r.finished, r.plan.is_some(), r.thinking.len(), r.error.is_some())
                    children=move |run| {
                        let running = !run.finished;
                        let trace = run.trace_id.clone();
                        let answer_of = trace.clone();
                        view! {
                            <article class="message ai live" data-trace-id=trace>
                                <RunCard run=run />
                                <StreamingAnswer trace_id=answer_of />
                                {running.then(|| view! { <p class="muted small working">"Working…"</p> })}
                            </article>
                        }
                    } />
            </div>
            <footer class="composer">
                {move || problem.get().map(|p| view! { <p class="composer-problem" id="composer-problem">{p}</p> })}
                <textarea id="composer-input" rows="3" placeholder="Message (Enter to send, Shift+Enter for a new line)"
                    prop:value=move || draft.get()
                    on:input=move |ev| draft.set(event_target_value(&ev))
                    on:keydown=on_key></textarea>
                {move || match running() {
                    Some(_) => view! { <button id="stop-button" class="danger" on:click=stop>"Stop"</button> }.into_any(),
                    None => view! { <button id="send-button" class="primary" on:click=move |_| send()>"Send"</button> }.into_any(),
                }}
            </footer>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(id: &str, role: MessageRole, trace: &str, content: &str) -> ConversationMessage {
        ConversationMessage {
            message_id: id.into(),
            thread_id: "t".into(),
            role,
            content: content.into(),
            timestamp: 1,
            status: MessageStatus::Complete,
            metadata: json!({ "traceId": trace }),
        }
    }

    #[test]
    fn pages_merge_in_order_without_repeats_and_newest_copy_wins() {
        let earlier = [
            msg("a", MessageRole::User, "r1", "old"),
            msg("b", MessageRole::Ai, "r1", "old answer"),
            msg("b", MessageRole::Ai, "r1", "old answer"),
            msg("c", MessageRole::User, "r2", "stale copy"),
        ];
        let latest = [
            msg("c", MessageRole::User, "r2", "fresh copy"),
            msg("d", MessageRole::Ai, "r2", "new answer"),
        ];
        let all = merged(&earlier, &latest);
        let ids: Vec<&str> = all.iter().map(|m| m.message_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
        assert_eq!(all[2].content, "fresh copy");
    }

    #[test]
    fn a_tool_call_hit_shows_its_runs_answer_or_question() {
        let messages = [
            msg("q1", MessageRole::User, "r1", "what is 6*7"),
            msg("t1", MessageRole::Tool, "r1", "42"),
            msg("a1", MessageRole::Ai, "r1", "42"),
            msg("q2", MessageRole::User, "r2", "and sqrt(-1)?"),
            msg("t2", MessageRole::Tool, "r2", "Error: not a number"),
        ];
        let target = |id| focus_target(&messages, id);
        assert_eq!(target("q1").as_deref(), Some("q1"));
        assert_eq!(target("a1").as_deref(), Some("a1"));
        assert_eq!(target("t1").as_deref(), Some("a1"));
        // The second run never answered: its question is shown.
        assert_eq!(target("t2").as_deref(), Some("q2"));
        assert_eq!(target("gone"), None);
    }
}
