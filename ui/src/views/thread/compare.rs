//! Compare: one question to 2–4 models at once from the composer ("Compare…" lists
//! every provider's models to tick), and the comparison in columns while and after they
//! answer — each column streamed live with its plan and tool cards, said to wait when a
//! local model waits its turn, with Stop; once ended its figures (time to first token,
//! time, tokens, calls, cost) and "Keep this one" (the thread shows that column's
//! branch); the diff of any two columns below.

use art_types::FailureCode;
use art_types::commands as cmd;
use art_types::record::diff::RunFigures;
use art_types::{AppSettings, IpcError, ModelChoice, ProviderConfig, RunStatus};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::message::{Progress, StreamingAnswer};
use super::picker::{CurrentModel, Group, fill};
use crate::components::error_card::ErrorCard;
use crate::components::run_card::RunCard;
use crate::ipc;
use crate::run_view::RunView;
use crate::store::{ShownComparison, Store};
use crate::views::run_compare::DiffView;

/// Most models one comparison asks (four columns fit a window side by side).
pub const MOST: usize = 4;

/// `chosen` with `choice` ticked or unticked (in the order ticked: the columns' order);
/// never more than [`MOST`].
pub fn toggled(mut chosen: Vec<ModelChoice>, choice: &ModelChoice) -> Vec<ModelChoice> {
    match chosen.iter().position(|c| c == choice) {
        Some(at) => {
            chosen.remove(at);
        }
        None if chosen.len() < MOST => chosen.push(choice.clone()),
        None => {}
    }
    chosen
}

/// What a column says of itself: waiting for its turn, answering, or how it ended.
pub fn column_state(run: Option<&RunView>, waits_for: Option<&str>) -> String {
    let Some(run) = run else {
        return "Starting…".to_owned();
    };
    if !run.finished {
        let started = run.started_ms.is_some() || run.plan.is_some() || !run.answer.is_empty();
        return match waits_for {
            Some(model) if !started => {
                format!("Waits for {model}: this machine runs one local model at a time")
            }
            _ => "Answering…".to_owned(),
        };
    }
    let failure = run
        .metadata
        .as_ref()
        .and_then(|m| m.error.as_ref())
        .map(|e| &e.code)
        .or(run.error.as_ref().map(|(code, _)| code));
    match (failure, run.metadata.as_ref().map(|m| m.status)) {
        (Some(FailureCode::Cancelled), _) => "Stopped".to_owned(),
        (_, Some(RunStatus::Success)) => "Answered".to_owned(),
        (_, Some(RunStatus::Partial)) => "Answered in part".to_owned(),
        _ => "Failed".to_owned(),
    }
}

/// A finished column's figures on one line.
pub fn figures_line(f: &RunFigures) -> String {
    let seconds = |ms: u64| format!("{:.2} s", ms as f64 / 1e3);
    let mut parts = Vec::new();
    if let Some(ms) = f.first_token_ms {
        parts.push(format!("first token {}", seconds(ms)));
    }
    if let Some(ms) = f.duration_ms {
        parts.push(seconds(ms));
    }
    parts.push(format!("{} → {} tokens", f.input_tokens, f.output_tokens));
    let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    parts.push(plural(f.llm_calls, "model call"));
    parts.push(plural(f.tool_calls, "tool call"));
    if let Some(nanos) = f.cost_nanos {
        parts.push(format!("${:.4}", nanos as f64 / 1e9));
    }
    parts.join(" · ")
}

