//! Questions servers ask the user mid-call (elicitation): the [`Elicitor`] a front end
//! gives the manager asks them (the CLI on the terminal), and the client answers the
//! server with what it said — checked against the question first. With no one to ask,
//! or a question that is not a flat form of simple fields, the server is told no
//! (`decline`), and why is logged.

use std::sync::Arc;

use art_types::mcp::elicit::{ElicitAnswer, ElicitQuestion, check_answer, fields_of};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

/// Asks the user a server's question.
#[async_trait::async_trait]
pub trait Elicitor: Send + Sync {
    /// The user's answer to `question` (its fields checked by the caller afterwards).
    async fn ask(&self, question: ElicitQuestion) -> ElicitAnswer;
}

/// What the client sends back to `server`'s request.
pub(super) async fn answer(
    server: &str,
    elicitor: Option<&Arc<dyn Elicitor>>,
    request: ElicitRequestParams,
) -> ElicitResult {
    let decline = |why: &str| {
        tracing::info!(server, "declined a question of the server: {why}");
        ElicitResult::new(ElicitationAction::Decline)
    };
    let (message, schema) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            serde_json::to_value(&requested_schema).unwrap_or_default(),
        ),
        ElicitRequestParams::UrlElicitationParams { .. } => {
            return decline("questions answered on a web page are not supported yet");
        }
        _ => return decline("a kind of question this version does not know"),
    };
    let fields = match fields_of(&schema) {
        Ok(fields) => fields,
        Err(why) => return decline(&why),
    };
    let Some(elicitor) = elicitor else {
        return decline("no one to ask here (no terminal, no window)");
    };
    let question = ElicitQuestion {
        server: server.to_owned(),
        message,
        fields: fields.clone(),
    };
    match elicitor.ask(question).await {
        ElicitAnswer::Accept(values) => match check_answer(&fields, &values) {
            Ok(values) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::Value::Object(values)),
            Err(why) => decline(&format!("the answer did not fit the question: {why}")),
        },
        ElicitAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}
