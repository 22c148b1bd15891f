//! `art export` and `art import`.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use anyhow::Context;
use art::export::{self, Format, Options, Scope};
use art::standard::Standard;
use art_types::push::PushEncoding;
use indicatif::{ProgressBar, ProgressStyle};

use crate::out::noteln;

/// The format names `--format` takes.
fn formats() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Format::ALL.map(Format::as_str))
}

/// Options of `art export`.
#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("destination").required(true).args(["output", "to"]))]
pub struct Args {
    /// jsonl (native, importable), otlp (OpenTelemetry JSON lines), otlp-proto
    /// (OpenTelemetry protobuf, length-prefixed as the collector's file exporter writes
    /// it) or markdown.
    #[arg(long, value_parser = formats())]
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
    output: Option<PathBuf>,
    /// Send the spans to this OTLP/HTTP collector instead (`http://localhost:4318`,
    /// or the full `…/v1/traces`), with --format otlp or otlp-proto.
    #[arg(long, value_name = "URL")]
    to: Option<String>,
    /// A header sent with --to, `NAME=VALUE` (repeatable; e.g. an API key). Without
    /// one, the headers kept in the keychain for "Send traces to" are sent when URL is
    /// that address.
    #[arg(long, value_name = "NAME=VALUE", requires = "to")]
    header: Vec<String>,
    /// With --to: send OTLP/JSON instead of protobuf.
    #[arg(long, requires = "to")]
    json: bool,
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
    if let Some(url) = &args.to {
        if !matches!(format, Format::Otlp | Format::OtlpProto) {
            anyhow::bail!("--to sends OpenTelemetry spans: use --format otlp or otlp-proto");
        }
        return push(
            stack,
            &scope,
            options,
            &redactor,
            url,
            &args.header,
            args.json,
        )
        .await;
    }
    let Some(output) = args.output else {
        anyhow::bail!("say where: -o FILE or --to URL")
    };
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
        &output,
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
        output.display()
    );
    Ok(())
}

/// Send `scope` to the collector at `url` (`art export --to`).
async fn push(
    stack: &Standard,
    scope: &Scope,
    options: Options,
    redactor: &export::Redactor,
    url: &str,
    headers: &[String],
    json: bool,
) -> anyhow::Result<()> {
    let mut pairs = Vec::new();
    for header in headers {
        let (name, value) = header
            .split_once('=')
            .with_context(|| format!("--header {header:?}: write it as NAME=VALUE"))?;
        pairs.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let settings = stack.art.settings.get().await?.trace_push;
    if pairs.is_empty() && settings.endpoint.trim() == url.trim() {
        let secrets = Arc::clone(&stack.secrets);
        pairs = tokio::task::spawn_blocking(move || art::push::stored_headers(secrets.as_ref()))
            .await?
            .context("cannot read the push's headers from the keychain")?;
    }
    let encoding = if json {
        PushEncoding::Json
    } else {
        PushEncoding::Protobuf
    };
    let endpoint = art::push::Endpoint::new(url, &pairs, encoding)?;
    let target = endpoint.url().to_string();
    let queue = std::env::temp_dir().join(format!(
        "art-push-{}-{}.sqlite",
        std::process::id(),
        art::clock::new_id()
    ));
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} spans sent ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let result = art::push::push_export(
        &stack.art,
        scope,
        options.include_content,
        redactor,
        endpoint,
        &queue,
        &mut progress,
    )
    .await;
    bar.finish_and_clear();
    let pushed = result?;
    noteln!(
        "Sent {} span(s) of {} run(s) to {target}",
        pushed.sent,
        pushed.runs
    );
    if pushed.refused > 0 {
        anyhow::bail!(
            "the collector refused {} span(s): {}",
            pushed.refused,
            pushed.refusal.unwrap_or_default()
        );
    }
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