/// "Compare…" in the composer and the list of models it opens: tick 2–4 and ask them the
/// question being written (`on_compare`, with the models in the order ticked).
#[component]
pub fn CompareMenu(
    #[prop(into)] disabled: Signal<bool>,
    on_compare: Callback<Vec<ProviderConfig>>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let groups = RwSignal::new(Vec::<Group>::new());
    let failed = RwSignal::new(None::<IpcError>);
    let chosen = RwSignal::new(Vec::<ModelChoice>::new());
    let search = RwSignal::new(String::new());
    // The thread's model: its provider's models are listed where the thread reaches it.
    let current = use_context::<CurrentModel>();
    let show = move || {
        open.set(true);
        search.set(String::new());
        failed.set(None);
        groups.set(Vec::new());
        spawn_local(async move {
            let loaded = async {
                let settings: AppSettings = ipc::call(&cmd::GetAppSettings {}).await?;
                let thread = current.and_then(|m| {
                    m.config
                        .try_with_untracked(|c| c.as_ref().map(|c| c.provider_config.clone()))
                        .flatten()
                });
                fill(groups, &settings, thread).await
            }
            .await;
            if let Err(e) = loaded {
                failed.try_set(Some(e));
            }
        });
    };
    let ask = move |_| {
        let models = chosen
            .get_untracked()
            .into_iter()
            .map(|c| ProviderConfig {
                provider_name: c.provider,
                model_id: c.model,
                adapter_options: Default::default(),
            })
            .collect();
        open.set(false);
        chosen.set(Vec::new());
        on_compare.run(models);
    };
    let entry_view = move |choice: ModelChoice, recent: bool| {
        let (checked_choice, toggled_choice) = (choice.clone(), choice.clone());
        let ticked = move || chosen.with(|c| c.contains(&checked_choice));
        let full = move || chosen.with(|c| c.len() >= MOST);
        view! {
            <label class="model-choice compare-choice"
                data-provider=choice.provider.clone() data-model=choice.model.clone()>
                <input type="checkbox" prop:checked=ticked.clone()
                    disabled=move || full() && !ticked()
                    on:change=move |_| chosen.update(|c| *c = toggled(std::mem::take(c), &toggled_choice)) />
                <span class="model-choice-name">{choice.model.clone()}</span>
                {recent.then(|| view! { <span class="muted small">{choice.provider.clone()}</span> })}
            </label>
        }
    };
    let group_view = move |group: Group| {
        let wanted = search.with(|s| s.trim().to_lowercase());
        let body = match group.entries {
            None => {
                view! { <p class="muted small group-note group-loading">"Loading…"</p> }.into_any()
            }
            Some(Err(note)) => view! { <p class="muted small group-note">{note}</p> }.into_any(),
            Some(Ok(entries)) => entries
                .into_iter()
                .filter(|e| {
                    wanted.is_empty()
                        || e.choice.model.to_lowercase().contains(&wanted)
                        || e.choice.provider.to_lowercase().contains(&wanted)
                })
                .map(|e| entry_view(e.choice, group.id == "recent"))
                .collect_view()
                .into_any(),
        };
        view! {
            <div class="model-group" data-provider=group.id.clone()>
                <h4>{group.title}</h4>
                {body}
            </div>
        }
    };
    view! {
        <div class="compare-picker">
            <button id="compare-button" class="ghost" disabled=move || disabled.get()
                title="Ask this question of 2 to 4 models at once, side by side"
                on:click=move |_| if open.get_untracked() { open.set(false) } else { show() }>"Compare…"</button>
            <Show when=move || open.get()>
                <div id="compare-menu" class="model-menu compare-menu"
                    on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { open.set(false) }>
                    <p class="small muted">"Tick 2 to 4 models: each answers the question in a column of its own, on a branch of this thread."</p>
                    <input id="compare-search" placeholder="Search models"
                        prop:value=move || search.get() on:input=move |ev| search.set(event_target_value(&ev)) />
                    <div class="model-groups">
                        {move || match failed.get() {
                            Some(e) => view! { <p class="field-problem">{e.message}</p> }.into_any(),
                            None => groups.get().into_iter().map(group_view).collect_view().into_any(),
                        }}
                    </div>
                    <footer class="compare-actions">
                        <span class="small muted" id="compare-chosen">{move || {
                            let names: Vec<String> = chosen.with(|c| c.iter().map(|m| m.model.clone()).collect());
                            if names.is_empty() { "None chosen".to_owned() } else { names.join(", ") }
                        }}</span>
                        <button id="compare-start" class="primary small"
                            disabled=move || chosen.with(|c| c.len() < 2)
                            on:click=ask>{move || format!("Ask {} models", chosen.with(Vec::len).max(2))}</button>
                    </footer>
                </div>
            </Show>
        </div>
    }
}

