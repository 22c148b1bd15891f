//! A server's question on its tool card (MCP elicitation): the server's message as text
//! (its words are untrusted: shown, never run), each field as a form control — text
//! (email, URL and date inputs where the server says so), number, yes/no, one choice,
//! several — with Send, Decline and Cancel; a page to open (URL mode) as its whole
//! address and host, with Open in browser, Decline and Cancel. The call waits
//! meanwhile; values the backend finds do not fit are said under the form and the
//! question keeps waiting. Once answered, the card says what was sent.

use art_types::commands as cmd;
use art_types::mcp::elicit::{ElicitAnswer, ElicitField, FieldKind};
use art_types::mcp::question::QuestionCard;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::{Map, Value};

use crate::ipc;
use crate::run_view::RunView;
use crate::store::Store;

/// What a text box holds, as the value a field of `kind` takes (`None`: left empty).
pub fn value_of(kind: &FieldKind, text: &str) -> Result<Option<Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match kind {
        FieldKind::Number { integer: true, .. } => text
            .parse::<i64>()
            .map(|n| Some(Value::from(n)))
            .map_err(|_| format!("`{text}` is not a whole number")),
        FieldKind::Number { .. } => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| format!("`{text}` is not a number")),
        _ => Ok(Some(Value::String(text.to_owned()))),
    }
}

thread_local! {
    /// The values typed into each waiting question's form, by question id (the page
    /// runs on one thread).
    static DRAFTS: std::cell::RefCell<std::collections::HashMap<String, Map<String, Value>>> =
        std::cell::RefCell::default();
}

