//! The de-facto configuration users paste: `{"mcpServers": {"name": {…}}}` as Claude
//! Desktop, Cursor, Jan and LM Studio write it. A server has `command` / `args` / `env`
//! / `cwd` (stdio) or `url` / `headers` (streamable HTTP); `disabled: true` imports it
//! disabled. Names are made valid (lowercase, `-` for anything else) and each change
//! is reported; a server that cannot be imported is listed with the reason and the
//! others still are.

use std::collections::BTreeMap;

use art_types::mcp::{McpServerConfig, McpTransport, check_server_name};
use serde_json::{Map, Value};

use crate::secrets::Secret;

/// A server read from the JSON, with its header values (secrets, for the keychain).
pub struct Imported {
    /// The configuration to save.
    pub config: McpServerConfig,
    /// Header values, kept out of the configuration.
    pub header_values: BTreeMap<String, Secret>,
    /// The name in the JSON, when it had to change.
    pub renamed_from: Option<String>,
}

/// What a pasted JSON holds.
#[derive(Default)]
pub struct Parsed {
    /// Servers that can be saved.
    pub servers: Vec<Imported>,
    /// Servers that cannot, by their name in the JSON, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Read `text`: an object with `mcpServers` (or the servers object itself).
pub fn parse(text: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "this is not JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    let servers = match value.get("mcpServers") {
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("`mcpServers` must be an object of servers by name".into()),
        None => match &value {
            Value::Object(servers)
                if servers
                    .values()
                    .all(|s| s.get("command").is_some() || s.get("url").is_some())
                    && !servers.is_empty() =>
            {
                servers
            }
            _ => {
                return Err(
                    "expected {\"mcpServers\": {\"name\": {\"command\": …} or {\"url\": …}}}"
                        .into(),
                );
            }
        },
    };
    let mut parsed = Parsed::default();
    for (name, entry) in servers {
        match server(name, entry) {
            Ok(imported) => {
                if parsed
                    .servers
                    .iter()
                    .any(|s| s.config.name == imported.config.name)
                {
                    parsed.skipped.push((
                        name.clone(),
                        format!("another server is also named `{}`", imported.config.name),
                    ));
                } else {
                    parsed.servers.push(imported);
                }
            }
            Err(reason) => parsed.skipped.push((name.clone(), reason)),
        }
    }
    Ok(parsed)
}

/// `name` made a valid server name: lowercase, runs of other characters as one `-`.
pub fn valid_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    out.chars()
        .take(32)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned()
}

fn strings(entry: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{key}` must hold strings"))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be a list of strings")),
    }
}

fn string_map(entry: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("`{key}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be an object of strings")),
    }
}

fn server(name: &str, entry: &Value) -> Result<Imported, String> {
    let entry = entry.as_object().ok_or("a server must be an object")?;
    let valid = valid_name(name);
    check_server_name(&valid).map_err(|_| format!("`{name}` cannot be made a server name"))?;
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == "sse" {
        return Err("the older HTTP+SSE transport is not supported: use the server's streamable HTTP endpoint".into());
    }
    let mut header_values = BTreeMap::new();
    let transport = match (entry.get("command"), entry.get("url")) {
        (Some(Value::String(command)), None) => McpTransport::Stdio {
            command: command.clone(),
            args: strings(entry, "args")?,
            env: string_map(entry, "env")?,
            cwd: entry.get("cwd").and_then(Value::as_str).map(str::to_owned),
            secret_env: Vec::new(),
        },
        (None, Some(Value::String(url))) => {
            let headers = string_map(entry, "headers")?;
            let names = headers.keys().cloned().collect();
            header_values = headers
                .into_iter()
                .map(|(k, v)| (k, Secret::new(v)))
                .collect();
            McpTransport::Http {
                url: url.clone(),
                headers: names,
            }
        }
        (Some(_), Some(_)) => return Err("give either `command` or `url`, not both".into()),
        _ => return Err("a server needs a `command` (stdio) or a `url` (streamable HTTP)".into()),
    };
    let mut config = McpServerConfig::new(valid.clone(), transport);
    config.enabled = !entry
        .get("disabled")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    super::store::validate(&config).map_err(|e| e.to_string())?;
    Ok(Imported {
        config,
        header_values,
        renamed_from: (valid != name).then(|| name.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claude_desktop_format_is_read_with_secrets_apart() {
        let text = r#"{"mcpServers": {
            "time":  {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "My Files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "disabled": true},
            "remote": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer SENTINEL"}},
            "old": {"type": "sse", "url": "https://example.invalid/sse"},
            "broken": {"args": []}
        }}"#;
        let parsed = parse(text).unwrap();
        let names: Vec<_> = parsed
            .servers
            .iter()
            .map(|s| s.config.name.as_str())
            .collect();
        assert_eq!(names, ["my-files", "remote", "time"]);
        let files = &parsed.servers[0];
        assert_eq!(files.renamed_from.as_deref(), Some("My Files"));
        assert!(!files.config.enabled);
        let remote = &parsed.servers[1];
        let stored = serde_json::to_string(&remote.config).unwrap();
        assert!(!stored.contains("SENTINEL"), "{stored}");
        assert_eq!(
            remote.header_values["Authorization"].expose(),
            "Bearer SENTINEL"
        );
        let skipped: Vec<_> = parsed.skipped.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(skipped, ["broken", "old"]);
    }

    #[test]
    fn bad_json_says_where() {
        let error = parse("{\"mcpServers\": {").err().unwrap();
        assert!(error.contains("line 1"), "{error}");
        assert!(parse("[1]").is_err());
    }

    #[test]
    fn names_are_made_valid() {
        assert_eq!(valid_name("GitHub_MCP server"), "github-mcp-server");
        assert_eq!(valid_name("__x__"), "x");
    }
}
