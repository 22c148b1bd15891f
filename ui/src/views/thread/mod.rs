//! One thread: its history (each answer with the agent's work above it), the live run,
//! and the composer (Enter sends, Shift+Enter breaks the line, Stop while running).
//!
//! Long threads stay light: history is fetched in pages (with the runs of each page's
//! messages only) and only a [`window::Window`] of at most 100 messages is in the DOM.

pub(crate) mod attachments;
mod compare;
mod composer;
mod header;
mod history;
pub(crate) mod message;
mod offer;
pub(crate) mod picker;
mod rows;
mod scroll;
mod slash;
mod window;

use art_types::IpcError;
use art_types::commands as cmd;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::components::run_card::RunCard;
use crate::ipc;
use crate::run_view::RunView;
use crate::store::Store;
use crate::views::settings::ThreadSettings;
use crate::views::trace::TracePanel;
use compare::ComparisonPanel;
use composer::Composer;
use header::ThreadHeader;
use history::{Earlier, Page, answered, asked, focus_target, merged, trace_of};
use message::{Actions, Progress, StreamingAnswer, message_view};
use rows::{Row, live_key, recent, replays, rows};
use scroll::{reading_position, restore_position, reveal};
use window::Window;

/// Runs the trace panel shows (the newest).
const TRACE_RUNS: usize = 20;

/// Within this many pixels of an edge, the view follows new content (bottom) or
/// slides the window (either edge).
const EDGE_PX: i32 = 80;

/// How a run starts: a new question, an edited one, or the last one answered again.
enum Start {
    Send(String, Vec<art_types::Attachment>),
    Edit { message_id: String, text: String },
    Regenerate,
}

/// Where the newest page is.
#[derive(Clone, PartialEq)]
enum Loaded {
    Loading,
    Failed(IpcError),
    Ready,
}

