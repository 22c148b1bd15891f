//! Answers from another process: a server's question that waits in one process (the
//! app, `art run` without a terminal) can be answered from another (`art answer`). The
//! answer is posted in storage (collection `answers`, by question id), and the process
//! whose call waits takes it ([`taken`], polled beside its own way of asking) — the
//! storage is the only thing the two share. The question itself is found on its run's
//! record (the newest `ELICITATION` of the thread without its `ELICITATION_ANSWER`).

use std::sync::Arc;
use std::time::Duration;

use art_types::ObservationType;
use art_types::mcp::elicit::{ElicitAnswer, check_answer};
use art_types::mcp::question::{AnsweredContent, QuestionContent, QuestionOutcome};

use crate::observation::{ObservationManager, ObservationQuery};
use crate::storage::{Collection, Record, StorageAdapter, StorageError, encode};

/// How often a waiting call looks for a posted answer.
const POLL: Duration = Duration::from_millis(200);

/// Why a posted answer was not taken.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// No question waits there (answered already, or its run ended).
    #[error("no question of an MCP server waits {0}")]
    NoQuestion(String),
    /// Several questions wait (in different threads): say which thread.
    #[error("{} questions of MCP servers wait: say which thread", .0.len())]
    Several(Vec<(String, QuestionContent)>),
    /// The values do not fit the question's fields.
    #[error("{0}")]
    Invalid(String),
    /// The question is on record, but no process took the answer in time: the one
    /// whose call asked it has ended (its run stopped, the app or `art` closed).
    #[error(
        "no process is waiting on this question any more (the app or `art run` that asked \
         it has stopped); nothing was sent"
    )]
    NotTaken,
    /// The storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Posts answers and finds the questions that wait for them.
pub struct Posting {
    storage: Arc<dyn StorageAdapter>,
    observations: Arc<ObservationManager>,
}

impl Posting {
    /// Over the instance's `storage` and `observations`.
    pub fn new(storage: Arc<dyn StorageAdapter>, observations: Arc<ObservationManager>) -> Self {
        Self {
            storage,
            observations,
        }
    }

    /// The questions that wait, newest first, each with its thread: in `thread_id`, or
    /// in every thread.
    pub async fn waiting(
        &self,
        thread_id: Option<&str>,
    ) -> Result<Vec<(String, QuestionContent)>, StorageError> {
        let found = self
            .observations
            .query(&ObservationQuery {
                thread_id: thread_id.map(str::to_owned),
                types: vec![
                    ObservationType::Elicitation,
                    ObservationType::ElicitationAnswer,
                ],
                newest_first: true,
                ..Default::default()
            })
            .await?;
        let answered: Vec<String> = found
            .iter()
            .filter(|o| o.kind == ObservationType::ElicitationAnswer)
            .filter_map(|o| serde_json::from_value::<AnsweredContent>(o.content.clone()).ok())
            .map(|a| a.question_id)
            .collect();
        Ok(found
            .iter()
            .filter(|o| o.kind == ObservationType::Elicitation)
            .filter_map(|o| {
                let question = serde_json::from_value::<QuestionContent>(o.content.clone()).ok()?;
                Some((o.thread_id.clone(), question))
            })
            .filter(|(_, q)| !answered.contains(&q.question_id))
            .collect())
    }

    /// The question an answer goes to: the one waiting in `thread_id` (the newest), or
    /// without a thread the only one waiting anywhere; with its thread.
    pub async fn pick(
        &self,
        thread_id: Option<&str>,
    ) -> Result<(String, QuestionContent), PostError> {
        let mut waiting = self.waiting(thread_id).await?;
        match (waiting.len(), thread_id) {
            (0, Some(thread)) => Err(PostError::NoQuestion(format!("in thread {thread}"))),
            (0, None) => Err(PostError::NoQuestion("in any thread".into())),
            (1, _) | (_, Some(_)) => Ok(waiting.swap_remove(0)),
            (_, None) => Err(PostError::Several(waiting)),
        }
    }

    /// Post `answer` to `question` (waiting in `thread`), checked against its fields
    /// first, and wait at most `limit` for its call to take it: what became of it, as
    /// its run records it. Not taken in time, the answer is withdrawn.
    pub async fn answer(
        &self,
        thread: &str,
        question: &QuestionContent,
        answer: ElicitAnswer,
        limit: Duration,
    ) -> Result<QuestionOutcome, PostError> {
        if let ElicitAnswer::Accept(values) = &answer {
            check_answer(&question.question.fields, values).map_err(PostError::Invalid)?;
        }
        let record = Record {
            id: question.question_id.clone(),
            thread_id: Some(thread.to_owned()),
            trace_id: None,
            kind: None,
            parent: None,
            timestamp: crate::clock::now_ms(),
            search_text: None,
            body: encode(&answer)?,
        };
        self.storage.set(Collection::Answers, vec![record]).await?;
        let deadline = tokio::time::Instant::now() + limit;
        let mut taken = false;
        loop {
            if let Some(outcome) = self.outcome(thread, &question.question_id).await? {
                return Ok(outcome);
            }
            let now = tokio::time::Instant::now();
            if !taken && now >= deadline {
                // Withdrawn, unless taken at the last moment.
                taken = !self
                    .storage
                    .delete(Collection::Answers, &question.question_id)
                    .await?;
                if !taken {
                    return Err(PostError::NotTaken);
                }
            }
            if now >= deadline + limit {
                return Err(PostError::NotTaken);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// What became of `question_id`, once its run says.
    async fn outcome(
        &self,
        thread_id: &str,
        question_id: &str,
    ) -> Result<Option<QuestionOutcome>, StorageError> {
        let answers = self
            .observations
            .query(&ObservationQuery {
                thread_id: Some(thread_id.to_owned()),
                types: vec![ObservationType::ElicitationAnswer],
                newest_first: true,
                ..Default::default()
            })
            .await?;
        Ok(answers
            .into_iter()
            .filter_map(|o| serde_json::from_value::<AnsweredContent>(o.content).ok())
            .find(|a| a.question_id == question_id)
            .map(|a| a.outcome))
    }
}

/// The answer posted for `question_id`, once there is one (it is taken: removed).
/// Never ends otherwise: the caller races it with its own way of asking.
pub async fn taken(storage: &dyn StorageAdapter, question_id: &str) -> ElicitAnswer {
    loop {
        match storage.get(Collection::Answers, question_id).await {
            Ok(Some(record)) => {
                // Whoever deletes it takes it (a withdrawal races with this).
                if matches!(
                    storage.delete(Collection::Answers, question_id).await,
                    Ok(true)
                ) && let Ok(answer) = record.decode::<ElicitAnswer>(Collection::Answers)
                {
                    return answer;
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("could not look for a posted answer: {e}"),
        }
        tokio::time::sleep(POLL).await;
    }
}
