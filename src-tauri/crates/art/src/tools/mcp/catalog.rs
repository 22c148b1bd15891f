//! A running server's prompts and resources: listed (every page), a prompt filled in
//! with its arguments, a resource read — each made into [`Piece`]s of text and files,
//! which [`fill`] turns into what the composer takes (text in the box, files attached
//! through the attachment store) and [`attach`] attaches.

use std::collections::BTreeMap;
use std::time::Duration;

use art_types::mcp::catalog::{
    FilledPrompt, McpPrompt, McpPromptArgument, McpResource, McpResourceTemplate,
};
use art_types::{Attachment, AttachmentProblem};
use base64::Engine;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::Value;

use super::{McpError, McpManager};
use crate::attachments::Attachments;

/// A part of a prompt's messages or of a resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Text, said by the user or (`assistant`) by the model.
    Text {
        /// Whether the assistant says it.
        assistant: bool,
        /// The text.
        text: String,
    },
    /// An image or a file, whole.
    File {
        /// A name to show, with an extension that says its type.
        name: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// A file whose bytes could not be read (not base64).
    Broken {
        /// Its name.
        name: String,
    },
    /// A resource named, not included: its address.
    Link {
        /// Its address.
        uri: String,
    },
}

impl Piece {
    /// What a text or a link puts in the composer's box: the text, preceded by who
    /// says it when `dialogue` (the assistant speaks too); a link as its address.
    pub fn said(&self, dialogue: bool) -> Option<String> {
        match self {
            Self::Text { assistant, text } if dialogue => {
                let who = if *assistant { "Assistant" } else { "User" };
                Some(format!("{who}: {text}"))
            }
            Self::Text { text, .. } => Some(text.clone()),
            Self::Link { uri } => Some(uri.clone()),
            Self::File { .. } | Self::Broken { .. } => None,
        }
    }
}

/// Whether the assistant speaks in `pieces` too (then each text says who speaks).
pub fn dialogue(pieces: &[Piece]) -> bool {
    pieces.iter().any(|p| {
        matches!(
            p,
            Piece::Text {
                assistant: true,
                ..
            }
        )
    })
}

impl McpManager {
    /// The prompts `server` offers (none when it says it has no prompts).
    pub async fn prompts(&self, server: &str) -> Result<Vec<McpPrompt>, McpError> {
        let Some(peer) = self.offering(server, |c| c.prompts.is_some())? else {
            return Ok(Vec::new());
        };
        let listed = within(self.list_limit(), "prompts/list", peer.list_all_prompts()).await?;
        Ok(listed
            .into_iter()
            .map(|p| McpPrompt {
                server: server.to_owned(),
                name: p.name,
                title: p.title,
                description: p.description.unwrap_or_default(),
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| McpPromptArgument {
                        name: a.name,
                        title: a.title,
                        description: a.description.unwrap_or_default(),
                        required: a.required.unwrap_or(false),
                    })
                    .collect(),
            })
            .collect())
    }

    /// The prompts of every running server, servers by name; one that fails to list
    /// them is left out (and logged).
    pub async fn all_prompts(&self) -> Vec<McpPrompt> {
        let mut all = Vec::new();
        for server in self.running_names() {
            match self.prompts(&server).await {
                Ok(prompts) => all.extend(prompts),
                Err(e) => tracing::warn!(%server, "could not list the server's prompts: {e}"),
            }
        }
        all
    }

    /// `server`'s prompt `name` filled in with `arguments`: its messages, in order. A
    /// required argument left out is refused before the server is asked.
    pub async fn prompt(
        &self,
        server: &str,
        name: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<Vec<Piece>, McpError> {
        let prompts = self.prompts(server).await?;
        let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
            let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
            return Err(McpError::InvalidConfig {
                field: "prompt",
                message: match names.is_empty() {
                    true => format!("`{server}` offers no prompts"),
                    false => format!(
                        "`{server}` has no prompt `{name}`; it offers: {}",
                        names.join(", ")
                    ),
                },
            });
        };
        prompt
            .check(arguments)
            .map_err(|message| McpError::InvalidConfig {
                field: "arguments",
                message,
            })?;
        let mut params = GetPromptRequestParams::new(name);
        let given: serde_json::Map<String, Value> = arguments
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        params.arguments = Some(given);
        let what = format!("prompt `{name}` of `{server}`");
        let peer = self.peer(server)?;
        let got = within(
            self.call_limit(server).await,
            &what,
            peer.get_prompt(params),
        )
        .await
        .map_err(|e| refused(e, &what))?;
        let got = serde_json::to_value(&got).unwrap_or_default();
        let mut pieces = Vec::new();
        let messages = got["messages"].as_array().map_or(&[][..], Vec::as_slice);
        for (i, message) in messages.iter().enumerate() {
            let assistant = message["role"] == "assistant";
            pieces.extend(content_pieces(&message["content"], assistant, i + 1));
        }
        Ok(pieces)
    }

    /// The resources `server` offers (none when it says it has no resources).
    pub async fn resources(&self, server: &str) -> Result<Vec<McpResource>, McpError> {
        let Some(peer) = self.offering(server, |c| c.resources.is_some())? else {
            return Ok(Vec::new());
        };
        let listed = within(
            self.list_limit(),
            "resources/list",
            peer.list_all_resources(),
        )
        .await?;
        Ok(listed.iter().filter_map(|r| naming(server, r)).collect())
    }

    /// The resource templates `server` offers (none when it has no resources).
    pub async fn resource_templates(
        &self,
        server: &str,
    ) -> Result<Vec<McpResourceTemplate>, McpError> {
        let Some(peer) = self.offering(server, |c| c.resources.is_some())? else {
            return Ok(Vec::new());
        };
        let what = "resources/templates/list";
        let listed = within(self.list_limit(), what, peer.list_all_resource_templates()).await?;
        Ok(listed.iter().filter_map(|t| naming(server, t)).collect())
    }

    /// The session with `server`, unless it says (`offers`) it has none of what is asked.
    fn offering(
        &self,
        server: &str,
        offers: impl FnOnce(&rmcp::model::ServerCapabilities) -> bool,
    ) -> Result<Option<rmcp::Peer<rmcp::RoleClient>>, McpError> {
        let peer = self.peer(server)?;
        let offered = peer.peer_info().is_some_and(|i| offers(&i.capabilities));
        Ok(offered.then_some(peer))
    }

    /// Read `server`'s resource `uri`: its contents, each a file (text or bytes).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<Vec<Piece>, McpError> {
        let peer = self.peer(server)?;
        let what = format!("resource {uri} of `{server}`");
        let read = within(
            self.call_limit(server).await,
            &what,
            peer.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await
        .map_err(|e| refused(e, &what))?;
        let read = serde_json::to_value(&read).unwrap_or_default();
        let contents = read["contents"].as_array().map_or(&[][..], Vec::as_slice);
        Ok(contents
            .iter()
            .enumerate()
            .filter_map(|(i, c)| resource_piece(c, i + 1))
            .collect())
    }

    /// How long a list may take: as long as the handshake.
    fn list_limit(&self) -> Duration {
        self.handshake_limit()
    }

    /// How long one prompt or resource may take: the server's call time limit.
    async fn call_limit(&self, server: &str) -> Duration {
        match self.store().get(server).await {
            Ok(config) => Duration::from_secs(u64::from(config.timeout_secs)),
            Err(_) => self.handshake_limit(),
        }
    }
}

