//! A server's question mid-call (MCP elicitation), asked on the terminal: its message,
//! then each field with its kind and default (an empty line keeps the default, or
//! leaves an optional field out), then whether to send the answers. Read from standard
//! input line by line, so answers can be piped too. At its end, a question of a run
//! waits for `art answer` from another terminal (one outside a run is declined). A page the server asks to open (URL mode) is shown whole, with its host,
//! and opened in the browser only when the user says yes. The server's words are shown
//! as they are: untrusted text.

use art::tools::mcp::Elicitor;
use art_types::mcp::elicit::{ElicitAnswer, ElicitField, ElicitQuestion, FieldKind};
use art_types::mcp::question::QuestionContent;
use serde_json::{Map, Value};

use crate::out::{note, noteln};

/// Tries per field before the question is declined.
const TRIES: usize = 3;

/// Asks on this process's terminal (one question at a time).
#[derive(Default)]
pub struct Terminal {
    one_at_a_time: tokio::sync::Mutex<()>,
}

#[async_trait::async_trait]
impl Elicitor for Terminal {
    async fn ask(&self, asked: QuestionContent) -> ElicitAnswer {
        let _turn = self.one_at_a_time.lock().await;
        let question = asked.question;
        let said = tokio::task::spawn_blocking(move || ask_on_terminal(&question)).await;
        match said {
            Ok(Some(answer)) => answer,
            // No more input: a run's question can be answered from elsewhere (the run
            // takes an answer posted there), any other is declined.
            Ok(None) if !asked.call_id.is_empty() => {
                noteln!(
                    "No answer here (end of input): answer it from another terminal with \
                     `art answer accept NAME=VALUE… | decline | cancel`; the run waits."
                );
                std::future::pending().await
            }
            Ok(None) | Err(_) => {
                noteln!("No answer: the question is declined.");
                ElicitAnswer::Decline
            }
        }
    }
}

/// One line of standard input, trimmed; `None` at its end.
fn line(prompt: &str) -> Option<String> {
    note!("{prompt}");
    let mut text = String::new();
    match std::io::stdin().read_line(&mut text) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(text.trim().to_owned()),
    }
}

/// The user's answer, or `None` when the input ends first.
fn ask_on_terminal(question: &ElicitQuestion) -> Option<ElicitAnswer> {
    noteln!(
        "MCP server `{}` asks: {}",
        question.server,
        question.message
    );
    if let Some(url) = &question.url {
        return ask_to_open(&question.server, url);
    }
    let mut values = Map::new();
    for field in &question.fields {
        match ask_field(field) {
            Asked::Value(value) => {
                values.insert(field.name.clone(), value);
            }
            Asked::Skipped => {}
            Asked::Ended => return None,
            Asked::GaveUp => {
                noteln!("No answer: the question is declined.");
                return Some(ElicitAnswer::Decline);
            }
        }
    }
    loop {
        let said = line(&format!(
            "Send this to `{}`? [Y]es, [n]o (decline), [c]ancel: ",
            question.server
        ))?;
        match said.to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => return Some(ElicitAnswer::Accept(values)),
            "n" | "no" => return Some(ElicitAnswer::Decline),
            "c" | "cancel" => return Some(ElicitAnswer::Cancel),
            _ => noteln!("Answer y, n or c."),
        }
    }
}

/// A page the server asks the user to open: its address in full and its host, then
/// whether to open it (in the browser, else the address is there to copy).
fn ask_to_open(server: &str, url: &str) -> Option<ElicitAnswer> {
    let host = art_types::mcp::elicit::page_host(url).unwrap_or(url);
    noteln!("  It asks you to open a page on {host}:\n  {url}");
    loop {
        let said = line(&format!(
            "Open it? [y]es, [N]o (decline), [c]ancel (`{server}` learns only your choice): "
        ))?;
        match said.to_ascii_lowercase().as_str() {
            "y" | "yes" => {
                if let Err(why) = art::tools::mcp::oauth::open_in_browser(url) {
                    noteln!("  {why}: open the address above yourself.");
                }
                return Some(ElicitAnswer::Accept(Map::new()));
            }
            "" | "n" | "no" => return Some(ElicitAnswer::Decline),
            "c" | "cancel" => return Some(ElicitAnswer::Cancel),
            _ => noteln!("Answer y, n or c."),
        }
    }
}

