//! Runs compared: two recorded runs — a comparison's columns, a replay and its
//! original, any two runs of any threads — read back and diffed
//! ([`art_types::record::diff::RunDiff`]: plans, tool calls, answers, figures), for the
//! app's diff view and `art diff`.

use art_types::MessageRole;
use art_types::record::ToolCallContent;
use art_types::record::diff::RunDiff;
use art_types::record::view::RunView;

use crate::context::ContextError;
use crate::instance::ArtInstance;
use crate::observation::ObservationQuery;
use crate::storage::StorageError;

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// No run has this id.
    #[error("no run {0}: see the Trace panel, or `art export`, for run ids")]
    NotFound(String),
    /// The run's records could not be read.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Its messages could not be read.
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// The thread of run `trace_id`.
pub async fn thread_of(art: &ArtInstance, trace_id: &str) -> Result<String, CompareError> {
    art.observations
        .thread_of(trace_id)
        .await?
        .ok_or_else(|| CompareError::NotFound(trace_id.to_owned()))
}

/// The tools run `trace_id` of `thread_id` called that are not among `offered` (the
/// tools a replay offers the model) or no longer exist, each once, in the order first
/// called: what a replay should be told before it starts.
pub async fn missing_tools(
    art: &ArtInstance,
    thread_id: &str,
    trace_id: &str,
    offered: &[String],
) -> Result<Vec<String>, CompareError> {
    let query = ObservationQuery {
        thread_id: Some(thread_id.to_owned()),
        trace_ids: vec![trace_id.to_owned()],
        types: vec![art_types::ObservationType::ToolCall],
        ..ObservationQuery::default()
    };
    let mut missing: Vec<String> = Vec::new();
    for call in art.observations.query(&query).await? {
        let Ok(call) = serde_json::from_value::<ToolCallContent>(call.content) else {
            continue;
        };
        let name = call.tool_name;
        let gone = !art.tools.contains(&name) || !offered.contains(&name);
        if gone && !missing.contains(&name) {
            missing.push(name);
        }
    }
    Ok(missing)
}

/// Run `trace_id` as recorded (of whichever thread), and what it was asked.
pub async fn run(
    art: &ArtInstance,
    trace_id: &str,
) -> Result<(RunView, Option<String>), CompareError> {
    let query = ObservationQuery {
        trace_ids: vec![trace_id.to_owned()],
        ..ObservationQuery::default()
    };
    let observations = art.observations.query(&query).await?;
    let Some(thread_id) = observations.first().map(|o| o.thread_id.clone()) else {
        return Err(CompareError::NotFound(trace_id.to_owned()));
    };
    let messages = art
        .conversation
        .messages_of_run(&thread_id, trace_id)
        .await?;
    let said = |role: MessageRole| {
        messages
            .iter()
            .find(|m| m.role == role)
            .map(|m| m.content.clone())
    };
    let mut view = RunView::of(&thread_id, trace_id, &observations);
    // The answer as stored (the observations hold its figures, not its text).
    if let Some(answer) = said(MessageRole::Ai) {
        view.answer = answer;
    }
    Ok((view, said(MessageRole::User)))
}

/// The model that answered message `m`'s run, as `provider:model`: an answer's own
/// metadata, or for a question its run's figures (a comparison's copies of one question
/// differ only by it). `None` when nothing says.
pub async fn model_of(art: &ArtInstance, m: &art_types::ConversationMessage) -> Option<String> {
    let named = |v: &serde_json::Value| -> Option<String> {
        let model = v.get("model")?.as_str().filter(|s| !s.is_empty())?;
        Some(
            match v.get("provider").and_then(serde_json::Value::as_str) {
                Some(p) if !p.is_empty() => format!("{p}:{model}"),
                _ => model.to_owned(),
            },
        )
    };
    if let Some(model) = named(&m.metadata) {
        return Some(model);
    }
    let trace = m.metadata.get(art_types::message::TRACE_ID)?.as_str()?;
    let query = ObservationQuery {
        trace_ids: vec![trace.to_owned()],
        types: vec![art_types::ObservationType::FinalResponse],
        limit: Some(1),
        ..Default::default()
    };
    let ended = art.observations.query(&query).await.ok()?;
    named(ended.first()?.content.get("metadata")?)
}

/// Runs `a` and `b` compared.
pub async fn diff(art: &ArtInstance, a: &str, b: &str) -> Result<RunDiff, CompareError> {
    let (run_a, question_a) = run(art, a).await?;
    let (run_b, question_b) = run(art, b).await?;
    Ok(RunDiff::between(&run_a, &run_b).with_questions(question_a, question_b))
}