/// A listed item as ours, naming `server` (our types read the protocol's field names);
/// one that does not read is logged and left out of the list.
fn naming<T: serde::de::DeserializeOwned>(server: &str, item: &impl serde::Serialize) -> Option<T> {
    let mut value = serde_json::to_value(item).ok()?;
    value
        .as_object_mut()?
        .insert("server".to_owned(), Value::String(server.to_owned()));
    serde_json::from_value(value)
        .map_err(|e| tracing::warn!(%server, "a listed item that does not read: {e}"))
        .ok()
}

/// `future`, or a timeout error naming `what` after `limit`.
async fn within<T>(
    limit: Duration,
    what: &str,
    future: impl Future<Output = Result<T, rmcp::ServiceError>>,
) -> Result<T, McpError> {
    match tokio::time::timeout(limit, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(refused(McpError::Protocol(describe(&e)), what)),
        Err(_) => Err(McpError::Timeout {
            what: what.to_owned(),
            secs: limit.as_secs(),
        }),
    }
}

/// An SDK error in plain words.
fn describe(error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(data) => data.message.to_string(),
        rmcp::ServiceError::TransportClosed => {
            "the server went away (its connection closed)".into()
        }
        other => other.to_string(),
    }
}

/// A failed request as the server's answer about `what`.
fn refused(error: McpError, what: &str) -> McpError {
    match error {
        McpError::Protocol(message) => McpError::Refused {
            what: what.to_owned(),
            message,
        },
        other => other,
    }
}

/// The pieces of one content block of a prompt message (the `n`th).
fn content_pieces(content: &Value, assistant: bool, n: usize) -> Vec<Piece> {
    let text = |key: &str| content[key].as_str().unwrap_or_default().to_owned();
    match content["type"].as_str().unwrap_or_default() {
        "text" => vec![Piece::Text {
            assistant,
            text: text("text"),
        }],
        "image" | "audio" => {
            let kind = content["type"].as_str().unwrap_or("file");
            let name = named(&format!("{kind}-{n}"), &text("mimeType"));
            vec![file(name, &text("data"))]
        }
        "resource" => resource_piece(&content["resource"], n)
            .into_iter()
            .collect(),
        "resource_link" => vec![Piece::Link { uri: text("uri") }],
        _ => Vec::new(),
    }
}