/// One column: its model, its state, the run's card and answer as they stream; Stop
/// while it runs; its figures and "Keep this one" once every column has ended.
#[component]
fn ColumnView(
    shown: StoredValue<ShownComparison>,
    index: usize,
    #[prop(into)] all_ended: Signal<bool>,
    problem: RwSignal<Option<IpcError>>,
) -> impl IntoView {
    let store = expect_context::<Store>();
    let column = shown.with_value(|s| s.comparison.columns[index].clone());
    let thread = StoredValue::new(shown.with_value(|s| s.comparison.thread_id.clone()));
    let waits_for = column
        .waits_for
        .and_then(|i| shown.with_value(|s| s.comparison.columns.get(i).map(|c| c.model.clone())));
    let trace = StoredValue::new(column.trace_id.clone());
    // The run without its answer (which streams in its own view): changes when its card
    // does.
    let run = Memo::new(move |_| {
        store.runs.with(|runs| {
            runs.iter()
                .find(|r| r.trace_id == trace.get_value())
                .map(RunView::without_answer)
        })
    });
    let finished = move || run.with(|r| r.as_ref().is_some_and(|r| r.finished));
    let state = move || run.with(|r| column_state(r.as_ref(), waits_for.as_deref()));
    let figures = move || {
        store.runs.with(|runs| {
            runs.iter()
                .find(|r| r.trace_id == trace.get_value() && r.finished)
                .map(|r| figures_line(&RunFigures::of(r)))
        })
    };
    let stop = move |_| {
        spawn_local(async move {
            let asked = cmd::CancelRun {
                trace_id: trace.get_value(),
            };
            if let Err(e) = ipc::call(&asked).await {
                problem.try_set(Some(e));
            }
        });
    };
    let keep = move |_| {
        let (thread_id, comparison) = (
            thread.get_value(),
            shown.with_value(|s| s.comparison.comparison_id.clone()),
        );
        spawn_local(async move {
            let asked = cmd::ShowRun {
                thread_id: thread_id.clone(),
                trace_id: trace.get_value(),
            };
            match ipc::call(&asked).await {
                Ok(_) => {
                    store.switched(&thread_id);
                    store.close_comparison(&thread_id, &comparison);
                }
                Err(e) => {
                    problem.try_set(Some(e));
                }
            }
        });
    };
    view! {
        <article class="comparison-column message ai" data-trace-id=column.trace_id.clone()
            data-model=column.model.clone() data-provider=column.provider.clone()>
            <header class="column-head">
                <strong class="column-model">{column.model.clone()}</strong>
                <span class="muted small">{column.provider.clone()}</span>
                <span class="column-state small" class:done=finished>{state}</span>
            </header>
            {move || run.get().map(|run| view! { <RunCard run=run /> })}
            <StreamingAnswer trace_id=column.trace_id.clone() />
            {move || (!finished()).then(|| view! {
                <Progress trace_id=trace.get_value() />
                <button class="small danger column-stop" on:click=stop>"Stop"</button>
            })}
            {move || figures().map(|line| view! { <p class="column-figures small muted">{line}</p> })}
            <Show when=move || finished() && all_ended.get()>
                <button class="primary small keep-column" on:click=keep
                    title="Show this column's answer as the thread's from now on (the others stay as branches)">
                    "Keep this one"</button>
            </Show>
        </article>
    }
}

