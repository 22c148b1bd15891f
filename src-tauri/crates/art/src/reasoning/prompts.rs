//! PromptManager: named prompt fragments with `{{key}}` placeholders, and validation of
//! a finished prompt before it is sent.

use std::collections::{BTreeMap, HashMap};

use art_types::{Prompt, PromptRole};

/// Why a prompt could not be built or is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// No fragment with that name.
    #[error("no prompt fragment named `{0}`")]
    UnknownFragment(String),
    /// A placeholder had no value.
    #[error("prompt fragment `{fragment}` needs a value for `{{{{{key}}}}}`")]
    MissingValue {
        /// The fragment's name.
        fragment: String,
        /// The placeholder left without a value.
        key: String,
    },
    /// A `{{` without its `}}`.
    #[error("prompt fragment `{0}` has an unclosed `{{{{`")]
    Unclosed(String),
    /// The prompt breaks a rule providers enforce.
    #[error("invalid prompt: {0}")]
    Invalid(String),
}

/// Agent base prompt of the PES agent (the custom part is appended after it).
pub const PES_BASE: &str = "You are a helpful assistant inside ART Workbench. You plan before you act, \
use tools when they help, and answer clearly.";

/// Base prompt of a run that answers in one call, without a plan (a thread that offers
/// no tools); the custom part is appended after it. Nothing in it speaks of plans or
/// tools, which a small model would otherwise write about.
pub const CHAT_BASE: &str = "You are a helpful assistant inside ART Workbench. Answer the user's latest message \
clearly, in Markdown where it helps.";

/// Planning instructions; `{{tools}}` is the list of enabled tools.
pub const PES_PLANNING: &str = r#"Decide how to answer the user's latest message.
Available tools:
{{tools}}

