//! The Tools page: MCP servers (list with their state, save and start, remove, restart,
//! their tools) and the import of pasted `mcpServers` JSON. Header values go to the
//! keychain through `art` and never come back.

use std::collections::BTreeMap;

use art::secrets::Secret;
use art::tools::mcp::McpError;
use art_types::IpcError;
use art_types::commands::{
    AnswerQuestion, CancelMcpSignIn, ImportMcpServers, ListMcpServers, ListMcpTools,
    RemoveMcpServer, RestartMcpServer, SaveMcpServer, SignInMcpServer, SignOutMcpServer,
};
use art_types::events;
use art_types::mcp::{McpImportReport, McpServerStatus, McpSignInPage, McpToolInfo};
use tauri::{AppHandle, Emitter};

use super::{Handler, workbench};
use crate::error::{mcp_error, require};

impl Handler for ListMcpServers {
    async fn handle(self, app: AppHandle) -> Result<Vec<McpServerStatus>, IpcError> {
        workbench(&app)?.art.mcp.statuses().await.map_err(mcp_error)
    }
}

/// Saved, then started (a disabled one is stopped); a rename removes the old name. A
/// new or renamed server may not take the name of another.
impl Handler for SaveMcpServer {
    async fn handle(self, app: AppHandle) -> Result<McpServerStatus, IpcError> {
        let Self {
            config,
            header_values,
            previous_name,
            client_secret,
        } = self;
        let wb = workbench(&app)?;
        let values: BTreeMap<String, Secret> = header_values
            .into_iter()
            .map(|(name, value)| (name, Secret::new(value)))
            .collect();
        let store = wb.art.mcp.store();
        // A new server, or one renamed, may not take another's name.
        if previous_name.as_deref() != Some(config.name.as_str()) {
            require(
                matches!(
                    store.get(&config.name).await,
                    Err(McpError::UnknownServer(_))
                ),
                "name",
                format!("a server named `{}` exists already", config.name),
            )?;
        }
        let renamed = previous_name.filter(|old| *old != config.name);
        store.save(&config, &values).await.map_err(mcp_error)?;
        // (A secret no longer wanted leaves with the setting, in `save`.)
        if let Some(secret) = client_secret.filter(|_| config.oauth.client_secret) {
            store
                .set_client_secret(&config.name, Some(Secret::new(secret)))
                .await
                .map_err(mcp_error)?;
        }
        if let Some(old) = renamed {
            wb.art.mcp.forget(&old).await;
            store.remove(&old).await.map_err(mcp_error)?;
        }
        wb.art.mcp.start(&config.name).await.map_err(mcp_error)
    }
}

impl Handler for RemoveMcpServer {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        let wb = workbench(&app)?;
        wb.art.mcp.forget(&self.name).await;
        let removed = wb
            .art
            .mcp
            .store()
            .remove(&self.name)
            .await
            .map_err(mcp_error)?;
        require(
            removed,
            "name",
            format!("there is no MCP server named `{}`", self.name),
        )
    }
}

impl Handler for RestartMcpServer {
    async fn handle(self, app: AppHandle) -> Result<McpServerStatus, IpcError> {
        workbench(&app)?
            .art
            .mcp
            .start(&self.name)
            .await
            .map_err(mcp_error)
    }
}

impl Handler for ListMcpTools {
    async fn handle(self, app: AppHandle) -> Result<Vec<McpToolInfo>, IpcError> {
        Ok(workbench(&app)?.art.mcp.tools(&self.name))
    }
}

/// Saved, then the enabled ones started together.
impl Handler for ImportMcpServers {
    async fn handle(self, app: AppHandle) -> Result<McpImportReport, IpcError> {
        let wb = workbench(&app)?;
        let report = wb.art.mcp.import(&self.json).await.map_err(|message| {
            IpcError::new(art_types::ErrorCode::InvalidInput, message)
                .with_details(serde_json::json!({ "field": "json" }))
        })?;
        let added: Vec<&str> = report.added.iter().map(String::as_str).collect();
        wb.art.mcp.start_many(&added).await;
        Ok(report)
    }
}

