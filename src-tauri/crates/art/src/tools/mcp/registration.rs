//! A ready server's tools into the registry: `tools/list` (every page), each tool
//! under its namespaced name, the unusable ones listed with the reason; and the state a
//! ready server shows.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use art_types::ToolSchema;
use art_types::mcp::{
    McpServerConfig, McpServerState, McpToolInfo, TOOL_SEPARATOR, server_of, tool_name,
};
use serde_json::Value;

use super::McpError;
use super::asking::Asking;
use super::connection::Connection;
use super::tasks::TaskTools;
use super::tool::McpTool;
use crate::tools::ToolRegistry;

pub(super) fn ready_state(connection: &Connection, tools: usize) -> McpServerState {
    let (protocol_version, server_info) = connection.handshake();
    McpServerState::Ready {
        tools,
        protocol_version,
        server_info,
    }
}

/// `tools/list` (every page) and the registry updated: the server's old tools go, the
/// new ones come, each usable one registered, each unusable one (a name too long or
/// taken, a tool that runs only as a task) listed with the reason.
pub(super) async fn list_and_register(
    registry: &ToolRegistry,
    asking: &Arc<Asking>,
    config: &McpServerConfig,
    peer: &rmcp::Peer<rmcp::RoleClient>,
    tasks: &TaskTools,
    limit: Duration,
) -> Result<Vec<McpToolInfo>, McpError> {
    let listed = tokio::time::timeout(limit, peer.list_all_tools())
        .await
        .map_err(|_| McpError::Timeout {
            what: "tools/list".into(),
            secs: limit.as_secs(),
        })?
        .map_err(|e| McpError::Protocol(format!("tools/list failed: {e}")))?;
    let protocol_version = peer.peer_info().map(|i| i.protocol_version.to_string());
    let mut infos: Vec<McpToolInfo> = Vec::with_capacity(listed.len());
    let mut executors: Vec<Arc<dyn crate::tools::ToolExecutor>> = Vec::new();
    let mut taken = BTreeSet::new();
    for tool in listed {
        let local: String = tool
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let namespaced = tool_name(&config.name, &local);
        let input_schema = Value::Object((*tool.input_schema).clone());
        let mut info = McpToolInfo {
            server: config.name.clone(),
            name: tool.name.to_string(),
            tool_name: namespaced.clone(),
            title: tool
                .title
                .clone()
                .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone())),
            description: tool.description.as_deref().unwrap_or_default().to_owned(),
            input_schema: input_schema.clone(),
            unusable: None,
        };
        if namespaced.len() > 64 {
            info.unusable = Some(format!(
                "its name `{namespaced}` is longer than the 64 characters providers accept; give the server a shorter name"
            ));
        } else if !taken.insert(namespaced.clone()) {
            info.unusable = Some(format!(
                "another tool of this server is also called `{namespaced}`"
            ));
        } else if tasks.required(&tool.name) {
            info.unusable = Some(super::tasks::REASON.to_owned());
        } else {
            let schema = ToolSchema {
                name: namespaced.clone(),
                description: info.description.clone(),
                input_schema,
                output_schema: tool
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone())),
                examples: Vec::new(),
            };
            let executor = McpTool::new(
                schema,
                &config.name,
                config.transport.kind(),
                &tool.name,
                peer.clone(),
                Duration::from_secs(u64::from(config.timeout_secs)),
                config.result_limit as usize,
            )
            .with_protocol_version(protocol_version.clone())
            .with_policy(config.tool_policy)
            .with_asking(Arc::clone(asking));
            executors.push(Arc::new(executor));
        }
        infos.push(info);
    }
    // The old tools go and the new come in one step: a run never finds none.
    let refused = registry.replace_where(
        |tool| server_of(tool) == Some(config.name.as_str()),
        executors,
    );
    for error in refused {
        if let Some(info) = infos.iter_mut().find(|i| i.tool_name == error.tool_name()) {
            info.unusable = Some(error.to_string());
        }
    }
    debug_assert!(infos.iter().all(|t| t.tool_name.contains(TOOL_SEPARATOR)));
    Ok(infos)
}