Reply with one JSON object and nothing else:
{"title": "<a few words>", "intent": "<what the user wants>",
 "steps": [{"id": "1", "description": "<what to do>", "tools": ["<tool name>"]}],
 "toolCalls": [{"callId": "call_1", "toolName": "<tool name>", "arguments": {<arguments matching the tool's schema>}}]}
"steps" is the work to do before answering, in order. Name in "tools" the tools a step
needs; a step of pure reasoning names none. A later step sees what earlier steps found.
Do not add a step for writing the answer. Use "steps": [] when no work is needed.
"toolCalls" are calls of the first step whose arguments you already know; use [] otherwise.
Only use the tools listed above."#;

/// One step's instructions; `{{plan}}` is the todo list with each step's status and
/// result, `{{number}}` and `{{step}}` the step to do now.
pub const PES_STEP: &str =
    "You are working through a plan for the user's latest message, one step at a time.
The plan:
{{plan}}

Now do step {{number}}: {{step}}
Call the tools this step needs; you will see their results and may call more. When the step \
is done, reply with what it found or did, in a few sentences, and call no tool. If what you \
found changes the steps after this one, call `update_plan` with the steps that should follow.";

/// Added to a step's instructions when the model calls tools in text; `{{tools}}` is
/// the list of tools it may call.
pub const PES_STEP_TEXT_TOOLS: &str = r#"Available tools:
{{tools}}
To call tools, reply with one JSON object and nothing else:
{"toolCalls": [{"callId": "call_1", "toolName": "<tool name>", "arguments": {<arguments matching the tool's schema>}}]}"#;

/// Synthesis instructions; `{{intent}}`, `{{steps}}` and `{{tool_results}}` are filled in.
pub const PES_SYNTHESIS: &str = "Write the final answer to the user's latest message.
Intent: {{intent}}
The plan and what each step produced:
{{steps}}
Tool results:
{{tool_results}}
Use these results; where a step or a tool failed, say so plainly and answer as well as you \
can. Answer directly, in Markdown where it helps.";

/// Named fragments.
#[derive(Debug, Clone)]
pub struct PromptManager {
    fragments: BTreeMap<String, String>,
}

impl Default for PromptManager {
    fn default() -> Self {
        let mut manager = Self {
            fragments: BTreeMap::new(),
        };
        manager.register("pes_base", PES_BASE);
        manager.register("pes_planning", PES_PLANNING);
        manager.register("pes_step", PES_STEP);
        manager.register("pes_step_text_tools", PES_STEP_TEXT_TOOLS);
        manager.register("pes_synthesis", PES_SYNTHESIS);
        manager
    }
}

impl PromptManager {
    /// Add or replace a fragment.
    pub fn register(&mut self, name: &str, template: &str) {
        self.fragments.insert(name.to_owned(), template.to_owned());
    }

    /// A fragment with its placeholders filled. Every placeholder needs a value.
    pub fn render(
        &self,
        name: &str,
        values: &HashMap<&str, String>,
    ) -> Result<String, PromptError> {
        let template = self
            .fragments
            .get(name)
            .ok_or_else(|| PromptError::UnknownFragment(name.to_owned()))?;
        let mut out = String::with_capacity(template.len());
        let mut rest = template.as_str();
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find("}}")
                .ok_or_else(|| PromptError::Unclosed(name.to_owned()))?;
            let key = after[..end].trim();
            let value = values.get(key).ok_or_else(|| PromptError::MissingValue {
                fragment: name.to_owned(),
                key: key.to_owned(),
            })?;
            out.push_str(value);
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// Check the rules providers enforce before sending: not empty, a user message present,
/// tool results answering earlier calls by id and naming their tool.
pub fn validate(prompt: &Prompt) -> Result<(), PromptError> {
    if !prompt.iter().any(|m| m.role == PromptRole::User) {
        return Err(PromptError::Invalid("there is no user message".into()));
    }
    let mut call_ids: HashMap<&str, &str> = HashMap::new();
    for (i, message) in prompt.iter().enumerate() {
        for call in &message.tool_calls {
            if call.id.is_empty() || call.function.name.is_empty() {
                return Err(PromptError::Invalid(format!(
                    "message {i}: a tool call without id or name"
                )));
            }
            call_ids.insert(&call.id, &call.function.name);
        }
        if message.role == PromptRole::ToolResult {
            let id = message.tool_call_id.as_deref().ok_or_else(|| {
                PromptError::Invalid(format!("message {i}: a tool result without tool_call_id"))
            })?;
            if message.name.is_none() {
                return Err(PromptError::Invalid(format!(
                    "message {i}: a tool result without the tool name"
                )));
            }
            if !call_ids.contains_key(id) {
                return Err(PromptError::Invalid(format!(
                    "message {i}: a tool result for unknown call `{id}`"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use art_types::{FunctionCall, PromptMessage, ToolCallRequest};

    use super::*;

    #[test]
    fn renders_placeholders_and_reports_what_is_missing() {
        let mut pm = PromptManager::default();
        pm.register("greet", "Hello {{ name }}, {{name}}!");
        let values = HashMap::from([("name", "Ada".to_owned())]);
        assert_eq!(pm.render("greet", &values).unwrap(), "Hello Ada, Ada!");
        assert!(matches!(
            pm.render("greet", &HashMap::new()),
            Err(PromptError::MissingValue { .. })
        ));
        assert!(matches!(
            pm.render("nope", &values),
            Err(PromptError::UnknownFragment(_))
        ));
        pm.register("broken", "Hi {{name");
        assert!(matches!(
            pm.render("broken", &values),
            Err(PromptError::Unclosed(_))
        ));
        let planning = pm
            .render(
                "pes_planning",
                &HashMap::from([("tools", "- calculator".to_owned())]),
            )
            .unwrap();
        assert!(planning.contains("- calculator"));
    }

    #[test]
    fn validation_links_tool_results_to_calls() {
        let call = ToolCallRequest {
            id: "c1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "calculator".into(),
                arguments: "{}".into(),
            },
            signature: None,
        };
        let mut assistant = PromptMessage::text(PromptRole::Assistant, "");
        assistant.tool_calls = vec![call];
        let mut result = PromptMessage::text(PromptRole::ToolResult, "4");
        result.tool_call_id = Some("c1".into());
        result.name = Some("calculator".into());
        let user = PromptMessage::text(PromptRole::User, "2+2?");
        assert!(validate(&vec![user.clone(), assistant.clone(), result.clone()]).is_ok());

        let mut orphan = result.clone();
        orphan.tool_call_id = Some("zz".into());
        assert!(validate(&vec![user.clone(), assistant.clone(), orphan]).is_err());
        let mut unnamed = result;
        unnamed.name = None;
        assert!(validate(&vec![user, assistant, unnamed]).is_err());
        assert!(validate(&vec![PromptMessage::text(PromptRole::System, "x")]).is_err());
    }
}
