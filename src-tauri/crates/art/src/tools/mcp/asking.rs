//! Where a server's question goes: which tool call it came in ([`Asking::calls`] — a
//! server's request names no call, so the newest call in flight on that server is the
//! one), who asks it (the [`Elicitor`]: the CLI's terminal, the app's cards through
//! [`Answers`]), the run's record of it, and the call's time limit standing still while
//! the user answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use art_types::ObservationType;
use art_types::mcp::catalog::ToolProgress;
use art_types::mcp::elicit::{ElicitAnswer, ElicitField, check_answer};
use art_types::mcp::question::{AnsweredContent, QuestionContent, QuestionOutcome};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::elicit::Elicitor;
use crate::observation::{NewObservation, ObservationManager};
use crate::storage::StorageAdapter;
use crate::tools::ExecutionContext;
use crate::tools::user_time::UserTime;

/// A tool call in flight on a server.
#[derive(Clone)]
pub(super) struct CallRef {
    server: String,
    tool_name: String,
    thread_id: String,
    trace_id: String,
    call_id: String,
    user_time: Arc<UserTime>,
    /// Cancelled when the call ends (its answer came, it timed out, the run stopped).
    ended: CancellationToken,
    /// Its request's progress token, and when its progress was last recorded.
    progress: Arc<Mutex<Progress>>,
    /// The run's hold on it while a question waits.
    hold: Option<Arc<dyn crate::tools::CallHold>>,
}

/// What [`Asking::progress`] knows of a call's progress.
#[derive(Default)]
struct Progress {
    /// The request's progress token (JSON), once the request is sent.
    token: Option<String>,
    /// When progress was last recorded.
    recorded: Option<std::time::Instant>,
    /// The last report said how far of a known total the work was, short of it.
    short: bool,
    /// Reports being recorded now.
    recording: usize,
}

/// How long a call that has its result waits for the rest of its progress: rmcp hands
/// each notification to a task of its own but a result straight to the caller, so the
/// report a server sent just before its result ("2 of 2") can be handled just after.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(50);

/// Progress is recorded at most this often per call (a server may report on every
/// byte); reports in between are left out, never the one that reaches its total.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A call's place in [`Asking`] while it lasts.
pub(super) struct InFlight<'a> {
    asking: &'a Asking,
    ended: CancellationToken,
    progress: Arc<Mutex<Progress>>,
}

impl InFlight<'_> {
    /// The call's request went with `token`: its server's progress reports name it.
    pub(super) fn progress_token(&self, token: &rmcp::model::ProgressToken) {
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        progress.token = serde_json::to_string(token).ok();
    }
}

impl InFlight<'_> {
    /// The call has its result: wait (at most [`SETTLE`]) until the progress its server
    /// reported before it is recorded — the last report short of its total is followed
    /// by one that reaches it, and nothing is being written. A call without progress,
    /// or whose last report reached its total or named none, does not wait.
    pub(super) async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + SETTLE;
        loop {
            let pending = {
                let p = self.progress.lock().unwrap_or_else(|p| p.into_inner());
                p.short || p.recording > 0
            };
            if !pending || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.ended.cancel();
        let mut calls = self.asking.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.retain(|c| !c.ended.is_cancelled());
    }
}

/// The questions of an instance's MCP servers: who asks them, and where they are
/// recorded.
#[derive(Default)]
pub struct Asking {
    calls: Mutex<Vec<CallRef>>,
    elicitor: RwLock<Option<Arc<dyn Elicitor>>>,
    observations: Option<Arc<ObservationManager>>,
    /// Where answers posted by another process arrive (`art answer`).
    posted: Option<Arc<dyn StorageAdapter>>,
}

impl Asking {
    /// Questions recorded into `observations` (on the run of the call they came in),
    /// their answers also taken from `storage` when another process posts one there.
    pub fn recording(
        observations: Arc<ObservationManager>,
        storage: Arc<dyn StorageAdapter>,
    ) -> Self {
        Self {
            observations: Some(observations),
            posted: Some(storage),
            ..Self::default()
        }
    }

