//! The usage ledger as the page and `art usage` read it: tokens in, out and thinking,
//! time and cost of runs, summed per model, provider, thread or day; and the prices a
//! user enters per model. A cost is what the provider reported, or the user's price
//! times the tokens — never a guess: runs with neither are counted apart.

use serde::{Deserialize, Serialize};

/// The key of a model in the ledger and the prices: `provider/model` (a provider's name
/// has no `/`; a model id may, as OpenRouter's do).
pub fn model_key(provider: &str, model: &str) -> String {
    format!("{provider}/{model}")
}

/// The provider and model of a key made by [`model_key`].
pub fn split_model_key(key: &str) -> Option<(&str, &str)> {
    key.split_once('/')
}

/// What people read for a model: `model (provider)`, or why there is none.
pub fn model_label(provider: &str, model: &str) -> String {
    match (provider, model) {
        ("", "") => "no model (the run failed before a call)".to_owned(),
        (provider, model) => format!("{model} ({provider})"),
    }
}

/// How runs are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageBy {
    /// Per model (with its provider).
    #[default]
    Model,
    /// Per provider.
    Provider,
    /// Per thread.
    Thread,
    /// Per day (local calendar day the run started).
    Day,
}

impl UsageBy {
    /// Every grouping.
    pub const ALL: [Self; 4] = [Self::Model, Self::Provider, Self::Thread, Self::Day];

    /// The wire form, e.g. `model`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Provider => "provider",
            Self::Thread => "thread",
            Self::Day => "day",
        }
    }

    /// Parse the wire form.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.as_str() == text)
    }
}

/// What some runs used, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// Runs counted.
    pub runs: u64,
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Of those, read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub thinking_tokens: u64,
    /// Wall time of the runs.
    pub duration_ms: u64,
    /// What the runs cost where it is known (billionths of a US dollar): reported by
    /// the provider, or priced with the user's prices; `None` when known for none.
    pub cost_nanos: Option<u64>,
    /// How many runs that cost covers (the others have neither a reported cost nor a
    /// price for their model).
    pub costed_runs: u64,
}

impl UsageTotals {
    /// Add `other` to these.
    pub fn add(&mut self, other: &Self) {
        self.runs += other.runs;
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.thinking_tokens += other.thinking_tokens;
        self.duration_ms += other.duration_ms;
        self.cost_nanos = match (self.cost_nanos, other.cost_nanos) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.costed_runs += other.costed_runs;
    }

    /// The cost in US dollars, if known for any run.
    pub fn cost_usd(&self) -> Option<f64> {
        self.cost_nanos.map(|n| n as f64 / 1e9)
    }

    /// The cost as people read it: `$12.40`, `$0.0021` (two significant digits under a
    /// dollar), `—` when unknown; with how many runs it covers when not all.
    pub fn cost_label(&self) -> String {
        let Some(usd) = self.cost_usd() else {
            return "—".to_owned();
        };
        let decimals = match usd {
            u if u >= 1.0 || u <= 0.0 => 2,
            u => ((-u.log10()).ceil() as usize + 1).clamp(2, 9),
        };
        let amount = format!("${usd:.decimals$}");
        match self.costed_runs < self.runs {
            true => format!("{amount} ({} of {} runs)", self.costed_runs, self.runs),
            false => amount,
        }
    }
}

/// One group's usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The group: a model as `provider/model`, a provider, a thread id or a day
    /// (`YYYY-MM-DD`).
    pub key: String,
    /// What people read: the model, provider, thread title (or "deleted thread") or day.
    pub label: String,
    /// Its sums.
    pub totals: UsageTotals,
}

/// One day's tokens of one model, for the chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DailyUsage {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// The model (`provider/model`).
    pub model: String,
    /// Tokens in and out (thinking included).
    pub tokens: u64,
}

/// The ledger, grouped one way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// How `rows` are grouped.
    pub by: UsageBy,
    /// Only runs from this day on (`YYYY-MM-DD`), if limited.
    pub since: Option<String>,
    /// The groups, largest (by tokens) first; days in order.
    pub rows: Vec<UsageRow>,
    /// All of them.
    pub total: UsageTotals,
    /// Tokens per day per model, days in order.
    pub daily: Vec<DailyUsage>,
}

