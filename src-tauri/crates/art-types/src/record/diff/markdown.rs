//! A [`RunDiff`] as Markdown: the figures in a table, the plans and the tool calls as
//! lists marked by how they compare, the arguments that differ in a table, and the
//! answers as one text with `<del>` and `<ins>` (what GitHub and most viewers render);
//! for a terminal, the same in colour, or piped with the answers as `-` / `+` lines.

use std::fmt::Write as _;

use serde_json::Value;

use super::{Edit, RunDiff, RunFigures, ToolPair};

/// Results longer than this are cut in the Markdown (the JSON keeps them whole).
const RESULT_CHARS: usize = 600;

/// How what only one run has is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marks {
    /// `<del>` and `<ins>`, word by word (Markdown viewers render them).
    Html,
    /// Red struck-through and green, word by word (a terminal).
    Colour,
    /// No marks in a line: the answers as `-` and `+` lines (a pipe, a file).
    Lines,
}

impl Marks {
    fn removed(self, text: &str) -> String {
        match self {
            Self::Html => format!("<del>{text}</del>"),
            Self::Colour => format!("\x1b[31;9m{text}\x1b[0m"),
            Self::Lines => text.to_owned(),
        }
    }

    fn added(self, text: &str) -> String {
        match self {
            Self::Html => format!("<ins>{text}</ins>"),
            Self::Colour => format!("\x1b[32m{text}\x1b[0m"),
            Self::Lines => text.to_owned(),
        }
    }
}

impl RunDiff {
    /// The diff as a Markdown document.
    pub fn markdown(&self) -> String {
        self.render(Marks::Html)
    }

    /// The diff for a terminal: as the Markdown, but what only one run has in colour
    /// (`colour`: red struck through, green), or else — piped, or no colour wanted —
    /// with no marks in the text and the answers as `-` / `+` lines, as `diff` prints.
    pub fn text(&self, colour: bool) -> String {
        self.render(if colour { Marks::Colour } else { Marks::Lines })
    }

    fn render(&self, marks: Marks) -> String {
        let mut out = String::from("# Two runs compared\n\n");
        figures(&mut out, &self.a, &self.b);
        if !self.same_thread() {
            out.push_str(
                "\n> The runs are of different threads: their questions and the history \
                 before them may differ.\n",
            );
        }
        if self.alike() {
            out.push_str("\nThe runs made the same plan and calls and gave the same answer.\n");
        }
        if !self.steps.is_empty() {
            out.push_str("\n## Plan\n\n");
            for step in &self.steps {
                let line = match (step.edit, &step.a, &step.b) {
                    (Edit::Same, Some(a), _) => format!("- {a}"),
                    (Edit::Changed, Some(a), Some(b)) => format!("- ~ {a} → **{b}**"),
                    (_, Some(a), None) => format!("- − {} (A only)", marks.removed(a)),
                    (_, _, Some(b)) => format!("- + {} (B only)", marks.added(b)),
                    _ => continue,
                };
                let _ = writeln!(out, "{}", one_line(&line));
            }
        }
        if !self.tools.is_empty() {
            out.push_str("\n## Tool calls\n");
            for (n, pair) in self.tools.iter().enumerate() {
                tool(&mut out, n + 1, pair);
            }
        }
        out.push_str("\n## Answer\n\n");
        if self.answer.is_empty() {
            out.push_str("_Neither run answered._\n");
        }
        if marks == Marks::Lines {
            answer_lines(&mut out, &self.answer);
            return out;
        }
        for words in &self.answer {
            match words.edit {
                Edit::Removed => out.push_str(&marks.removed(&words.text)),
                Edit::Added => out.push_str(&marks.added(&words.text)),
                _ => out.push_str(&words.text),
            }
        }
        out.push('\n');
        out
    }
}

/// The two answers line by line: `  ` both have it, `- ` only A, `+ ` only B.
fn answer_lines(out: &mut String, words: &[super::Words]) {
    let of = |keep: Edit| -> String {
        words
            .iter()
            .filter(|w| w.edit == Edit::Same || w.edit == keep)
            .map(|w| w.text.as_str())
            .collect()
    };
    let (a, b) = (of(Edit::Removed), of(Edit::Added));
    for change in similar::TextDiff::from_lines(&a, &b).iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Equal => "  ",
            similar::ChangeTag::Delete => "- ",
            similar::ChangeTag::Insert => "+ ",
        };
        let _ = writeln!(out, "{sign}{}", change.value().trim_end_matches('\n'));
    }
}