    /// Answers from another process to the questions recorded here (`None` when they
    /// are not recorded).
    pub(super) fn posting(&self) -> Option<super::Posting> {
        let observations = Arc::clone(self.observations.as_ref()?);
        let storage = Arc::clone(self.posted.as_ref()?);
        Some(super::Posting::new(storage, observations))
    }

    /// Have `elicitor` ask the questions from now on.
    pub fn set_elicitor(&self, elicitor: Arc<dyn Elicitor>) {
        *self.elicitor.write().unwrap_or_else(|p| p.into_inner()) = Some(elicitor);
    }

    /// Whether anyone can ask (servers are told the client takes questions only then).
    pub fn can_ask(&self) -> bool {
        self.elicitor().is_some()
    }

    fn elicitor(&self) -> Option<Arc<dyn Elicitor>> {
        self.elicitor
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Note a call of `tool_name` on `server` in flight until the guard goes.
    pub(super) fn enter(
        &self,
        server: &str,
        tool_name: &str,
        context: &ExecutionContext,
    ) -> InFlight<'_> {
        let ended = CancellationToken::new();
        let progress = Arc::default();
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(CallRef {
                server: server.to_owned(),
                tool_name: tool_name.to_owned(),
                thread_id: context.thread_id.clone(),
                trace_id: context.trace_id.clone(),
                call_id: context.call_id.clone(),
                user_time: Arc::clone(&context.user_time),
                ended: ended.clone(),
                progress: Arc::clone(&progress),
                hold: context.hold.clone(),
            });
        InFlight {
            asking: self,
            ended,
            progress,
        }
    }

    /// A progress report from `server`: recorded on the run of the call whose request
    /// it names (at most one every [`PROGRESS_EVERY`] per call, and always the one
    /// that says the work is done); a report naming no call in flight is ignored.
    pub(super) async fn progress(
        &self,
        server: &str,
        report: rmcp::model::ProgressNotificationParam,
    ) {
        let Ok(token) = serde_json::to_string(&report.progress_token) else {
            return;
        };
        let call = {
            let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            calls
                .iter()
                .find(|c| {
                    c.server == server
                        && c.progress
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .token
                            .as_ref()
                            == Some(&token)
                })
                .cloned()
        };
        let Some(call) = call.filter(|c| !c.trace_id.is_empty()) else {
            return;
        };
        let done = report.total.is_some_and(|t| report.progress >= t);
        {
            let mut progress = call.progress.lock().unwrap_or_else(|p| p.into_inner());
            progress.short = report.total.is_some() && !done;
            let now = std::time::Instant::now();
            if !done
                && progress
                    .recorded
                    .is_some_and(|at| now - at < PROGRESS_EVERY)
            {
                return;
            }
            progress.recorded = Some(now);
            progress.recording += 1;
        }
        let content = ToolProgress {
            call_id: call.call_id.clone(),
            progress: report.progress,
            total: report.total,
            message: report.message,
        };
        self.record(&call, ObservationType::ToolProgress, &content)
            .await;
        let mut progress = call.progress.lock().unwrap_or_else(|p| p.into_inner());
        progress.recording -= 1;
    }

    /// The newest call in flight on `server`.
    fn call_on(&self, server: &str) -> Option<CallRef> {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        calls.iter().rev().find(|c| c.server == server).cloned()
    }