/// A resource's content (text or base64 bytes) as a file named after its address.
fn resource_piece(content: &Value, n: usize) -> Option<Piece> {
    let uri = content["uri"].as_str().unwrap_or_default();
    let mime = content["mimeType"].as_str().unwrap_or_default();
    let base = uri
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .find(|s| !s.is_empty())
        .map_or_else(|| format!("resource-{n}"), str::to_owned);
    let name = named(&base, mime);
    if let Some(text) = content["text"].as_str() {
        return Some(Piece::File {
            name,
            bytes: text.as_bytes().to_vec(),
        });
    }
    Some(file(name, content["blob"].as_str()?))
}

/// A file of base64 `data`.
fn file(name: String, data: &str) -> Piece {
    match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(bytes) => Piece::File { name, bytes },
        Err(_) => Piece::Broken { name },
    }
}

/// Why a [`Piece::Broken`] was not attached.
fn broken(name: String) -> AttachmentProblem {
    AttachmentProblem::Malformed {
        name,
        detail: "the server sent bytes that are not base64".into(),
    }
}

/// `base` with an extension that says `mime`, unless it has one already.
fn named(base: &str, mime: &str) -> String {
    let has_extension = std::path::Path::new(base)
        .extension()
        .is_some_and(|e| (1..=5).contains(&e.len()));
    if has_extension {
        return base.to_owned();
    }
    let extension = match mime.split(';').next().unwrap_or_default().trim() {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "application/pdf" => "pdf",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "text/markdown" => "md",
        "text/html" => "html",
        "text/csv" => "csv",
        "application/json" => "json",
        m if m.starts_with("text/") || m.is_empty() => "txt",
        _ => return base.to_owned(),
    };
    format!("{base}.{extension}")
}

/// `pieces` as the composer takes them: text in the box (each message's speaker said
/// when the assistant speaks too; a link as its address), files attached in `store`.
pub fn fill(pieces: Vec<Piece>, store: &Attachments) -> FilledPrompt {
    let dialogue = dialogue(&pieces);
    let texts: Vec<String> = pieces.iter().filter_map(|p| p.said(dialogue)).collect();
    let (attached, refused) = attach(pieces, store);
    FilledPrompt {
        text: texts.join("\n\n"),
        attached,
        refused,
    }
}

/// Attach each file of a resource read; what was attached, and what was refused.
pub fn attach(
    pieces: Vec<Piece>,
    store: &Attachments,
) -> (Vec<Attachment>, Vec<AttachmentProblem>) {
    let mut attached = Vec::new();
    let mut refused = Vec::new();
    for piece in pieces {
        match piece {
            Piece::File { name, bytes } => match store.add_bytes(&name, &bytes) {
                Ok(a) => attached.push(a),
                Err(p) => refused.push(p),
            },
            Piece::Broken { name } => refused.push(broken(name)),
            Piece::Text { .. } | Piece::Link { .. } => {}
        }
    }
    (attached, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_name_says_its_type() {
        assert_eq!(named("1", "text/plain"), "1.txt");
        assert_eq!(named("architecture.md", "text/markdown"), "architecture.md");
        assert_eq!(named("image-2", "image/png"), "image-2.png");
        assert_eq!(named("x", "application/octet-stream"), "x");
        assert_eq!(named("notes", ""), "notes.txt");
    }

    #[test]
    fn prompt_contents_become_text_files_and_links() {
        let text = content_pieces(&json!({"type": "text", "text": "hi"}), false, 1);
        assert_eq!(
            text,
            [Piece::Text {
                assistant: false,
                text: "hi".into()
            }]
        );
        let embedded = json!({"type": "resource", "resource": {
            "uri": "demo://resource/dynamic/text/1", "mimeType": "text/plain", "text": "Resource 1"}});
        assert_eq!(
            content_pieces(&embedded, false, 2),
            [Piece::File {
                name: "1.txt".into(),
                bytes: b"Resource 1".to_vec()
            }]
        );
        let blob = json!({"type": "resource", "resource": {
            "uri": "demo://resource/dynamic/blob/3", "mimeType": "application/octet-stream", "blob": "AAEC"}});
        assert_eq!(
            content_pieces(&blob, false, 1),
            [Piece::File {
                name: "3".into(),
                bytes: vec![0, 1, 2]
            }]
        );
        let image = json!({"type": "image", "mimeType": "image/png", "data": "iVBO"});
        assert!(
            matches!(&content_pieces(&image, true, 4)[..], [Piece::File { name, .. }] if name == "image-4.png")
        );
        let link = json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a"});
        assert_eq!(
            content_pieces(&link, false, 1),
            [Piece::Link {
                uri: "file:///a.txt".into()
            }]
        );
        let bad = json!({"type": "image", "mimeType": "image/png", "data": "not base64!"});
        assert_eq!(
            content_pieces(&bad, false, 1),
            [Piece::Broken {
                name: "image-1.png".into()
            }],
            "undecodable bytes are said, not left out"
        );
    }
}
