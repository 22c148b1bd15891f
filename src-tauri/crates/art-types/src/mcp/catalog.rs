//! What a server offers besides tools, and how a long call is getting on.
//!
//! - A server's **prompts** ([`McpPrompt`]) are templates the user picks in the composer
//!   (`/name`): their arguments are asked in a small form, and the messages the server
//!   makes of them are put into the composer ([`FilledPrompt`]) — text in the box, an
//!   image or an embedded file as an attachment — for the user to read, change and send.
//! - A server's **resources** ([`McpResource`]) are files it can hand over; the Tools
//!   page lists them and attaches one to the next question, through the attachment store.
//! - A call's **progress** ([`ToolProgress`], observation `ToolProgress`) is what its
//!   server reports while it runs (`notifications/progress`), shown on its tool card.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Attachment, AttachmentProblem};

/// A prompt a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPrompt {
    /// The server's name.
    pub server: String,
    /// The prompt's name, as the server knows it (what `/name` says).
    pub name: String,
    /// A title for people, when the server gives one.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// What it asks for, in the server's order.
    #[serde(default)]
    pub arguments: Vec<McpPromptArgument>,
}

impl McpPrompt {
    /// Whether `values` can fill the prompt in: every required argument given, none it
    /// does not take; else what is wrong, in the words the form and `art` show.
    pub fn check(&self, values: &BTreeMap<String, String>) -> Result<(), String> {
        let missing = self.missing(values);
        if !missing.is_empty() {
            return Err(format!("`{}` needs {}", self.name, missing.join(", ")));
        }
        let unknown = self.unknown(values);
        if !unknown.is_empty() {
            return Err(format!("`{}` takes no {}", self.name, unknown.join(", ")));
        }
        Ok(())
    }

    /// The required arguments `values` leaves out or empty, by name.
    pub fn missing<'a>(&'a self, values: &BTreeMap<String, String>) -> Vec<&'a str> {
        self.arguments
            .iter()
            .filter(|a| a.required)
            .filter(|a| values.get(&a.name).is_none_or(|v| v.trim().is_empty()))
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The names in `values` the prompt does not take.
    pub fn unknown<'a>(&self, values: &'a BTreeMap<String, String>) -> Vec<&'a str> {
        values
            .keys()
            .filter(|k| !self.arguments.iter().any(|a| &a.name == *k))
            .map(String::as_str)
            .collect()
    }
}

/// One argument of a prompt (always a string).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What to give.
    #[serde(default)]
    pub description: String,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}

/// A prompt's messages made ready for the composer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilledPrompt {
    /// The text for the box: the messages' text in order (each preceded by who says it
    /// when the prompt has the assistant speak too), a linked resource as its address.
    pub text: String,
    /// Images and embedded files, attached (in the store).
    pub attached: Vec<Attachment>,
    /// Images and files that could not be attached, and why.
    pub refused: Vec<AttachmentProblem>,
}

/// A resource a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResource {
    /// The server's name.
    pub server: String,
    /// Its address (what reading it names).
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// Its media type, when the server says.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server says.
    #[serde(default)]
    pub size: Option<u64>,
}

/// How far a running call has got, as its server last said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolProgress {
    /// The call.
    pub call_id: String,
    /// Done so far (grows; its unit is the server's).
    pub progress: f64,
    /// The whole, when known.
    #[serde(default)]
    pub total: Option<f64>,
    /// What it is doing.
    #[serde(default)]
    pub message: Option<String>,
}

impl ToolProgress {
    /// The part done, between 0 and 1, when the whole is known.
    pub fn fraction(&self) -> Option<f64> {
        let total = self.total.filter(|t| *t > 0.0 && t.is_finite())?;
        Some((self.progress / total).clamp(0.0, 1.0))
    }
}

impl std::fmt::Display for ToolProgress {
    /// What the tool card says: `3 of 10 · Step 3`, `42 · working`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let number = |n: f64| {
            if n.fract() == 0.0 && n.abs() < 1e15 {
                format!("{n:.0}")
            } else {
                format!("{n:.2}")
            }
        };
        match self.total {
            Some(total) => write!(f, "{} of {}", number(self.progress), number(total))?,
            None => write!(f, "{}", number(self.progress))?,
        }
        match self.message.as_deref().map(str::trim) {
            Some(message) if !message.is_empty() => write!(f, " · {message}"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt() -> McpPrompt {
        let arg = |name: &str, required| McpPromptArgument {
            name: name.into(),
            title: None,
            description: String::new(),
            required,
        };
        McpPrompt {
            server: "everything".into(),
            name: "args-prompt".into(),
            title: None,
            description: String::new(),
            arguments: vec![arg("city", true), arg("state", false)],
        }
    }

    #[test]
    fn a_required_argument_left_out_or_blank_is_missing() {
        let p = prompt();
        let mut values = BTreeMap::new();
        assert_eq!(p.missing(&values), ["city"]);
        values.insert("city".to_owned(), "  ".to_owned());
        assert_eq!(p.missing(&values), ["city"]);
        values.insert("city".to_owned(), "Lyon".to_owned());
        assert!(p.missing(&values).is_empty());
        values.insert("country".to_owned(), "FR".to_owned());
        assert_eq!(p.unknown(&values), ["country"]);
        assert_eq!(
            p.check(&values).unwrap_err(),
            "`args-prompt` takes no country"
        );
        values.clear();
        assert_eq!(p.check(&values).unwrap_err(), "`args-prompt` needs city");
    }

    #[test]
    fn progress_reads_as_the_card_shows_it() {
        let mut p = ToolProgress {
            call_id: "c".into(),
            progress: 3.0,
            total: Some(10.0),
            message: Some("Step 3".into()),
        };
        assert_eq!(p.to_string(), "3 of 10 · Step 3");
        assert_eq!(p.fraction(), Some(0.3));
        p.total = None;
        p.message = None;
        p.progress = 0.5;
        assert_eq!(p.to_string(), "0.50");
        assert_eq!(p.fraction(), None);
        p.total = Some(0.0);
        assert_eq!(p.fraction(), None, "a zero total is no whole");
    }
}