/// The open thread.
#[component]
pub fn ThreadView(thread_id: String) -> impl IntoView {
    let store = expect_context::<Store>();
    let id = StoredValue::new(thread_id.clone());
    let settings_open = RwSignal::new(false);
    let trace_open = RwSignal::new(false);
    let draft = RwSignal::new(String::new());
    let tray = RwSignal::new(Vec::<art_types::Attachment>::new());
    let problem = RwSignal::new(None::<IpcError>);
    provide_context(attachments::Viewing(RwSignal::new(None)));
    // The thread's model, read again when its Settings close (they may have changed it).
    let model = picker::CurrentModel::new();
    provide_context(model);
    Effect::new(move |_| {
        if !settings_open.get() {
            model.load(id.get_value());
        }
    });
    provide_context(attachments::Tray {
        files: tray,
        problem,
        draft,
    });
    // Files dropped on the window join this thread's tray.
    Effect::new(move |_| {
        if let Some(picked) = store.dropped.get() {
            store.dropped.set(None);
            attachments::take(picked, tray, problem);
        }
    });

    // The newest page, reloaded when the thread's messages change; the page shown so
    // far stays until the new one is there (no flash, the list is not rebuilt).
    let latest = RwSignal::new(None::<Result<Page, IpcError>>);
    let loads = StoredValue::new(0_u64);
    Effect::new(move |_| {
        let thread = id.get_value();
        let _version = store.version(&thread);
        let ticket = loads.get_value() + 1;
        loads.set_value(ticket);
        spawn_local(async move {
            let page = history::newest(&thread).await;
            // Only the last load counts; the view may be gone (`try_`).
            if loads.try_get_value() == Some(ticket) {
                latest.try_set(Some(page));
            }
        });
    });
    let earlier = RwSignal::new(Earlier::default());
    let window = RwSignal::new(Window::newest());
    // Another branch shown: the earlier pages loaded belong to the old one.
    Effect::new(move |previous: Option<u64>| {
        let now = store.switch_version(&id.get_value());
        if previous.is_some_and(|p| p != now) {
            earlier.set(Earlier::default());
            window.set(Window::newest());
        }
        now
    });
    // Earlier pages and the newest one as one list, merged once per change.
    let messages = Memo::new(move |_| {
        latest.with(|loaded| match loaded {
            Some(Ok(page)) => earlier.with(|e| merged(&e.page.messages, &page.messages)),
            _ => Vec::new(),
        })
    });
    // Older messages may exist while the last page fetched was full.
    let more = move || {
        let latest_full = latest.with(|l| {
            l.as_ref()
                .and_then(|p| p.as_ref().ok())
                .is_some_and(|p| p.messages.len() >= history::PAGE)
        });
        earlier.with(|e| !e.exhausted && (latest_full || !e.page.messages.is_empty()))
    };
    let list = NodeRef::<leptos::html::Div>::new();
    // Follow the bottom while the reader is there.
    let stick = StoredValue::new(true);
    // The reading position to restore after the window slides.
    let anchor = StoredValue::new(None::<(String, i32)>);
    let slide_to = move |next: Window| {
        if let Some(el) = list.get_untracked() {
            anchor.set_value(reading_position(&el));
        }
        window.set(next);
    };
    // Fetch the page before the oldest loaded message; `then_up` slides the window
    // onto it once it is there (the reader is at the top, waiting for it).
    let load_earlier = move |then_up: bool| {
        if earlier.with_untracked(|e| e.loading || e.exhausted) {
            return;
        }
        let oldest = messages.with_untracked(|all| all.first().map(|m| m.timestamp));
        let Some(oldest) = oldest else { return };
        earlier.update(|e| e.loading = true);
        let thread = id.get_value();
        // The view may be gone when the page arrives: every signal below is touched
        // with `try_`, which does nothing then.
        spawn_local(async move {
            match history::before(&thread, oldest).await {
                Ok(page) => {
                    earlier.try_update(|e| {
                        e.loading = false;
                        e.prepend(page);
                    });
                    if then_up
                        && let Some(next) = window
                            .try_with_untracked(|w| messages.with_untracked(|all| w.up(all)))
                            .flatten()
                    {
                        slide_to(next);
                    }
                }
                Err(err) => {
                    earlier.try_update(|e| e.loading = false);
                    problem.try_set(Some(err));
                }
            }
        });
    };
    let go_up = move || match window.with_untracked(|w| messages.with_untracked(|all| w.up(all))) {
        Some(next) => slide_to(next),
        None => load_earlier(true),
    };
    let go_down = move || {
        if let Some(next) = window.with_untracked(|w| messages.with_untracked(|all| w.down(all))) {
            slide_to(next);
        }
    };
    let to_latest = move || {
        stick.set_value(true);
        window.set(Window::newest());
    };
    let hidden_above = move || window.with(|w| messages.with(|all| w.range(all).start > 0));

    // The comparisons this thread shows in columns, and their columns' runs (shown
    // there, not in the history's list).
    let comparisons = Memo::new(move |_| {
        store.comparisons.with(|all| {
            all.iter()
                .filter(|c| c.comparison.thread_id == id.get_value())
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let in_columns = Memo::new(move |_| {
        comparisons.with(|all| {
            all.iter()
                .flat_map(|c| c.comparison.columns.iter().map(|col| col.trace_id.clone()))
                .collect::<std::collections::HashSet<_>>()
        })
    });
    // Runs of this thread seen live (changes only when one starts or is forgotten).
    let live_ids = Memo::new(move |_| {
        store.runs.with(|runs| {
            runs.iter()
                .filter(|r| r.thread_id == id.get_value())
                .map(|r| r.trace_id.clone())
                .collect::<Vec<_>>()
        })
    });
    let shown_rows = Memo::new(move |_| {
        let live = live_ids.get();
        messages.with(|all| {
            let range = window.with(|w| w.range(all));
            latest.with(|l| {
                let newest = l.as_ref().and_then(|p| p.as_ref().ok());
                earlier.with(|e| {
                    let run = |t: &str| {
                        newest
                            .and_then(|p| p.runs.get(t))
                            .or_else(|| e.page.runs.get(t))
                            .cloned()
                    };
                    let branches = newest.map_or(&[][..], |p| &p.branches[..]);
                    let mut shown = rows(all, range, run, &live, branches);
                    in_columns.with(|columns| {
                        shown
                            .retain(|r| !trace_of(&r.message).is_some_and(|t| columns.contains(&t)))
                    });
                    shown
                })
            })
        })
    });
    // After anything that changes the list: put the reader back where they were when
    // the window slid, else follow the bottom while the reader is there.
    Effect::new(move |_| {
        shown_rows.track();
        store.runs.track();
        // The frame may come after the view is gone: `try_` everything.
        request_animation_frame(move || {
            let Some(el) = list.try_get_untracked().flatten() else {
                return;
            };
            match anchor.try_update_value(Option::take).flatten() {
                Some(position) => restore_position(&el, &position),
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
        let at_end = window.with_untracked(Window::at_end);
        stick.set_value(at_end && from_bottom < EDGE_PX);
        if anchor.with_value(Option::is_some) {
            return; // a slide is still being applied
        }
        if el.scroll_top() < EDGE_PX {
            go_up();
        } else if from_bottom < EDGE_PX && !at_end {
            go_down();
        }
    };
    // A search hit to bring into view: page back until it is loaded, move the window
    // around it, then reveal it.
    Effect::new(move |_| {
        let Some(target) = store.focus.get() else {
            return;
        };
        if !latest.with(|l| matches!(l, Some(Ok(_)))) {
            return;
        }
        let found = messages.with(|all| {
            let id = focus_target(all, &target)?;
            let at = all.iter().position(|m| m.message_id == id)?;
            Some((id, Window::around(all, at)))
        });
        match found {
            Some((message_id, around)) => {
                store.focus.set(None);
                stick.set_value(false);
                window.set(around);
                request_animation_frame(move || reveal(&message_id));
            }
            None if more() => load_earlier(false),
            None => store.focus.set(None),
        }
    });
    // Live runs whose answer is not (yet) in the loaded history, newest last; a run
    // that failed before answering stays here with its error — while its question is
    // on the branch shown (a run left on another branch by a replay, a regenerate or a
    // switch is not shown under this one).
    // (Without their answers, which stream into their own views: this changes only
    // when a card does.)
    let live = Memo::new(move |_| {
        let (done, asked) = messages.with(|all| (answered(all), asked(all)));
        store.runs.with(|runs| {
            runs.iter()
                .filter(|r| r.thread_id == id.get_value() && !done.contains(&r.trace_id))
                .filter(|r| !r.finished || asked.contains(&r.trace_id))
                .filter(|r| in_columns.with(|c| !c.contains(&r.trace_id)))
                .map(RunView::without_answer)
                .collect::<Vec<_>>()
        })
    });
    // The thread's runs at work (one, or a comparison's columns).
    let at_work = Memo::new(move |_| {
        store.runs.with(|runs| {
            runs.iter()
                .filter(|r| r.thread_id == id.get_value() && !r.finished)
                .map(|r| r.trace_id.clone())
                .collect::<Vec<_>>()
        })
    });
    let running = move || at_work.with(|runs| runs.first().cloned());
    // Start a run: a new message, regenerate, or edit & resend.
    let start = move |how: Start| {
        problem.set(None);
        let thread = id.get_value();
        // The answer may come after the view is gone (another thread opened): only
        // `try_` on the view's own signals from here.
        spawn_local(async move {
            let thread_id = thread.clone();
            let new_question = matches!(how, Start::Send(..));
            let started = match how {
                Start::Send(text, attachments) => {
                    let args = cmd::SendMessage {
                        thread_id,
                        text,
                        attachments,
                    };
                    ipc::call(&args).await
                }
                Start::Edit { message_id, text } => {
                    let args = cmd::EditAndResend {
                        thread_id,
                        message_id,
                        text,
                    };
                    ipc::call(&args).await
                }
                Start::Regenerate => ipc::call(&cmd::Regenerate { thread_id }).await,
            };
            match started {
                Ok(trace) => {
                    stick.try_set_value(true);
                    window.try_set(Window::newest());
                    if new_question {
                        draft.try_set(String::new());
                        tray.try_set(Vec::new());
                    } else {
                        // Removed messages may sit in earlier pages: start again.
                        earlier.try_set(Earlier::default());
                        store.forget_finished(&thread, &trace);
                    }
                    store.with_run(&thread, &trace, |_| {});
                }
                Err(e) => {
                    problem.try_set(Some(e));
                }
            }
        });
    };
    let send = move || {
        let text = draft.get_untracked();
        let files = tray.get_untracked();
        if (text.trim().is_empty() && files.is_empty()) || running().is_some() {
            return;
        }
        start(Start::Send(text, files));
    };
    let idle = Memo::new(move |_| running().is_none());
    let edit = Callback::new(move |(message_id, text): (String, String)| {
        start(Start::Edit { message_id, text })
    });
    let regenerate = Callback::new(move |()| start(Start::Regenerate));
    let switch =
        Callback::new(move |message_id: String| store.show_message(id.get_value(), message_id));
    let fork = Callback::new(move |message_id: String| {
        let thread_id = id.get_value();
        spawn_local(async move {
            match ipc::call(&cmd::ForkThread {
                thread_id,
                message_id,
            })
            .await
            {
                Ok(thread) => {
                    store.threads.update(|ts| ts.insert(0, thread.clone()));
                    store.selected.set(Some(thread.thread_id));
                }
                Err(e) => {
                    problem.try_set(Some(e));
                }
            }
        });
    });
    // Stop stops every run of the thread at work (all of a comparison's columns).
    let stop = move |_| {
        for trace in at_work.get_untracked() {
            spawn_local(async move {
                if let Err(e) = ipc::call(&cmd::CancelRun { trace_id: trace }).await {
                    problem.try_set(Some(e));
                }
            });
        }
    };
    // One question to several models: the draft goes to each, shown in columns.
    let compare = Callback::new(move |models: Vec<art_types::ProviderConfig>| {
        let text = draft.get_untracked();
        let attachments = tray.get_untracked();
        problem.set(None);
        let thread = id.get_value();
        spawn_local(async move {
            let asked = cmd::CompareModels {
                thread_id: thread.clone(),
                text: text.clone(),
                attachments,
                models,
            };
            match ipc::call(&asked).await {
                Ok(comparison) => {
                    stick.try_set_value(true);
                    window.try_set(Window::newest());
                    draft.try_set(String::new());
                    tray.try_set(Vec::new());
                    for column in &comparison.columns {
                        store.with_run(&thread, &column.trace_id, |_| {});
                    }
                    store.comparisons.update(|all| {
                        all.push(crate::store::ShownComparison {
                            comparison,
                            question: text,
                        })
                    });
                }
                Err(e) => {
                    problem.try_set(Some(e));
                }
            }
        });
    });
    // The thread's newest runs, for the trace panel.
    let recent_runs = Signal::derive(move || recent(&messages.get(), TRACE_RUNS));
    let replayed = Signal::derive(move || messages.with(|m| replays(m)));
    let status = Memo::new(move |_| {
        latest.with(|l| match l {
            None => Loaded::Loading,
            Some(Err(e)) => Loaded::Failed(e.clone()),
            Some(Ok(_)) => Loaded::Ready,
        })
    });
    let empty = move || messages.with(Vec::is_empty) && live.with(Vec::is_empty);
    view! {
        <section class="pane thread" id="thread">
            <ThreadHeader thread_id=id.get_value() settings_open trace_open />
            <Show when=move || settings_open.get()>
                <ThreadSettings thread_id=id.get_value() on_close=Callback::new(move |()| settings_open.set(false)) />
            </Show>
            <Show when=move || trace_open.get()>
                <TracePanel thread_id=id.get_value() traces=recent_runs replays=replayed />
            </Show>
            <div class="messages" id="messages" node_ref=list on:scroll=on_scroll>
                <Show when=move || hidden_above() || more()>
                    <button id="load-earlier" class="ghost small load-earlier"
                        disabled=move || earlier.with(|e| e.loading)
                        on:click=move |_| go_up()>"Load earlier messages"</button>
                </Show>
                {move || match status.get() {
                    Loaded::Loading => view! { <p class="muted">"Loading…"</p> }.into_any(),
                    Loaded::Failed(error) => view! { <ErrorCard error /> }.into_any(),
                    Loaded::Ready => ().into_any(),
                }}
                <Show when=move || status.get() == Loaded::Ready && empty()>
                    <div class="empty-thread">
                        <p>"Ask anything. The model is chosen above, by its name; "
                           <strong>"Settings"</strong>" has the tools the agent may use, its prompt and limits."</p>
                    </div>
                </Show>
                <For each=move || shown_rows.get() key=Row::key
                    children=move |row| {
                        let actions = Actions {
                            regenerate: row.last_answer.then_some(regenerate),
                            edit,
                            switch,
                            fork,
                            idle,
                        };
                        let branch = row.branch.clone();
                        match row.unanswered {
                            true => {
                                let card = row.run.map(|run| view! { <article class="message ai"><RunCard run=run /></article> });
                                view! { {message_view(row.message, None, actions, branch)} {card} }.into_any()
                            }
                            false => message_view(row.message, row.run, actions, branch),
                        }
                    } />
                // Keyed without the answer: a run's card is rebuilt when its plan, tools,
                // thinking or state change, while the answer streams in place.
                <For each=move || live.get() key=live_key
                    children=move |run| {
                        let running = !run.finished;
                        let trace = run.trace_id.clone();
                        let answer_of = trace.clone();
                        let progress_of = trace.clone();
                        view! {
                            <article class="message ai live" data-trace-id=trace>
                                <RunCard run=run />
                                <StreamingAnswer trace_id=answer_of />
                                {running.then(|| view! { <Progress trace_id=progress_of /> })}
                            </article>
                        }
                    } />
                <For each=move || comparisons.get() key=|c| c.comparison.comparison_id.clone()
                    children=move |shown| view! { <ComparisonPanel shown /> } />
            </div>
            <Show when=move || !window.with(Window::at_end)>
                <button id="jump-latest" class="jump-latest primary small" title="Show the newest messages"
                    on:click=move |_| to_latest()>"↓ Latest"</button>
            </Show>
            <Composer draft tray problem running=Signal::derive(running)
                on_send=Callback::new(move |()| send()) on_stop=Callback::new(move |()| stop(()))
                on_compare=compare />
            <attachments::Viewer />
        </section>
    }
}
