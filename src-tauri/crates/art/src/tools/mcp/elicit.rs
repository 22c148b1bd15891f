//! Questions servers ask the user mid-call (elicitation: a form, or a page to open —
//! only an `http(s)` address, shown whole): the [`Elicitor`] a front end
//! gives the manager asks them (the CLI on the terminal, the app on the call's card),
//! and the client answers the server with what it said — checked against the question
//! first ([`super::asking`]). With no one to ask, or a question that is not a flat form
//! of simple fields, the server is told no (`decline`), and why is logged.

use art_types::mcp::elicit::{ElicitAnswer, ElicitQuestion, fields_of, page_address};
use art_types::mcp::question::QuestionContent;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

use super::asking::Asking;

/// Asks the user a server's question.
#[async_trait::async_trait]
pub trait Elicitor: Send + Sync {
    /// The user's answer to `asked` (its fields checked by the caller afterwards). The
    /// future is polled once before the question is recorded and shown: an elicitor
    /// that waits for an answer from elsewhere is ready for it from that first poll.
    async fn ask(&self, asked: QuestionContent) -> ElicitAnswer;
}

/// What the client sends back to `server`'s request.
pub(super) async fn answer(
    server: &str,
    asking: &Asking,
    request: ElicitRequestParams,
) -> ElicitResult {
    let decline = |why: &str| {
        tracing::info!(server, "declined a question of the server: {why}");
        ElicitResult::new(ElicitationAction::Decline)
    };
    let question = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
            match fields_of(&schema) {
                Ok(fields) => ElicitQuestion {
                    server: server.to_owned(),
                    message,
                    fields,
                    url: None,
                },
                Err(why) => return decline(&why),
            }
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            match page_address(&url) {
                Ok(_) => ElicitQuestion {
                    server: server.to_owned(),
                    message,
                    fields: Vec::new(),
                    url: Some(url),
                },
                Err(why) => return decline(&format!("a page it asked to open: {why}")),
            }
        }
        _ => return decline("a kind of question this version does not know"),
    };
    match asking.ask(server, question).await {
        Ok(ElicitAnswer::Accept(values)) => ElicitResult::new(ElicitationAction::Accept)
            .with_content(serde_json::Value::Object(values)),
        Ok(ElicitAnswer::Decline) => ElicitResult::new(ElicitationAction::Decline),
        Ok(ElicitAnswer::Cancel) => ElicitResult::new(ElicitationAction::Cancel),
        Err(why) => decline(&why),
    }
}
