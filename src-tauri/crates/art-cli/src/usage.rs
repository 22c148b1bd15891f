//! `art usage` and `art price`: the usage ledger as a table, and the prices per model
//! that cost the runs whose provider does not report a cost.

use art::standard::Standard;
use art_types::usage::{ModelPrice, UsageBy, UsageTotals};

use crate::out::{noteln, sayln};

/// How `art usage` groups runs.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum By {
    /// Per model (with its provider).
    Model,
    /// Per provider.
    Provider,
    /// Per thread.
    Thread,
    /// Per day the run started (local time).
    Day,
}

impl From<By> for UsageBy {
    fn from(by: By) -> Self {
        match by {
            By::Model => Self::Model,
            By::Provider => Self::Provider,
            By::Thread => Self::Thread,
            By::Day => Self::Day,
        }
    }
}

fn line(label: &str, t: &UsageTotals) -> String {
    let label: String = label.chars().take(40).collect();
    format!(
        "{label:<40} {:>6} {:>10} {:>10} {:>9} {:>9.1} s  {}",
        t.runs,
        t.input_tokens,
        t.output_tokens,
        t.thinking_tokens,
        t.duration_ms as f64 / 1000.0,
        t.cost_label()
    )
}

/// `art usage`: one line per group, then the total.
pub async fn usage(stack: &Standard, by: By, since: Option<&str>) -> anyhow::Result<()> {
    let report = stack.art.usage.report(by.into(), since).await?;
    let heading = match report.by {
        UsageBy::Model => "MODEL",
        UsageBy::Provider => "PROVIDER",
        UsageBy::Thread => "THREAD",
        UsageBy::Day => "DAY",
    };
    sayln!(
        "{heading:<40} {:>6} {:>10} {:>10} {:>9} {:>11}  COST",
        "RUNS",
        "INPUT",
        "OUTPUT",
        "THINKING",
        "TIME"
    );
    for row in &report.rows {
        let label = match report.by {
            UsageBy::Thread => {
                let short: String = row.key.chars().take(8).collect();
                format!("{short} {}", row.label)
            }
            _ => row.label.clone(),
        };
        sayln!("{}", line(&label, &row.totals));
    }
    sayln!("{}", line("TOTAL", &report.total));
    if report.total.costed_runs < report.total.runs {
        noteln!(
            "art: a cost is shown where the provider reported it or a price was entered \
             (art price set); the others are not guessed"
        );
    }
    Ok(())
}

/// What `art price` does.
#[derive(clap::Subcommand)]
pub enum Price {
    /// The prices entered, per provider and model.
    List,
    /// Enter or change a model's price, in US dollars per million tokens.
    Set {
        /// The provider, e.g. openai.
        #[arg(long)]
        provider: String,
        /// The model, as the thread settings name it.
        #[arg(long)]
        model: String,
        /// Dollars per million input tokens.
        #[arg(long, value_name = "USD", allow_negative_numbers = true)]
        input: f64,
        /// Dollars per million output tokens (thinking is billed as output).
        #[arg(long, value_name = "USD", allow_negative_numbers = true)]
        output: f64,
    },
    /// Forget a model's price.
    Remove {
        /// The provider.
        #[arg(long)]
        provider: String,
        /// The model.
        #[arg(long)]
        model: String,
    },
}

/// `art price …`.
pub async fn price(stack: &Standard, command: Price) -> anyhow::Result<()> {
    let ledger = &stack.art.usage;
    match command {
        Price::List => {
            for p in ledger.prices().await? {
                sayln!(
                    "{}/{}  in ${}/M  out ${}/M",
                    p.provider,
                    p.model,
                    p.input_per_million,
                    p.output_per_million
                );
            }
        }
        Price::Set {
            provider,
            model,
            input,
            output,
        } => {
            let price = ModelPrice {
                provider,
                model,
                input_per_million: input,
                output_per_million: output,
            };
            let saved = ledger.save_price(price).await?;
            noteln!("art: {}/{} priced", saved.provider, saved.model);
        }
        Price::Remove { provider, model } => {
            if !ledger.delete_price(&provider, &model).await? {
                anyhow::bail!("{provider}/{model} has no price");
            }
            noteln!("art: {provider}/{model} has no price now");
        }
    }
    Ok(())
}