/// A comparison's columns side by side, and the diff of two of them once ended.
#[component]
pub fn ComparisonPanel(shown: ShownComparison) -> impl IntoView {
    let store = expect_context::<Store>();
    let count = shown.comparison.columns.len();
    let question = shown.question.clone();
    let id = shown.comparison.comparison_id.clone();
    let traces: Vec<String> = shown
        .comparison
        .columns
        .iter()
        .map(|c| c.trace_id.clone())
        .collect();
    let names: Vec<String> = shown
        .comparison
        .columns
        .iter()
        .map(|c| c.model.clone())
        .collect();
    let shown = StoredValue::new(shown);
    let problem = RwSignal::new(None::<IpcError>);
    let all_ended = {
        let traces = traces.clone();
        Memo::new(move |_| {
            store.runs.with(|runs| {
                traces
                    .iter()
                    .all(|t| runs.iter().any(|r| &r.trace_id == t && r.finished))
            })
        })
    };
    let close = move |_| {
        let (thread, comparison) = shown.with_value(|s| {
            (
                s.comparison.thread_id.clone(),
                s.comparison.comparison_id.clone(),
            )
        });
        store.close_comparison(&thread, &comparison);
    };
    // The two columns compared below, by place.
    let pick_a = RwSignal::new(0_usize);
    let pick_b = RwSignal::new(1_usize);
    let diffed = RwSignal::new(None::<(String, String)>);
    let traces = StoredValue::new(traces);
    let options = move |selected: RwSignal<usize>| {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                view! { <option value=i.to_string() selected=move || selected.get() == i>{format!("{}. {name}", i + 1)}</option> }
            })
            .collect_view()
    };
    let (options_a, options_b) = (options(pick_a), options(pick_b));
    let show_diff = move |_| {
        let (a, b) = (pick_a.get_untracked(), pick_b.get_untracked());
        diffed.set(traces.with_value(|t| Some((t.get(a)?.clone(), t.get(b)?.clone()))));
    };
    view! {
        <section class="comparison" id="comparison" data-comparison-id=id>
            <header class="comparison-head">
                <strong>"Compared"</strong>
                <span class="comparison-question">{question}</span>
                <Show when=move || all_ended.get()>
                    <button class="ghost small" id="comparison-close"
                        title="Close the columns: the thread shows the first column's branch, the others stay as branches"
                        on:click=close>"Close"</button>
                </Show>
            </header>
            {move || problem.get().map(|error| view! { <ErrorCard error /> })}
            <div class=format!("comparison-columns columns-{count}")>
                {(0..count).map(|index| view! { <ColumnView shown index all_ended problem /> }).collect_view()}
            </div>
            <Show when=move || all_ended.get()>
                <footer class="comparison-diff small">
                    "Diff "
                    <select id="comparison-diff-a" on:change=move |ev| pick_a.set(event_target_value(&ev).parse().unwrap_or(0))>
                        {options_a.clone()}</select>
                    " with "
                    <select id="comparison-diff-b" on:change=move |ev| pick_b.set(event_target_value(&ev).parse().unwrap_or(1))>
                        {options_b.clone()}</select>
                    <button class="small" id="comparison-diff" disabled=move || pick_a.get() == pick_b.get()
                        on:click=show_diff>"Show the diff"</button>
                </footer>
                {move || diffed.get().map(|(a, b)| view! { <DiffView a b /> })}
            </Show>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use art_types::{ExecutionMetadata, RunError};

    use super::*;

    fn choice(model: &str) -> ModelChoice {
        ModelChoice {
            provider: "openai".into(),
            model: model.into(),
        }
    }

    #[test]
    fn models_are_ticked_in_order_and_at_most_four() {
        let mut chosen = Vec::new();
        for m in ["a", "b", "c", "d", "e"] {
            chosen = toggled(chosen, &choice(m));
        }
        let names: Vec<&str> = chosen.iter().map(|c| c.model.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d"], "a fifth is not taken");
        chosen = toggled(chosen, &choice("b"));
        chosen = toggled(chosen, &choice("e"));
        let names: Vec<&str> = chosen.iter().map(|c| c.model.as_str()).collect();
        assert_eq!(
            names,
            ["a", "c", "d", "e"],
            "unticked, then room for another"
        );
    }

    #[test]
    fn a_column_says_whether_it_waits_answers_or_how_it_ended() {
        let mut run = RunView::new("t", "r");
        assert_eq!(
            column_state(Some(&run), Some("llama3.2")),
            "Waits for llama3.2: this machine runs one local model at a time"
        );
        assert_eq!(column_state(Some(&run), None), "Answering…");
        run.answer = "Hi".into();
        assert_eq!(column_state(Some(&run), Some("llama3.2")), "Answering…");
        let ended = |status, error: Option<FailureCode>| {
            let mut run = RunView::new("t", "r");
            run.finish(Some(ExecutionMetadata {
                thread_id: "t".into(),
                trace_id: "r".into(),
                status,
                history_left_out: 0,
                total_duration_ms: 10,
                planning_duration_ms: None,
                execution_duration_ms: None,
                synthesis_duration_ms: None,
                direct: false,
                llm_calls: 1,
                tool_calls: 0,
                usage: Default::default(),
                provider: None,
                model: None,
                error: error.map(|code| RunError {
                    code,
                    message: "x".into(),
                }),
            }));
            column_state(Some(&run), None)
        };
        assert_eq!(ended(RunStatus::Success, None), "Answered");
        assert_eq!(
            ended(RunStatus::Error, Some(FailureCode::Cancelled)),
            "Stopped"
        );
        assert_eq!(
            ended(RunStatus::Error, Some(FailureCode::InvalidModel)),
            "Failed"
        );
    }

    #[test]
    fn a_columns_figures_read_as_one_line() {
        let figures = RunFigures {
            first_token_ms: Some(420),
            duration_ms: Some(3_100),
            input_tokens: 120,
            output_tokens: 45,
            llm_calls: 2,
            tool_calls: 1,
            cost_nanos: Some(1_200_000),
            ..RunFigures::default()
        };
        assert_eq!(
            figures_line(&figures),
            "first token 0.42 s · 3.10 s · 120 → 45 tokens · 2 model calls · 1 tool call · $0.0012"
        );
    }
}