/// The browser opened on the authorization page (its address sent to the page too), the
/// wait, the server restarted with the sign-in. One sign-in per server at a time: a
/// second one cancels the first.
impl Handler for SignInMcpServer {
    async fn handle(self, app: AppHandle) -> Result<McpServerStatus, IpcError> {
        let wb = workbench(&app)?;
        let cancel = wb.begin_sign_in(&self.name);
        let server = self.name.clone();
        let show = |address: &str| {
            let page = McpSignInPage {
                server,
                address: address.to_owned(),
                no_browser: art::tools::mcp::oauth::open_in_browser(address).err(),
            };
            if let Err(e) = app.emit(events::MCP_SIGN_IN, &page) {
                tracing::warn!("cannot show the sign-in page's address: {e}");
            }
        };
        let signed = wb
            .art
            .mcp
            .sign_in(
                &self.name,
                show,
                art::tools::mcp::oauth::SIGN_IN_WAIT,
                cancel,
            )
            .await;
        wb.end_sign_in(&self.name);
        signed.map_err(mcp_error)
    }
}

impl Handler for CancelMcpSignIn {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        workbench(&app)?.cancel_sign_in(&self.name);
        Ok(())
    }
}

/// The thread whose run was kept on question `question_id` when the app (or `art`) that
/// asked it ended, its run (trace id) and the question, if there is one.
async fn kept_on(
    wb: &crate::workbench::Workbench,
    question_id: &str,
) -> Option<(String, String, art_types::mcp::question::QuestionContent)> {
    let posting = wb.art.mcp.posting()?;
    let waiting = posting.waiting(None).await.ok()?;
    let (thread, _) = waiting
        .into_iter()
        .find(|(_, q)| q.question_id == question_id)?;
    let kept = wb.art.kept_on(&thread).await.ok().flatten()?;
    let asked = kept.asked.filter(|a| a.question_id == question_id)?;
    Some((thread, kept.trace_id, asked))
}

impl Handler for SignOutMcpServer {
    async fn handle(self, app: AppHandle) -> Result<McpServerStatus, IpcError> {
        workbench(&app)?
            .art
            .mcp
            .sign_out(&self.name)
            .await
            .map_err(mcp_error)
    }
}

/// The user's answer to a server's question on a tool card: the waiting call goes on
/// with it; a page the user agreed to open opens in the browser. A question asked before
/// the app last closed, whose run was kept on it, goes on in the background: its call
/// runs again and the server's same question gets the answer. Values that do not fit the
/// question are refused (`INVALID_INPUT`, the question still waits); a question that no
/// longer waits is `NOT_FOUND`.
impl Handler for AnswerQuestion {
    async fn handle(self, app: AppHandle) -> Result<(), IpcError> {
        use art::tools::mcp::AnswerError;
        use art_types::ErrorCode;
        let wb = workbench(&app)?;
        let invalid = |why: String| {
            IpcError::new(ErrorCode::InvalidInput, why)
                .with_details(serde_json::json!({ "field": "answer" }))
        };
        let open = match wb.answers.answer(&self.question_id, self.answer.clone()) {
            Ok(open) => open,
            Err(AnswerError::Invalid(why)) => return Err(invalid(why)),
            Err(not_waiting @ AnswerError::NotWaiting) => {
                let Some((thread, trace, asked)) = kept_on(&wb, &self.question_id).await else {
                    return Err(IpcError::new(ErrorCode::NotFound, not_waiting.to_string()));
                };
                if let art_types::mcp::elicit::ElicitAnswer::Accept(values) = &self.answer {
                    art_types::mcp::elicit::check_answer(&asked.question.fields, values)
                        .map_err(invalid)?;
                }
                let work = super::runs::Work::Answer(self.question_id, self.answer);
                super::runs::spawn(app, &wb, thread, trace, work)?;
                return Ok(());
            }
        };
        // A page the user agreed to open (its address stays on the card to copy).
        if let Some(page) = open
            && let Err(why) = art::tools::mcp::oauth::open_in_browser(&page)
        {
            tracing::warn!("the page a server asked to open was not opened: {why}");
        }
        Ok(())
    }
}