    /// Ask `question` (fields already read from a form-mode request) for `server`; the
    /// answer, checked against the fields, or why there is none (for the server:
    /// declined). Recorded on the run of the call it came in, if any.
    pub(super) async fn ask(
        &self,
        server: &str,
        question: art_types::mcp::elicit::ElicitQuestion,
    ) -> Result<ElicitAnswer, String> {
        let call = self.call_on(server);
        let hold = call.as_ref().and_then(|c| c.hold.clone());
        let before = hold.as_ref().and_then(|h| h.answered_before(&question));
        let elicitor = self.elicitor();
        if before.is_none() && elicitor.is_none() {
            return Err("no one to ask here (no terminal, no window)".into());
        }
        let fields = question.fields.clone();
        let asked = QuestionContent {
            question_id: crate::clock::new_id(),
            call_id: call.as_ref().map(|c| c.call_id.clone()).unwrap_or_default(),
            tool_name: call
                .as_ref()
                .map(|c| c.tool_name.clone())
                .unwrap_or_default(),
            question,
        };
        let on_run = call.as_ref().filter(|c| !c.trace_id.is_empty());
        let answer = if let Some(before) = before {
            // Asked again after a restart, and answered then: the same answer.
            if let Some(call) = on_run {
                self.record(call, ObservationType::Elicitation, &asked)
                    .await;
            }
            Some(before)
        } else if let Some(elicitor) = elicitor {
            let _paused = call.as_ref().map(|c| c.user_time.pause());
            let ended = call.as_ref().map(|c| c.ended.clone()).unwrap_or_default();
            // Polled once before the question is shown, so it is already waiting for
            // an answer when the card appears. A question on a run may also be answered
            // from another process.
            let posted = self.posted.clone().filter(|_| on_run.is_some());
            let id = asked.question_id.clone();
            let elsewhere = async move {
                match posted {
                    Some(storage) => super::posted::taken(&*storage, &id).await,
                    None => std::future::pending().await,
                }
            };
            let by_elicitor = elicitor.ask(asked.clone());
            let asking = async move {
                tokio::select! {
                    answer = by_elicitor => answer,
                    answer = elsewhere => answer,
                }
            };
            tokio::pin!(asking);
            let first = futures::poll!(&mut asking);
            if let Some(call) = on_run {
                self.record(call, ObservationType::Elicitation, &asked)
                    .await;
            }
            match first {
                std::task::Poll::Ready(answer) => Some(answer),
                std::task::Poll::Pending => {
                    // Kept while it waits: the run goes on after a restart.
                    if let Some(hold) = hold.as_ref().filter(|_| on_run.is_some()) {
                        hold.hold(&asked).await;
                    }
                    let answer = tokio::select! {
                        answer = &mut asking => Some(answer),
                        () = ended.cancelled() => None,
                    };
                    if let Some(hold) = hold.as_ref().filter(|_| on_run.is_some()) {
                        if answer.is_none() && hold.kept() {
                            // Closing: the question stays unanswered on record, its run
                            // kept on it, for after the restart.
                            return Err("the app is closing".into());
                        }
                        hold.release(&asked).await;
                    }
                    answer
                }
            }
        } else {
            None
        };
        let (outcome, result) = match answer {
            Some(ElicitAnswer::Accept(values)) => match check_answer(&fields, &values) {
                Ok(values) => {
                    let answer = ElicitAnswer::Accept(values);
                    (
                        QuestionOutcome::Answered {
                            answer: answer.clone(),
                        },
                        Ok(answer),
                    )
                }
                Err(why) => {
                    let why = format!("the answer did not fit the question: {why}");
                    (QuestionOutcome::Ended { why: why.clone() }, Err(why))
                }
            },
            Some(answer) => (
                QuestionOutcome::Answered {
                    answer: answer.clone(),
                },
                Ok(answer),
            ),
            None => {
                let why = "the call ended before the question was answered".to_owned();
                (QuestionOutcome::Ended { why: why.clone() }, Err(why))
            }
        };
        if let Some(call) = on_run {
            let answered = AnsweredContent {
                question_id: asked.question_id.clone(),
                call_id: asked.call_id.clone(),
                outcome,
            };
            self.record(call, ObservationType::ElicitationAnswer, &answered)
                .await;
        }
        result
    }

    async fn record(&self, call: &CallRef, kind: ObservationType, content: &impl serde::Serialize) {
        let Some(observations) = &self.observations else {
            return;
        };
        let content = serde_json::to_value(content).unwrap_or_default();
        let mut new = NewObservation::new(&call.thread_id, &call.trace_id, kind, content);
        new.metadata = serde_json::json!({ "server": call.server });
        if let Err(e) = observations.record(new).await {
            tracing::warn!(server = %call.server, "could not record a server's question: {e}");
        }
    }
}

/// The app's [`Elicitor`]: a question waits on its tool card until [`Answers::answer`]
/// brings the user's answer (or its call ends).
#[derive(Default)]
pub struct Answers {
    waiting: Mutex<HashMap<String, Waiting>>,
}

