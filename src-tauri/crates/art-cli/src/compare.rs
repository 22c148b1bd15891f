//! `art diff`: two recorded runs compared — plans, tool calls, answers, figures — as
//! Markdown or JSON on standard output.

use art::standard::Standard;
use clap::ValueEnum;

use crate::out::sayln;

/// What `art diff` prints.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum DiffFormat {
    /// Markdown: a figures table, the plans and calls marked, the answers' word diff.
    #[default]
    Md,
    /// JSON: the whole diff, as the app exports it.
    Json,
}

/// Print the diff of runs `a` and `b`.
pub async fn diff(stack: &Standard, a: &str, b: &str, format: DiffFormat) -> anyhow::Result<()> {
    let diff = art::compare::diff(&stack.art, a, b).await?;
    match format {
        DiffFormat::Md => sayln!("{}", diff.markdown().trim_end()),
        DiffFormat::Json => sayln!("{}", serde_json::to_string_pretty(&diff)?),
    }
    Ok(())
}