/// A field's default as its text box shows it.
fn default_text(field: &ElicitField) -> String {
    match &field.default {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// One field's control; its value goes into `values` as the user changes it.
fn control(
    field: &ElicitField,
    values: RwSignal<Map<String, Value>>,
    problem: RwSignal<Option<String>>,
) -> AnyView {
    let name = StoredValue::new(field.name.clone());
    let set = move |value: Option<Value>| {
        values.update(|v| {
            match value {
                Some(value) => v.insert(name.get_value(), value),
                None => v.remove(&name.get_value()),
            };
        });
    };
    match &field.kind {
        FieldKind::Boolean => {
            let checked = field
                .default
                .as_ref()
                .and_then(Value::as_bool)
                .unwrap_or(false);
            set(Some(Value::Bool(checked)));
            view! {
                <input type="checkbox" class="question-input" data-field=field.name.clone() checked=checked
                    on:change=move |ev| set(Some(Value::Bool(event_target_checked(&ev)))) />
            }
            .into_any()
        }
        FieldKind::Choice {
            options,
            many: false,
        } => {
            let chosen = field
                .default
                .as_ref()
                .and_then(Value::as_str)
                .map(str::to_owned);
            set(chosen.clone().map(Value::String));
            let required = field.required;
            view! {
                <select class="question-input" data-field=field.name.clone()
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        set((!v.is_empty()).then_some(Value::String(v)));
                    }>
                    {(!required || chosen.is_none()).then(|| view! { <option value="">"—"</option> })}
                    {options.iter().map(|(value, label)| view! {
                        <option value=value.clone() selected=chosen.as_deref() == Some(value.as_str())>{label.clone()}</option>
                    }).collect_view()}
                </select>
            }
            .into_any()
        }
        FieldKind::Choice {
            options,
            many: true,
        } => {
            let chosen: Vec<String> = field
                .default
                .as_ref()
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if !chosen.is_empty() {
                set(Some(Value::from(chosen.clone())));
            }
            view! {
                <span class="question-choices" data-field=field.name.clone()>
                    {options.iter().map(|(value, label)| {
                        let value = StoredValue::new(value.clone());
                        let on = chosen.contains(&value.get_value());
                        view! {
                            <label class="question-choice">
                                <input type="checkbox" checked=on data-value=value.get_value()
                                    on:change=move |ev| {
                                        let on = event_target_checked(&ev);
                                        values.update(|v| {
                                            let mut list: Vec<Value> = v.get(&name.get_value())
                                                .and_then(Value::as_array).cloned().unwrap_or_default();
                                            list.retain(|x| x.as_str() != Some(value.get_value().as_str()));
                                            if on { list.push(Value::String(value.get_value())); }
                                            if list.is_empty() { v.remove(&name.get_value()); }
                                            else { v.insert(name.get_value(), Value::Array(list)); }
                                        });
                                    } />
                                {label.clone()}
                            </label>
                        }
                    }).collect_view()}
                </span>
            }
            .into_any()
        }
        kind => {
            let input_type = match kind {
                FieldKind::Number { .. } => "number",
                FieldKind::Text {
                    format: Some(f), ..
                } if f == "email" => "email",
                FieldKind::Text {
                    format: Some(f), ..
                } if f == "uri" => "url",
                FieldKind::Text {
                    format: Some(f), ..
                } if f == "date" => "date",
                _ => "text",
            };
            let text = default_text(field);
            if let Ok(value) = value_of(kind, &text) {
                set(value);
            }
            let kind = StoredValue::new(kind.clone());
            view! {
                <input type=input_type class="question-input" data-field=field.name.clone() value=text
                    on:input=move |ev| match kind.with_value(|k| value_of(k, &event_target_value(&ev))) {
                        Ok(value) => set(value),
                        Err(e) => problem.set(Some(e)),
                    } />
            }
            .into_any()
        }
    }
}

/// A tool card's question: the form while it waits (and the run is live, or `kept` on
/// it: the app closed while it waited, and the answer makes that run go on), else what
/// became of it.
#[component]
pub fn QuestionForm(
    card: QuestionCard,
    live: bool,
    #[prop(optional)] kept: Option<RunView>,
) -> impl IntoView {
    let store = expect_context::<Store>();
    let kept = StoredValue::new(kept);
    let asked = card.asked;
    let header = view! {
        <header class="card-title">
            <span class="badge question-badge">"Question"</span>
            <span class="badge server-badge">{asked.question.server.clone()}</span>
        </header>
        <p class="question-message">{asked.question.message.clone()}</p>
    };
    let outcome = match (card.outcome, live) {
        (Some(outcome), _) => Some(outcome.to_string()),
        (None, false) => Some("Not answered: the run ended while it waited.".to_owned()),
        (None, true) => None,
    };
    if let Some(note) = outcome {
        return view! {
            <div class="question answered" data-question=asked.question_id.clone()>
                {header}
                <p class="muted small question-outcome">{note}</p>
            </div>
        }
        .into_any();
    }
    let values = RwSignal::new(Map::new());
    let problem = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let id = StoredValue::new(asked.question_id.clone());
    // What the user typed so far outlives this form: the card is built again when the
    // run changes (a progress report, another call), and the form takes it back.
    let typed = DRAFTS.with(|d| d.borrow().get(&asked.question_id).cloned());
    Effect::new(move |_| {
        let now = values.get();
        DRAFTS.with(|d| d.borrow_mut().insert(id.get_value(), now));
    });
    let send = move |answer: Option<ElicitAnswer>| {
        problem.set(None);
        let answer = answer.unwrap_or_else(|| ElicitAnswer::Accept(values.get_untracked()));
        busy.set(true);
        let args = cmd::AnswerQuestion {
            question_id: id.get_value(),
            answer,
        };
        let args_id = id.get_value();
        // A kept run is live again from here (its next part's events find it).
        let kept = kept.try_get_value().flatten();
        if let Some(run) = &kept {
            store.resume(run.clone());
        }
        spawn_local(async move {
            match ipc::call(&args).await {
                Ok(()) => DRAFTS.with(|d| d.borrow_mut().remove(&args_id)),
                Err(e) => {
                    if let Some(run) = kept {
                        store.show(run);
                    }
                    problem.try_set(Some(e.message));
                    None
                }
            };
            busy.try_set(false);
        });
    };
    // A page to open: its address whole, its host plain to see; opening is accepting.
    if let Some(url) = asked.question.url.clone() {
        let host = art_types::mcp::elicit::page_host(&url)
            .unwrap_or(&url)
            .to_owned();
        return view! {
            <div class="question waiting page" data-question=asked.question_id.clone()>
                {header}
                <p class="small">"It asks you to open a page on "<strong class="question-host">{host}</strong>":"</p>
                <code class="question-url">{url}</code>
                {move || problem.get().map(|p| view! { <p class="run-error question-problem">{p}</p> })}
                <div class="question-actions">
                    <button class="primary question-open" disabled=move || busy.get()
                        on:click=move |_| send(Some(ElicitAnswer::Accept(Map::new())))>"Open in browser"</button>
                    <button class="question-decline" disabled=move || busy.get()
                        on:click=move |_| send(Some(ElicitAnswer::Decline))>"Decline"</button>
                    <button class="ghost question-cancel" disabled=move || busy.get()
                        on:click=move |_| send(Some(ElicitAnswer::Cancel))>"Cancel"</button>
                </div>
            </div>
        }
        .into_any();
    }
    let fields = asked
        .question
        .fields
        .iter()
        .map(|field| {
            let label = field.title.clone().unwrap_or_else(|| field.name.clone());
            // Starts from what was typed before the card was rebuilt, else the default.
            let mut start = field.clone();
            if let Some(typed) = &typed {
                start.default = typed.get(&field.name).cloned();
            }
            view! {
                <label class="question-field">
                    <span class="question-label">{label}{field.required.then_some(" *")}</span>
                    {control(&start, values, problem)}
                    {field.description.clone().map(|d| view! { <span class="muted small">{d}</span> })}
                </label>
            }
        })
        .collect_view();
    view! {
        <div class="question waiting" data-question=asked.question_id.clone()>
            {header}
            <div class="question-fields">{fields}</div>
            {move || problem.get().map(|p| view! { <p class="run-error question-problem">{p}</p> })}
            <div class="question-actions">
                <button class="primary question-send" disabled=move || busy.get()
                    on:click=move |_| send(None)>"Send"</button>
                <button class="question-decline" disabled=move || busy.get()
                    on:click=move |_| send(Some(ElicitAnswer::Decline))>"Decline"</button>
                <button class="ghost question-cancel" disabled=move || busy.get()
                    on:click=move |_| send(Some(ElicitAnswer::Cancel))>"Cancel"</button>
            </div>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_box_becomes_the_value_its_field_takes() {
        let whole = FieldKind::Number {
            integer: true,
            minimum: None,
            maximum: None,
        };
        let any = FieldKind::Number {
            integer: false,
            minimum: None,
            maximum: None,
        };
        let text = FieldKind::Text {
            format: None,
            min_length: None,
            max_length: None,
        };
        assert_eq!(value_of(&whole, " 42 "), Ok(Some(Value::from(42))));
        assert!(
            value_of(&whole, "4.5")
                .unwrap_err()
                .contains("whole number")
        );
        assert_eq!(value_of(&any, "2.5"), Ok(Some(serde_json::json!(2.5))));
        assert!(value_of(&any, "pi").is_err());
        assert_eq!(value_of(&text, "  "), Ok(None), "empty: left out");
        assert_eq!(value_of(&text, "Ada"), Ok(Some(Value::from("Ada"))));
    }
}
