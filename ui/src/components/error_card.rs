//! The one way a failure is shown, in every view: what happened in plain words, the
//! message that says why, what to do next, and the code (with any details) for
//! reference. What it says comes from [`Failure`](crate::failure::Failure).

use art_types::IpcError;
use leptos::prelude::*;

use crate::failure::Failure;

/// A card showing one failure. `id` names it for the page (and tests).
#[component]
pub fn FailureCard(failure: Failure, #[prop(optional, into)] id: Option<String>) -> impl IntoView {
    let Failure {
        headline,
        message,
        todo,
        code,
        details,
    } = failure;
    let shown = code.clone();
    view! {
        <div class="error-card" role="alert" id=id data-code=code>
            <div class="error-headline">{headline}</div>
            <div class="error-message">{message}</div>
            {todo.map(|todo| view! { <div class="error-todo">{todo}</div> })}
            <div class="error-code">{shown}</div>
            {details.map(|text| view! { <pre class="error-details">{text}</pre> })}
        </div>
    }
}

/// A card showing a command's error.
#[component]
pub fn ErrorCard(error: IpcError, #[prop(optional, into)] id: Option<String>) -> impl IntoView {
    FailureCard(FailureCardProps {
        failure: Failure::of_call(&error),
        id,
    })
}

/// A form's problem: the field it belongs to and the error, `form` for the whole form.
pub type FormProblem = Option<(String, IpcError)>;

/// The field a command's error names (`details.field`), else `form`.
pub fn field_of(error: &IpcError) -> String {
    error
        .details
        .get("field")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("form")
        .to_owned()
}

/// A problem the form found itself (before asking the app), for `field`.
pub fn local_problem(field: impl Into<String>, message: impl Into<String>) -> (String, IpcError) {
    (
        field.into(),
        IpcError::new(art_types::ErrorCode::InvalidInput, message.into()),
    )
}

/// Where a form shows its problem: beside `field` (its words), or, for `form`, as the
/// card every failure is shown as.
pub fn problem_at(
    problem: RwSignal<FormProblem>,
    field: &'static str,
) -> impl Fn() -> Option<AnyView> + Copy + 'static {
    move || {
        problem
            .get()
            .filter(|(f, _)| f == field)
            .map(|(_, error)| match field {
                "form" => view! { <ErrorCard error /> }.into_any(),
                _ => view! { <p class="field-problem" data-field=field>{error.message}</p> }
                    .into_any(),
            })
    }
}
