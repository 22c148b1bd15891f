//! A server's prompts for the composer (`/name`) and its resources for the Tools page:
//! listed, a prompt filled in, a resource read and attached (through the attachment
//! store, off the async workers like a picked file).

use art::tools::mcp::catalog;
use art_types::commands::{
    AttachMcpResource, ListMcpPrompts, ListMcpResourceTemplates, ListMcpResources, Picked,
    UseMcpPrompt,
};
use art_types::mcp::catalog::{FilledPrompt, McpPrompt, McpResource, McpResourceTemplate};
use art_types::{ErrorCode, IpcError};
use tauri::AppHandle;

use super::attachments::store;
use super::{Handler, workbench};
use crate::error::mcp_error;

impl Handler for ListMcpPrompts {
    async fn handle(self, app: AppHandle) -> Result<Vec<McpPrompt>, IpcError> {
        Ok(workbench(&app)?.art.mcp.all_prompts().await)
    }
}

impl Handler for UseMcpPrompt {
    async fn handle(self, app: AppHandle) -> Result<FilledPrompt, IpcError> {
        let wb = workbench(&app)?;
        let store = store(&app)?;
        let pieces = wb
            .art
            .mcp
            .prompt(&self.server, &self.name, &self.arguments)
            .await
            .map_err(mcp_error)?;
        blocking(move || catalog::fill(pieces, &store)).await
    }
}

impl Handler for ListMcpResources {
    async fn handle(self, app: AppHandle) -> Result<Vec<McpResource>, IpcError> {
        workbench(&app)?
            .art
            .mcp
            .resources(&self.server)
            .await
            .map_err(mcp_error)
    }
}

impl Handler for ListMcpResourceTemplates {
    async fn handle(self, app: AppHandle) -> Result<Vec<McpResourceTemplate>, IpcError> {
        workbench(&app)?
            .art
            .mcp
            .resource_templates(&self.server)
            .await
            .map_err(mcp_error)
    }
}

impl Handler for AttachMcpResource {
    async fn handle(self, app: AppHandle) -> Result<Picked, IpcError> {
        let wb = workbench(&app)?;
        let store = store(&app)?;
        let pieces = wb
            .art
            .mcp
            .read_resource(&self.server, &self.uri)
            .await
            .map_err(mcp_error)?;
        let (attached, refused) = blocking(move || catalog::attach(pieces, &store)).await?;
        if attached.is_empty() && refused.is_empty() {
            return Err(IpcError::new(
                ErrorCode::Mcp,
                format!("{} has no contents to attach", self.uri),
            ));
        }
        Ok(Picked { attached, refused })
    }
}

/// Attachment work off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, IpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| IpcError::new(ErrorCode::Internal, format!("attaching stopped: {e}")))
}
