//! How one message of a thread looks: a question (with Edit & resend), an answer (the
//! agent's run card, Markdown with highlighted code, a footer with model, tokens and
//! timings, Copy, Regenerate), on both the branch switcher (`‹ 2 / 3 ›`) when the
//! message has alternatives and Fork; and the answer of a live run as it streams.

use art_types::commands::HighlightCode;
use art_types::{ConversationMessage, MessageRole, MessageStatus};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::Value;
use wasm_bindgen::JsCast;

use crate::components::run_card::RunCard;
use crate::ipc;
use crate::markdown;
use crate::run_view::RunView;
use crate::store::Store;

use super::rows::Branch;

/// Copy text to the clipboard through `navigator.clipboard.writeText`.
pub(crate) fn copy(text: &str) {
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
pub fn copy_code(ev: leptos::ev::MouseEvent) {
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
        match num("/usage/cachedInputTokens").filter(|c| *c > 0) {
            Some(c) => parts.push(format!("{i} ({c} cached) → {o} tokens")),
            None => parts.push(format!("{i} → {o} tokens")),
        }
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
/// questions, switching to an alternative (all three only while the thread is idle),
/// and Fork.
#[derive(Clone, Copy)]
pub struct Actions {
    /// Answer the last question again (on the last answer only).
    pub regenerate: Option<Callback<()>>,
    /// Ask a question again with new text (id, text), on a branch beside it.
    pub edit: Callback<(String, String)>,
    /// Show the branch of another alternative (its id).
    pub switch: Callback<String>,
    /// A new thread with the history up to a message (its id).
    pub fork: Callback<String>,
    /// No run of this thread in flight (a memo: changes only when that flips, so the
    /// history is not re-rendered for every streamed token).
    pub idle: Memo<bool>,
}

/// `‹ 2 / 3 ›`: where a message stands among its alternatives, and the way to the
/// others (not while the thread answers).
#[component]
fn BranchSwitch(branch: Branch, actions: Actions) -> impl IntoView {
    let Branch {
        index,
        count,
        previous,
        next,
    } = branch;
    let step = move |to: Option<String>,
                     class: &'static str,
                     label: &'static str,
                     title: &'static str| {
        let enabled = to.is_some();
        view! {
            <button class=format!("ghost small {class}") title=title
                disabled=move || !enabled || !actions.idle.get()
                on:click=move |_| if let Some(id) = &to { actions.switch.run(id.clone()) }>{label}</button>
        }
    };
    view! {
        <span class="branch-switch" title="This message has other versions: each keeps what followed it">
            {step(previous, "branch-prev", "‹", "The version before")}
            <span class="branch-position">{format!("{} / {count}", index + 1)}</span>
            {step(next, "branch-next", "›", "The version after")}
        </span>
    }
}

/// Fork from here: a new thread with the history up to this message.
fn fork_button(id: String, actions: Actions) -> impl IntoView {
    view! {
        <button class="ghost small fork-button"
            title="Fork from here: a new thread with the history up to this message and the same settings"
            on:click=move |_| actions.fork.run(id.clone())>"Fork"</button>
    }
}

/// A question, with Edit & resend turning it into a small form.
#[component]
fn Question(
    message: ConversationMessage,
    actions: Actions,
    branch: Option<Branch>,
) -> impl IntoView {
    let Actions { edit, idle, .. } = actions;
    let editing = RwSignal::new(false);
    // A question whose run failed before any answer: shown with why, and Retry.
    let failed = message.status == MessageStatus::Failed;
    // (The run's card, just below, says why; the note keeps it as its tooltip.)
    let failure = message.failure();
    let why = failure
        .as_ref()
        .map(|e| e.message.clone())
        .unwrap_or_default();
    // Its documents longer than the model's window: offered to the thread's knowledge.
    let too_long = failed
        && failure.is_some_and(|e| e.code == art_types::FailureCode::DocumentTooLong)
        && message.attachments.iter().any(|a| !a.is_image());
    let thread_id = message.thread_id.clone();
    let text = RwSignal::new(message.content.clone());
    let original = StoredValue::new(message.content.clone());
    let id = StoredValue::new(message.message_id.clone());
    let attachments = StoredValue::new(message.attachments.clone());
    let resend = move || {
        editing.set(false);
        edit.run((id.get_value(), text.get_untracked()));
    };
    view! {
        <article class="message user" class:failed=failed data-message-id=message.message_id.clone()>
            <Show when=move || editing.get()
                fallback=move || view! {
                    <super::attachments::Attached attachments=attachments.get_value() />
                    <div class="bubble" class:empty=original.get_value().trim().is_empty()>{original.get_value()}</div>
                    <div class="question-actions">
                        {branch.clone().map(|branch| view! { <BranchSwitch branch=branch actions=actions /> })}
                        <Show when=move || idle.get()>
                            <button class="ghost small edit-button" title="Edit this message and send it again (a new branch: this one stays)"
                                on:click=move |_| editing.set(true)>"Edit"</button>
                            {failed.then(|| view! {
                                <button class="ghost small retry-button" title="Ask again (on a new branch beside this one)"
                                    on:click=move |_| edit.run((id.get_value(), original.get_value()))>"Retry"</button>
                            })}
                        </Show>
                        {fork_button(id.get_value(), actions)}
                    </div>
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
                    <p class="muted small">"Sending again starts a new branch here; this message and what followed it stay, one click away (‹ ›)."</p>
                    <div class="edit-actions">
                        <button class="ghost small" on:click=move |_| { text.set(original.get_value()); editing.set(false); }>"Cancel"</button>
                        <button class="primary small resend-button" on:click=move |_| resend()>"Send again"</button>
                    </div>
                </div>
            </Show>
            {failed.then(|| view! {
                <p class="question-failed small" title=why>
                    "Not answered: left out of what later questions send to the model."
                </p>
            })}
            {too_long.then(|| view! {
                <super::offer::KnowledgeOffer thread_id=thread_id question=original.get_value()
                    attachments=attachments.get_value() />
            })}
        </article>
    }
}

/// An answer's HTML: plain at once, then with its code blocks highlighted by the
/// backend (`highlight_code`), which answers after the page has been painted. If it
/// fails the answer stays plain, as it was shown: nothing is lost but colour.
fn highlighted_later(content: &str) -> RwSignal<String> {
    let html = RwSignal::new(markdown::to_html(content));
    if markdown::has_code_block(content) {
        let content = content.to_owned();
        spawn_local(async move {
            let blocks = markdown::code_blocks(&content);
            match ipc::call(&HighlightCode { blocks }).await {
                Ok(highlighted) => {
                    html.try_set(markdown::to_html_highlighted(&content, &highlighted));
                }
                Err(e) => ipc::web_log(&format!("code left unhighlighted: {}", e.message)),
            }
        });
    }
    html
}

/// A stored message (TOOL and SYSTEM messages are shown in their run's card).
pub fn message_view(
    m: ConversationMessage,
    run: Option<RunView>,
    actions: Actions,
    branch: Option<Branch>,
) -> AnyView {
    match m.role {
        MessageRole::User => {
            view! { <Question message=m actions=actions branch=branch /> }.into_any()
        }
        MessageRole::Ai => {
            let html = highlighted_later(&m.content);
            let text = m.content.clone();
            let footer = footer(&m);
            view! {
                <article class="message ai" data-message-id=m.message_id.clone()>
                    {run.map(|run| view! { <RunCard run=run /> })}
                    <div class="answer markdown" inner_html=move || html.get() on:click=copy_code></div>
                    <footer class="answer-footer">
                        {branch.map(|branch| view! { <BranchSwitch branch=branch actions=actions /> })}
                        <span class="muted small">{footer}</span>
                        {actions.regenerate.map(|again| view! {
                            <Show when=move || actions.idle.get()>
                                <button id="regenerate-button" class="ghost small" title="Answer the last question again"
                                    on:click=move |_| again.run(())>"Regenerate"</button>
                            </Show>
                        })}
                        <button class="ghost small" on:click=move |_| copy(&text)>"Copy"</button>
                        {fork_button(m.message_id.clone(), actions)}
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
/// page untouched; only the last block is rendered again as tokens arrive — at most
/// once a frame, and only when the run's own text grew. (Batches come every 16 ms per
/// run whatever the page's frame rate, and every run's batch changes the Store's runs:
/// rendered on each, four columns re-rendered each of their tails sixteen times as often
/// as one answer does.)
#[component]
pub fn StreamingAnswer(trace_id: String) -> impl IntoView {
    let store = expect_context::<Store>();
    let renderer = StoredValue::new(markdown::Incremental::default());
    let chunks = RwSignal::new(Vec::<String>::new());
    let tail = RwSignal::new(String::new());
    let trace_id = StoredValue::new(trace_id);
    // Fed straight from the run's text: no copy of the whole answer per batch.
    let render = move || {
        let step = store
            .runs
            .try_with_untracked(|runs| {
                let id = trace_id.try_get_value()?;
                let run = runs.iter().find(|r| r.trace_id == id)?;
                renderer.try_update_value(|r| r.advance(&run.answer))?
            })
            .flatten();
        let Some(step) = step else { return };
        if step.reset {
            chunks.set(Vec::new());
        }
        if !step.chunks.is_empty() {
            chunks.update(|c| c.extend(step.chunks));
        }
        tail.set(step.tail);
    };
    // The first text at once (a finished run's view shows its answer without a frame's
    // wait), then whatever came before the next frame, once.
    render();
    let queued = StoredValue::new(false);
    Effect::new(move |first: Option<()>| {
        store.runs.track();
        if first.is_none() || queued.get_value() {
            return;
        }
        queued.set_value(true);
        // The frame may come after the view is gone: `try_` everything.
        request_animation_frame(move || {
            if queued.try_set_value(false).is_none() {
                render();
            }
        });
    });
    view! {
        <div class="answer markdown" on:click=copy_code>
            <For each=move || 0..chunks.with(Vec::len) key=|i| *i
                children=move |i| {
                    let html = chunks.with_untracked(|c| c.get(i).cloned().unwrap_or_default());
                    view! { <div class="md-chunk" inner_html=html></div> }
                } />
            <div class="md-chunk" inner_html=move || tail.get()></div>
        </div>
    }
}

/// What a live run is doing now ("Running the calculator tool…"), kept current as its
/// events arrive.
#[component]
pub fn Progress(trace_id: String) -> impl IntoView {
    let store = expect_context::<Store>();
    let text = Memo::new(move |_| {
        store.runs.with(|runs| {
            runs.iter()
                .find(|r| r.trace_id == trace_id)
                .map(RunView::progress)
                .unwrap_or_default()
        })
    });
    view! { <p class="muted small working"><span class="spinner"></span>{text}</p> }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(usage: Value) -> ConversationMessage {
        ConversationMessage {
            message_id: "m".into(),
            thread_id: "t".into(),
            role: MessageRole::Ai,
            content: "Hi".into(),
            timestamp: 0,
            status: MessageStatus::Complete,
            metadata: json!({ "model": "m1", "usage": usage }),
            parent_id: None,
            attachments: Vec::new(),
        }
    }

    #[test]
    fn the_footer_shows_cached_input_apart() {
        let cached =
            answer(json!({ "inputTokens": 420, "cachedInputTokens": 400, "outputTokens": 7 }));
        assert_eq!(footer(&cached), "m1 · 420 (400 cached) → 7 tokens");
        let plain = answer(json!({ "inputTokens": 420, "outputTokens": 7 }));
        assert_eq!(footer(&plain), "m1 · 420 → 7 tokens");
    }
}
