//! `art mcp prompts|prompt|resources|read`: a server's prompts and resources on the
//! terminal, as the app's composer and Tools page offer them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use art::standard::Standard;
use art::tools::mcp::catalog::{self, Piece};
use art_types::mcp::McpServerState;

use crate::out::sayln;

/// Start `name` for this command; its state said when it does not get ready.
async fn started(stack: &Standard, name: &str) -> anyhow::Result<bool> {
    let status = stack.art.mcp.start(name).await?;
    if matches!(status.state, McpServerState::Ready { .. }) {
        return Ok(true);
    }
    super::mcp::report(&status)?;
    Ok(false)
}

/// `art mcp prompts NAME`: each prompt as `/name`, what it is for, its arguments
/// (optional ones in brackets).
pub async fn prompts(stack: &Standard, name: &str) -> anyhow::Result<ExitCode> {
    if !started(stack, name).await? {
        return Ok(ExitCode::FAILURE);
    }
    let prompts = stack.art.mcp.prompts(name).await?;
    if prompts.is_empty() {
        sayln!("{name} offers no prompts.");
    }
    for prompt in prompts {
        let arguments: Vec<String> = prompt
            .arguments
            .iter()
            .map(|a| match a.required {
                true => a.name.clone(),
                false => format!("[{}]", a.name),
            })
            .collect();
        let about = prompt.description.lines().next().unwrap_or_default();
        sayln!("/{} {}  {about}", prompt.name, arguments.join(" "));
    }
    Ok(ExitCode::SUCCESS)
}

/// `art mcp prompt NAME PROMPT ARG=VALUE…`: the prompt's messages; an embedded text
/// file framed with its name (as a question's attachment), another file by name and
/// size, a linked resource by its address.
pub async fn prompt(
    stack: &Standard,
    name: &str,
    prompt: &str,
    arguments: &[String],
) -> anyhow::Result<ExitCode> {
    let mut values = BTreeMap::new();
    for argument in arguments {
        let (key, value) = argument
            .split_once('=')
            .with_context(|| format!("`{argument}` is not NAME=VALUE"))?;
        values.insert(key.trim().to_owned(), value.to_owned());
    }
    if !started(stack, name).await? {
        return Ok(ExitCode::FAILURE);
    }
    let pieces = stack.art.mcp.prompt(name, prompt, &values).await?;
    let dialogue = catalog::dialogue(&pieces);
    let blocks: Vec<String> = pieces
        .iter()
        .map(|piece| match piece {
            Piece::File { name, bytes } => match std::str::from_utf8(bytes) {
                Ok(text) => art::attachments::prompt::framed(name, text),
                Err(_) => format!("[{name}: {} bytes]", bytes.len()),
            },
            Piece::Broken { name } => format!("[{name}: not readable (not base64)]"),
            said => said.said(dialogue).unwrap_or_default(),
        })
        .collect();
    sayln!("{}", blocks.join("\n\n"));
    Ok(ExitCode::SUCCESS)
}

/// `art mcp resources NAME`: each resource's address, name, type and size, then each
/// address template (to fill in and read).
pub async fn resources(stack: &Standard, name: &str) -> anyhow::Result<ExitCode> {
    if !started(stack, name).await? {
        return Ok(ExitCode::FAILURE);
    }
    let resources = stack.art.mcp.resources(name).await?;
    let templates = stack.art.mcp.resource_templates(name).await?;
    if resources.is_empty() && templates.is_empty() {
        sayln!("{name} offers no resources.");
    }
    for r in resources {
        let mut about = Vec::new();
        about.extend(r.mime_type.clone());
        about.extend(r.size.map(|s| format!("{s} bytes")));
        let about = match about.is_empty() {
            true => String::new(),
            false => format!("  ({})", about.join(", ")),
        };
        sayln!(
            "{}  {}{about}",
            r.uri,
            r.title.as_deref().unwrap_or(&r.name)
        );
    }
    // A template's address is read once filled in: `art mcp read NAME <address>`.
    for t in templates {
        let kind = t.mime_type.map(|m| format!(", {m}")).unwrap_or_default();
        let title = t.title.as_deref().unwrap_or(&t.name);
        sayln!("{}  {title}  (template{kind})", t.uri_template);
    }
    Ok(ExitCode::SUCCESS)
}

/// `art mcp read NAME URI [--out FILE]`: the resource's text on standard output, or
/// its bytes into a file.
pub async fn read(
    stack: &Standard,
    name: &str,
    uri: &str,
    out: Option<&PathBuf>,
) -> anyhow::Result<ExitCode> {
    if !started(stack, name).await? {
        return Ok(ExitCode::FAILURE);
    }
    let pieces = stack.art.mcp.read_resource(name, uri).await?;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for piece in pieces {
        match piece {
            Piece::File { name, bytes } => files.push((name, bytes)),
            Piece::Broken { name } => bail!("{name}: the server sent bytes that are not base64"),
            Piece::Text { .. } | Piece::Link { .. } => {}
        }
    }
    if files.is_empty() {
        bail!("{uri} has no contents");
    }
    if let Some(path) = out {
        let bytes: Vec<u8> = files.into_iter().flat_map(|(_, b)| b).collect();
        std::fs::write(path, &bytes).with_context(|| format!("writing {}", path.display()))?;
        sayln!("Wrote {} bytes to {}.", bytes.len(), path.display());
        return Ok(ExitCode::SUCCESS);
    }
    for (file, bytes) in files {
        let Ok(text) = String::from_utf8(bytes) else {
            bail!("{file} is not text: write it to a file with --out FILE");
        };
        sayln!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}