enum Asked {
    Value(Value),
    Skipped,
    /// Wrong answers, too many times.
    GaveUp,
    /// The input ended.
    Ended,
}

fn ask_field(field: &ElicitField) -> Asked {
    let label = field.title.as_deref().unwrap_or(&field.name);
    if let Some(help) = &field.description {
        noteln!("  {label}: {help}");
    }
    if let FieldKind::Choice { options, .. } = &field.kind {
        for (i, (value, shown)) in options.iter().enumerate() {
            noteln!("    {}. {shown} ({value})", i + 1);
        }
    }
    let hint = match &field.kind {
        FieldKind::Text {
            format: Some(f), ..
        } => f.clone(),
        FieldKind::Text { .. } => "text".into(),
        FieldKind::Number { integer: true, .. } => "whole number".into(),
        FieldKind::Number { .. } => "number".into(),
        FieldKind::Boolean => "y/n".into(),
        FieldKind::Choice { many: false, .. } => "number or value".into(),
        FieldKind::Choice { many: true, .. } => "numbers or values, comma-separated".into(),
    };
    let default = field
        .default
        .as_ref()
        .map(|d| format!(", default {d}"))
        .unwrap_or_default();
    let needed = if field.required { "" } else { ", optional" };
    for _ in 0..TRIES {
        let Some(said) = line(&format!("  {label} ({hint}{needed}{default}): ")) else {
            return Asked::Ended;
        };
        if said.is_empty() {
            match &field.default {
                Some(default) => return Asked::Value(default.clone()),
                None if !field.required => return Asked::Skipped,
                None => {
                    noteln!("  {label} is required.");
                    continue;
                }
            }
        }
        match parse(&field.kind, &said) {
            Some(value) => return Asked::Value(value),
            None => noteln!("  That is not a {hint}."),
        }
    }
    Asked::GaveUp
}

/// What `said` means for a field of `kind` (checked against bounds later, with the
/// whole answer).
pub(crate) fn parse(kind: &FieldKind, said: &str) -> Option<Value> {
    match kind {
        FieldKind::Text { .. } => Some(Value::String(said.to_owned())),
        FieldKind::Number { integer: true, .. } => said.parse::<i64>().ok().map(Value::from),
        FieldKind::Number { .. } => said.parse::<f64>().ok().map(Value::from),
        FieldKind::Boolean => match said.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        FieldKind::Choice { options, many } => {
            let one = |word: &str| {
                let word = word.trim();
                word.parse::<usize>()
                    .ok()
                    .and_then(|i| options.get(i.checked_sub(1)?))
                    .or_else(|| options.iter().find(|(value, _)| value == word))
                    .map(|(value, _)| Value::String(value.clone()))
            };
            if *many {
                said.split(',')
                    .map(one)
                    .collect::<Option<Vec<_>>>()
                    .map(Value::Array)
            } else {
                one(said)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_answers_are_read_as_their_kind() {
        let choice = FieldKind::Choice {
            options: vec![("r".into(), "Red".into()), ("g".into(), "Green".into())],
            many: true,
        };
        assert_eq!(parse(&choice, "2, r"), Some(serde_json::json!(["g", "r"])));
        assert_eq!(parse(&choice, "3"), None);
        assert_eq!(parse(&FieldKind::Boolean, "Yes"), Some(Value::Bool(true)));
        let whole = FieldKind::Number {
            integer: true,
            minimum: None,
            maximum: None,
        };
        assert_eq!(parse(&whole, "4.5"), None);
        assert_eq!(parse(&whole, "42"), Some(Value::from(42)));
    }
}
