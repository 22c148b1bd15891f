//! A server's prompts in the composer and its resources on the Tools page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The prompts of every running server (for the composer's `/` list), each server's in
/// its order, servers by name. A server that fails to list them is left out (its
/// state on the Tools page says why it stopped, if it did).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListMcpPrompts {}

/// Fill in a server's prompt: its messages for the composer, images and embedded files
/// attached. A required argument left out is `INVALID_INPUT` naming it (nothing is
/// asked of the server); the server's own refusal is `MCP` with what it said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UseMcpPrompt {
    /// The server's name.
    pub server: String,
    /// The prompt's name.
    pub name: String,
    /// Its arguments, by name.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// The resources a running server offers (every page of its list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMcpResources {
    /// The server's name.
    pub server: String,
}

/// The resource templates a running server offers (addresses with variables to fill
/// in, read with [`AttachMcpResource`] once filled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMcpResourceTemplates {
    /// The server's name.
    pub server: String,
}

/// Read a server's resource and attach it to the next question, as an image or a
/// document like a picked file: what was attached, and what was refused and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachMcpResource {
    /// The server's name.
    pub server: String,
    /// The resource's address.
    pub uri: String,
}
