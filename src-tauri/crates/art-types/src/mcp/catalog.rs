//! What a server offers besides tools, and how a long call is getting on.
//!
//! - A server's **prompts** ([`McpPrompt`]) are templates the user picks in the composer
//!   (`/name`): their arguments are asked in a small form, and the messages the server
//!   makes of them are put into the composer ([`FilledPrompt`]) — text in the box, an
//!   image or an embedded file as an attachment — for the user to read, change and send.
//! - A server's **resources** ([`McpResource`]) are files it can hand over; the Tools
//!   page lists them and attaches one to the next question, through the attachment store.
//!   A template ([`McpResourceTemplate`]) names a family of them by address: its
//!   variables are asked and the address filled in.
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

/// A family of resources a server offers by address template (RFC 6570, e.g.
/// `demo://resource/dynamic/text/{resourceId}`): its variables are asked, the address
/// filled in and read like a listed resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpResourceTemplate {
    /// The server's name.
    pub server: String,
    /// The address template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is (often what a variable must be).
    #[serde(default)]
    pub description: String,
    /// The media type of what it names, when the server says.
    #[serde(default)]
    pub mime_type: Option<String>,
}

impl McpResourceTemplate {
    /// Its variables, in the order they appear.
    pub fn variables(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (_, names_in) in expressions(&self.uri_template) {
            for name in names_in {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// The address with `values` filled in (RFC 6570 levels 1–3: `{x}`, `{+x}`,
    /// `{#x}`, `{.x}`, `{/x}`, `{;x}`, `{?x,y}`, `{&x}`), each value percent-encoded;
    /// a variable without a value is what is wrong.
    pub fn fill(&self, values: &BTreeMap<String, String>) -> Result<String, String> {
        let missing: Vec<String> = self
            .variables()
            .into_iter()
            .filter(|v| values.get(v).is_none_or(|x| x.trim().is_empty()))
            .collect();
        if !missing.is_empty() {
            return Err(format!("the address needs {}", missing.join(", ")));
        }
        let mut out = String::new();
        let mut rest = self.uri_template.as_str();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}') else {
                return Err(format!("`{}` is not a valid template", self.uri_template));
            };
            let inside = &rest[open + 1..open + close];
            let (operator, list) = split_operator(inside);
            let parts: Vec<(String, String)> = list
                .iter()
                .map(|name| {
                    let value = &values[name];
                    (
                        name.clone(),
                        encode(value, matches!(operator, Some('+' | '#'))),
                    )
                })
                .collect();
            let joined = |sep: &str, named: bool| {
                parts
                    .iter()
                    .map(|(n, v)| if named { format!("{n}={v}") } else { v.clone() })
                    .collect::<Vec<_>>()
                    .join(sep)
            };
            out.push_str(&match operator {
                None | Some('+') => joined(",", false),
                Some('#') => format!("#{}", joined(",", false)),
                Some('.') => format!(".{}", joined(".", false)),
                Some('/') => format!("/{}", joined("/", false)),
                Some(';') => format!(";{}", joined(";", true)),
                Some('?') => format!("?{}", joined("&", true)),
                Some('&') => format!("&{}", joined("&", true)),
                Some(_) => joined(",", false),
            });
            rest = &rest[open + close + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// The `{…}` expressions of a template: each one's operator and variable names.
fn expressions(template: &str) -> Vec<(Option<char>, Vec<String>)> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        found.push(split_operator(&rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    found
}

fn split_operator(inside: &str) -> (Option<char>, Vec<String>) {
    let operator = inside
        .chars()
        .next()
        .filter(|c| matches!(c, '+' | '#' | '.' | '/' | ';' | '?' | '&'));
    let names = &inside[operator.map_or(0, char::len_utf8)..];
    let names = names
        .split(',')
        // An explode or prefix modifier names the same variable.
        .map(|n| {
            n.trim_end_matches('*')
                .split(':')
                .next()
                .unwrap_or_default()
                .trim()
        })
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    (operator, names)
}

/// `value` percent-encoded: unreserved characters kept (and reserved ones too when
/// `reserved` is allowed, as `{+x}` and `{#x}` say).
fn encode(value: &str, reserved: bool) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        let c = byte as char;
        let keep = c.is_ascii_alphanumeric()
            || matches!(c, '-' | '.' | '_' | '~')
            || (reserved && ":/?#[]@!$&'()*+,;=".contains(c));
        if keep {
            out.push(c);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
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
    fn a_template_names_its_variables_and_fills_them_in_encoded() {
        let t = |template: &str| McpResourceTemplate {
            server: "s".into(),
            uri_template: template.into(),
            name: "n".into(),
            title: None,
            description: String::new(),
            mime_type: None,
        };
        let text = t("demo://resource/dynamic/text/{resourceId}");
        assert_eq!(text.variables(), ["resourceId"]);
        let mut values = BTreeMap::new();
        assert_eq!(
            text.fill(&values).unwrap_err(),
            "the address needs resourceId"
        );
        values.insert("resourceId".to_owned(), "3".to_owned());
        assert_eq!(
            text.fill(&values).unwrap(),
            "demo://resource/dynamic/text/3"
        );
        values.insert("resourceId".to_owned(), "a b/c".to_owned());
        assert_eq!(
            text.fill(&values).unwrap(),
            "demo://resource/dynamic/text/a%20b%2Fc"
        );
        let query = t("file:///{+path}{?lines,raw}");
        assert_eq!(query.variables(), ["path", "lines", "raw"]);
        let values: BTreeMap<String, String> =
            [("path", "docs/a b.md"), ("lines", "1-5"), ("raw", "y")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        assert_eq!(
            query.fill(&values).unwrap(),
            "file:///docs/a%20b.md?lines=1-5&raw=y"
        );
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
