//! ToolRegistry: tools by name, each with its argument validator compiled once.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use art_types::ToolSchema;
use serde_json::Value;

use super::{ToolError, ToolExecutor};

/// Longest validation report kept in an error message.
const MAX_VALIDATION_ERRORS: usize = 5;

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The tool's name is empty or has characters providers refuse.
    #[error("invalid tool name {0:?}: use 1-64 letters, digits, '_' or '-'")]
    InvalidName(String),
    /// The tool's input schema is not a valid JSON Schema.
    #[error("tool {name}: invalid input schema: {message}")]
    InvalidSchema {
        /// Tool name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

impl RegistryError {
    /// The tool it is about.
    pub fn tool_name(&self) -> &str {
        match self {
            Self::InvalidName(name) | Self::InvalidSchema { name, .. } => name,
        }
    }
}

/// A registered tool and its compiled validator.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn ToolExecutor>,
    pub(crate) validator: Arc<jsonschema::Validator>,
}

/// Tools by name.
#[derive(Default)]
pub struct ToolRegistry {
    tools: RwLock<BTreeMap<String, Entry>>,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tool with its validator compiled.
    fn prepare(tool: Arc<dyn ToolExecutor>) -> Result<(String, Entry), RegistryError> {
        let schema = tool.schema();
        let name = schema.name.clone();
        if !valid_name(&name) {
            return Err(RegistryError::InvalidName(name));
        }
        let validator = jsonschema::validator_for(&schema.input_schema).map_err(|e| {
            RegistryError::InvalidSchema {
                name: name.clone(),
                message: e.to_string(),
            }
        })?;
        let entry = Entry {
            tool,
            validator: Arc::new(validator),
        };
        Ok((name, entry))
    }

    /// In one step, remove the tools whose names `remove` picks and register `tools`:
    /// nobody sees a moment without them. Tools that cannot be registered are
    /// returned with the reason; the others are registered.
    pub fn replace_where(
        &self,
        remove: impl Fn(&str) -> bool,
        tools: Vec<Arc<dyn ToolExecutor>>,
    ) -> Vec<RegistryError> {
        let mut refused = Vec::new();
        let prepared: Vec<(String, Entry)> = tools
            .into_iter()
            .filter_map(|tool| Self::prepare(tool).map_err(|e| refused.push(e)).ok())
            .collect();
        let mut registered = self.tools.write().unwrap_or_else(|p| p.into_inner());
        registered.retain(|name, _| !remove(name));
        registered.extend(prepared);
        refused
    }

    /// Register a tool; a tool of the same name is replaced (with a warning).
    pub fn register(&self, tool: Arc<dyn ToolExecutor>) -> Result<(), RegistryError> {
        let (name, entry) = Self::prepare(tool)?;
        let previous = self
            .tools
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone(), entry);
        if previous.is_some() {
            tracing::warn!(tool = %name, "a tool with this name was already registered; replaced");
        }
        Ok(())
    }

    /// Check `arguments` against the input schema of tool `name`: `TOOL_NOT_FOUND`, or
    /// `INVALID_TOOL_ARGUMENTS` naming where each problem is (the first few).
    pub fn check_arguments(&self, name: &str, arguments: &Value) -> Result<(), ToolError> {
        let entry = self.entry(name).ok_or_else(|| {
            ToolError::new("TOOL_NOT_FOUND", format!("there is no tool named `{name}`"))
        })?;
        let problems: Vec<String> = entry
            .validator
            .iter_errors(arguments)
            .take(MAX_VALIDATION_ERRORS)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "arguments".to_owned()
                } else {
                    path
                };
                format!("{at}: {e}")
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        Err(ToolError::new(
            "INVALID_TOOL_ARGUMENTS",
            format!("invalid arguments for `{name}`: {}", problems.join("; ")),
        ))
    }

    pub(crate) fn entry(&self, name: &str) -> Option<Entry> {
        self.tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// Schemas of every tool, by name.
    pub fn list(&self) -> Vec<ToolSchema> {
        self.tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|e| e.tool.schema().clone())
            .collect()
    }

    /// Schemas of the tools a thread has enabled (unknown names are ignored).
    pub fn list_enabled(&self, enabled: &[String]) -> Vec<ToolSchema> {
        self.list()
            .into_iter()
            .filter(|s| enabled.contains(&s.name))
            .collect()
    }

    /// What happens before `name` runs when a thread says nothing of it (`None`: no
    /// such tool).
    pub fn default_policy(&self, name: &str) -> Option<art_types::approval::ToolPolicy> {
        self.entry(name).map(|e| e.tool.default_policy())
    }

    /// Whether a tool of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.entry(name).is_some()
    }
}