/// A user's price for a model, per million tokens, in US dollars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPrice {
    /// The provider (`openai`, `openrouter`, …).
    pub provider: String,
    /// The model id as the thread settings name it.
    pub model: String,
    /// Dollars per million input tokens.
    pub input_per_million: f64,
    /// Dollars per million output tokens (thinking tokens are billed as output).
    pub output_per_million: f64,
}

/// Highest price per million tokens accepted (a typo guard).
pub const MAX_PRICE_PER_MILLION: f64 = 10_000.0;

impl ModelPrice {
    /// What `input` and `output` tokens cost at this price, in billionths of a dollar.
    pub fn cost_nanos(&self, input: u64, output: u64) -> u64 {
        // tokens × ($ per 1e6 tokens) × (1e9 nano-dollars per $) = tokens × price × 1000.
        let nanos = input as f64 * self.input_per_million * 1000.0
            + output as f64 * self.output_per_million * 1000.0;
        nanos.round() as u64
    }

    /// What is wrong with it, per field (empty when nothing is).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        if self.provider.trim().is_empty() {
            problems.push(("provider", "name the provider".to_owned()));
        }
        if self.model.trim().is_empty() {
            problems.push(("model", "name the model".to_owned()));
        }
        for (field, value) in [
            ("inputPerMillion", self.input_per_million),
            ("outputPerMillion", self.output_per_million),
        ] {
            if !value.is_finite() || !(0.0..=MAX_PRICE_PER_MILLION).contains(&value) {
                problems.push((
                    field,
                    format!("a price is 0 to {MAX_PRICE_PER_MILLION} dollars per million tokens"),
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_costs_tokens_per_million() {
        let price = ModelPrice {
            provider: "openai".into(),
            model: "gpt".into(),
            input_per_million: 2.5,
            output_per_million: 10.0,
        };
        // 1,000 in at $2.50/M = $0.0025; 500 out at $10/M = $0.005.
        assert_eq!(price.cost_nanos(1_000, 500), 7_500_000);
        assert!(price.problems().is_empty());
        let bad = ModelPrice {
            input_per_million: -1.0,
            output_per_million: f64::NAN,
            model: " ".into(),
            ..price
        };
        let fields: Vec<&str> = bad.problems().iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, ["model", "inputPerMillion", "outputPerMillion"]);
    }

    #[test]
    fn totals_add_and_an_unknown_cost_stays_unknown() {
        let priced = UsageTotals {
            runs: 2,
            input_tokens: 10,
            cost_nanos: Some(5),
            costed_runs: 1,
            ..Default::default()
        };
        let unpriced = UsageTotals {
            runs: 1,
            output_tokens: 3,
            ..Default::default()
        };
        let mut sum = UsageTotals::default();
        sum.add(&unpriced);
        assert_eq!(sum.cost_nanos, None, "nothing known, nothing guessed");
        sum.add(&priced);
        assert_eq!((sum.runs, sum.cost_nanos, sum.costed_runs), (3, Some(5), 1));
        assert_eq!(sum.cost_label(), "$0.000000005 (1 of 3 runs)");
        let label = |nanos: u64| {
            let t = UsageTotals {
                runs: 1,
                cost_nanos: Some(nanos),
                costed_runs: 1,
                ..Default::default()
            };
            t.cost_label()
        };
        assert_eq!(label(12_400_000_000), "$12.40");
        assert_eq!(label(120_000_000), "$0.12");
        assert_eq!(label(2_100_000), "$0.0021");
        assert_eq!(label(26_000), "$0.000026");
        assert_eq!(label(0), "$0.00");
        assert_eq!(UsageTotals::default().cost_label(), "—");
        let key = model_key("openrouter", "deepseek/deepseek-r1");
        assert_eq!(
            split_model_key(&key),
            Some(("openrouter", "deepseek/deepseek-r1"))
        );
        assert_eq!(
            model_label("openrouter", "deepseek/deepseek-r1"),
            "deepseek/deepseek-r1 (openrouter)"
        );
        assert_eq!(UsageBy::parse("day"), Some(UsageBy::Day));
        assert_eq!(UsageBy::parse("week"), None);
    }
}