/// A question waiting in [`Answers`].
struct Waiting {
    fields: Vec<ElicitField>,
    /// The page it asks to open (URL mode).
    url: Option<String>,
    reply: oneshot::Sender<ElicitAnswer>,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// No such question waits (answered already, or its call ended).
    #[error("this question no longer waits for an answer (answered, or its call ended)")]
    NotWaiting,
    /// The values do not fit the question's fields; it still waits.
    #[error("{0}")]
    Invalid(String),
}

impl Answers {
    /// Give the question `question_id` its answer. Returns the page the user agreed to
    /// open (a URL-mode question accepted), for the caller to open.
    pub fn answer(
        &self,
        question_id: &str,
        answer: ElicitAnswer,
    ) -> Result<Option<String>, AnswerError> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let Some(question) = waiting.get(question_id) else {
            return Err(AnswerError::NotWaiting);
        };
        if let ElicitAnswer::Accept(values) = &answer {
            check_answer(&question.fields, values).map_err(AnswerError::Invalid)?;
        }
        let question = waiting.remove(question_id).ok_or(AnswerError::NotWaiting)?;
        let open = matches!(answer, ElicitAnswer::Accept(_))
            .then_some(question.url)
            .flatten();
        question
            .reply
            .send(answer)
            .map_err(|_| AnswerError::NotWaiting)?;
        Ok(open)
    }

    /// The questions waiting now (their ids).
    pub fn waiting(&self) -> Vec<String> {
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.keys().cloned().collect()
    }
}

/// Removes a question from [`Answers`] when its wait ends either way.
struct Unlisted<'a>(&'a Answers, &'a str);

impl Drop for Unlisted<'_> {
    fn drop(&mut self) {
        let mut waiting = self.0.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.remove(self.1);
    }
}

#[async_trait::async_trait]
impl Elicitor for Answers {
    async fn ask(&self, asked: QuestionContent) -> ElicitAnswer {
        // A question outside a tool call has no card to be shown on.
        if asked.call_id.is_empty() {
            tracing::info!(
                server = %asked.question.server,
                "declined a question asked outside a tool call"
            );
            return ElicitAnswer::Decline;
        }
        let (reply, answer) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                asked.question_id.clone(),
                Waiting {
                    fields: asked.question.fields.clone(),
                    url: asked.question.url.clone(),
                    reply,
                },
            );
        let _unlisted = Unlisted(self, &asked.question_id);
        answer.await.unwrap_or(ElicitAnswer::Cancel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(progress: u32, total: u32) -> rmcp::model::ProgressNotificationParam {
        serde_json::from_value(serde_json::json!({
            "progressToken": 7, "progress": progress, "total": total
        }))
        .unwrap()
    }

    fn context() -> ExecutionContext {
        ExecutionContext {
            thread_id: "t".into(),
            trace_id: "r".into(),
            call_id: "c".into(),
            ..ExecutionContext::default()
        }
    }

    /// rmcp runs each notification in a task of its own but hands a result straight to
    /// the caller: the last report, sent before the result, may be handled after it.
    #[tokio::test(start_paused = true)]
    async fn a_call_with_its_result_waits_for_the_last_progress_its_server_sent() {
        let asking = Arc::new(Asking::default());
        let in_flight = asking.enter("s", "slow", &context());
        in_flight.progress_token(&serde_json::from_value(serde_json::json!(7)).unwrap());
        asking.progress("s", report(1, 2)).await;
        let late = tokio::spawn({
            let asking = Arc::clone(&asking);
            async move {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                asking.progress("s", report(2, 2)).await;
            }
        });
        in_flight.settle().await;
        assert!(late.is_finished(), "settled before the last report came");
        let progress = in_flight.progress.lock().unwrap();
        assert!(!progress.short && progress.recording == 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_report_that_never_comes_is_waited_for_a_bounded_time_and_none_is_not_waited_for() {
        let asking = Asking::default();
        let in_flight = asking.enter("s", "slow", &context());
        in_flight.progress_token(&serde_json::from_value(serde_json::json!(7)).unwrap());
        // No progress at all: no wait.
        let started = tokio::time::Instant::now();
        in_flight.settle().await;
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
        // Short of its total and nothing more: at most SETTLE (virtual time).
        asking.progress("s", report(1, 3)).await;
        in_flight.settle().await;
        assert!(started.elapsed() >= SETTLE);
        assert!(started.elapsed() < SETTLE * 2);
    }
}