fn figures(out: &mut String, a: &RunFigures, b: &RunFigures) {
    out.push_str("| | A | B |\n|---|---|---|\n");
    let mut row = |name: &str, f: &dyn Fn(&RunFigures) -> String| {
        let _ = writeln!(out, "| {name} | {} | {} |", cell(&f(a)), cell(&f(b)));
    };
    row("Run", &|r| format!("`{}`", r.trace_id));
    row("Thread", &|r| format!("`{}`", r.thread_id));
    row("Question", &|r| r.question.clone().unwrap_or_default());
    row("Model", &|r| match (&r.provider, &r.model) {
        (Some(p), Some(m)) => format!("{p}:{m}"),
        (None, Some(m)) => m.clone(),
        _ => "—".into(),
    });
    row("Ended", &|r| {
        r.status
            .map_or_else(|| "—".into(), |s| format!("{s:?}").to_lowercase())
    });
    row("Time", &|r| {
        r.duration_ms
            .map_or_else(|| "—".into(), |ms| format!("{:.1} s", ms as f64 / 1000.0))
    });
    row("First token", &|r| {
        r.first_token_ms
            .map_or_else(|| "—".into(), |ms| format!("{:.2} s", ms as f64 / 1000.0))
    });
    row("Tokens in / out", &|r| {
        format!("{} / {}", r.input_tokens, r.output_tokens)
    });
    row("Model calls", &|r| r.llm_calls.to_string());
    row("Tool calls", &|r| r.tool_calls.to_string());
    row("Cost", &|r| {
        r.cost_nanos
            .map_or_else(|| "—".into(), |n| format!("${:.4}", n as f64 / 1e9))
    });
}

fn tool(out: &mut String, n: usize, pair: &ToolPair) {
    let Some(name) = pair.a.as_ref().or(pair.b.as_ref()).map(|t| &t.tool_name) else {
        return;
    };
    let how = match pair.edit {
        Edit::Same => "the same call and result".to_owned(),
        Edit::Removed => "A only".to_owned(),
        Edit::Added => "B only".to_owned(),
        Edit::Changed => {
            let mut what = Vec::new();
            if !pair.arguments.is_empty() {
                what.push("arguments differ");
            }
            if pair.result_differs {
                what.push("results differ");
            }
            what.join(", ")
        }
    };
    let _ = writeln!(out, "\n### {n}. `{name}` — {how}\n");
    match (&pair.a, &pair.b) {
        (Some(a), Some(b)) => {
            if pair.arguments.is_empty() {
                let _ = writeln!(out, "Arguments: `{}`\n", cell(&compact(&a.arguments)));
            } else {
                out.push_str("| Argument | A | B |\n|---|---|---|\n");
                for change in &pair.arguments {
                    let value = |v: &Option<Value>| v.as_ref().map_or("—".into(), compact);
                    let path = if change.path.is_empty() {
                        "(all)"
                    } else {
                        &change.path
                    };
                    let _ = writeln!(
                        out,
                        "| `{}` | `{}` | `{}` |",
                        cell(path),
                        cell(&value(&change.a)),
                        cell(&value(&change.b))
                    );
                }
                out.push('\n');
            }
            if pair.result_differs {
                result(out, "A's result", a.result.as_ref(), a.failed);
                result(out, "B's result", b.result.as_ref(), b.failed);
            } else {
                result(out, "Result", a.result.as_ref(), a.failed);
            }
        }
        (Some(only), None) | (None, Some(only)) => {
            let _ = writeln!(out, "Arguments: `{}`\n", cell(&compact(&only.arguments)));
            result(out, "Result", only.result.as_ref(), only.failed);
        }
        (None, None) => {}
    }
}

fn result(out: &mut String, label: &str, value: Option<&Value>, failed: bool) {
    let text = match value {
        Some(Value::String(s)) => s.clone(),
        Some(v) => compact(v),
        None => "(none)".into(),
    };
    let text = cut(&text, RESULT_CHARS);
    let failed = if failed { " (failed)" } else { "" };
    let _ = writeln!(
        out,
        "{label}{failed}:\n\n```\n{}\n```\n",
        text.replace("```", "'''")
    );
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `text` as one table cell: no line breaks, pipes escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!(
            "{}… ({} characters in all)",
            &text[..at],
            text.chars().count()
        ),
        None => text.to_owned(),
    }
}
