//! `art export` and `art import`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use art::export::{self, Format, Options, Scope};
use art::standard::Standard;
use indicatif::{ProgressBar, ProgressStyle};

use crate::out::noteln;

/// Options of `art export`.
#[derive(clap::Args)]
pub struct Args {
    /// jsonl (native, importable), otlp (OpenTelemetry JSON lines) or markdown.
    #[arg(long, value_parser = ["jsonl", "otlp", "markdown"])]
    format: String,
    /// Export this thread.
    #[arg(long, value_name = "ID", group = "scope")]
    thread: Option<String>,
    /// Export this run (trace id).
    #[arg(long, value_name = "ID", group = "scope")]
    trace: Option<String>,
    /// Export every thread.
    #[arg(long, group = "scope")]
    all: bool,
    /// The file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// OTLP: include questions, answers, tool arguments and results (off by default).
    #[arg(long)]
    include_content: bool,
    /// Markdown: include the model's thinking.
    #[arg(long)]
    thinking: bool,
}

/// Export as asked, with a progress bar on a terminal.
pub async fn export(stack: &Standard, args: Args) -> anyhow::Result<()> {
    let scope = match (args.thread, args.trace, args.all) {
        (Some(thread), _, _) => Scope::Thread(thread),
        (None, Some(trace), _) => Scope::Trace(trace),
        (None, None, true) => Scope::All,
        (None, None, false) => {
            anyhow::bail!("say what to export: --thread ID, --trace ID or --all")
        }
    };
    let format = Format::parse(&args.format).context("unknown format")?;
    let options = Options {
        include_content: args.include_content,
        include_thinking: args.thinking,
    };
    let redactor = stack.redactor().await;
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} observations ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = |p: export::Progress| {
        bar.set_length(p.total);
        bar.set_position(p.done);
    };
    let result = export::export_to_file(
        &stack.art,
        &scope,
        format,
        options,
        &redactor,
        &args.output,
        &mut progress,
    )
    .await;
    bar.finish_and_clear();
    let summary = result?;
    noteln!(
        "Wrote {} thread(s), {} message(s), {} observation(s) to {}",
        summary.threads,
        summary.messages,
        summary.observations,
        args.output.display()
    );
    Ok(())
}

/// Import a native trace file.
pub async fn import(stack: &Standard, file: &Path) -> anyhow::Result<()> {
    let summary = export::jsonl::import(&stack.art, file)
        .await
        .with_context(|| format!("cannot import {}", file.display()))?;
    noteln!(
        "Imported {} thread(s), {} message(s), {} observation(s)",
        summary.threads,
        summary.messages,
        summary.observations
    );
    Ok(())
}
