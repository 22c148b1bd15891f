//! `art answer`: the answer to an MCP server's question that a run waits on in another
//! process — the app's tool card, or `art run` whose input has ended. The answer is
//! posted in the data directory and taken by the process whose call waits; this one
//! waits (`--wait`) to print what became of it. When that process has ended (closed,
//! killed, crashed) while the question waited, its run goes on here instead: the call
//! runs again, its server's same question gets the answer, and the rest of the run is
//! printed as `art approve` prints it.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use art::standard::Standard;
use art::tools::mcp::PostError;
use art_types::mcp::elicit::ElicitAnswer;
use clap::Subcommand;
use serde_json::Map;

use crate::out::{noteln, sayln};

/// `art answer`.
#[derive(clap::Args)]
pub struct Args {
    /// What to answer.
    #[command(subcommand)]
    what: What,
    /// The thread whose run waits (needed only when questions wait in several).
    #[arg(long, value_name = "ID", global = true)]
    thread: Option<String>,
    /// Longest wait for the asking process to take the answer, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10, global = true)]
    wait: u64,
}

#[derive(Subcommand)]
enum What {
    /// Send these values (`NAME=VALUE`; a field left out takes its default).
    Accept {
        /// The fields' values.
        #[arg(value_name = "NAME=VALUE")]
        values: Vec<String>,
    },
    /// Say no.
    Decline,
    /// Dismiss the question.
    Cancel,
}

/// Post the answer and print what became of the question.
pub async fn answer(stack: &Standard, args: Args) -> anyhow::Result<ExitCode> {
    let Some(posting) = stack.art.mcp.posting() else {
        bail!("this data directory does not record MCP servers' questions");
    };
    let (thread, question) = match posting.pick(args.thread.as_deref()).await {
        Ok(found) => found,
        Err(PostError::Several(waiting)) => {
            noteln!("art: questions wait in several threads; say which with --thread:");
            for (thread, q) in waiting {
                noteln!("  {thread}  {}: {}", q.question.server, q.question.message);
            }
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e.into()),
    };
    let answer = match args.what {
        What::Decline => ElicitAnswer::Decline,
        What::Cancel => ElicitAnswer::Cancel,
        What::Accept { values } => {
            let mut given = Map::new();
            for value in values {
                let (name, said) = value
                    .split_once('=')
                    .with_context(|| format!("`{value}` is not NAME=VALUE"))?;
                let Some(field) = question.question.fields.iter().find(|f| f.name == name) else {
                    let names: Vec<&str> = question
                        .question
                        .fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect();
                    bail!(
                        "the question has no field `{name}`; it asks: {}",
                        names.join(", ")
                    );
                };
                let parsed = crate::elicit::parse(&field.kind, said)
                    .with_context(|| format!("`{said}` is not a value for {name}"))?;
                given.insert(name.to_owned(), parsed);
            }
            ElicitAnswer::Accept(given)
        }
    };
    if let Some(kept) = stack.art.kept_on(&thread).await?
        && kept.asked.as_ref().map(|a| &a.question_id) == Some(&question.question_id)
    {
        sayln!(
            "MCP server `{}` asked: {}\nThe process that asked it has ended: its run goes on here.",
            question.question.server,
            question.question.message
        );
        let printer = crate::printer::Printer::new(&thread, &kept.trace_id, false);
        let work = crate::follow::Work::Answer(thread, question.question_id, answer);
        return crate::follow::follow(stack, printer, None, work).await;
    }
    let outcome = posting
        .answer(&thread, &question, answer, Duration::from_secs(args.wait))
        .await?;
    sayln!(
        "MCP server `{}` asked: {}\n{outcome}",
        question.question.server,
        question.question.message
    );
    Ok(ExitCode::SUCCESS)
}
