//! The usage ledger: every finished run's tokens, time and reported cost, recorded once
//! when it ends; sums per model, provider, thread or day (the Usage page, thread
//! headers, `art usage`); and the prices a user enters per model. A cost is what the
//! provider reported, or the user's price times the tokens of the runs it did not
//! report for — never a guess.

use std::collections::HashMap;
use std::sync::Arc;

use art_types::ExecutionMetadata;
use art_types::usage::{
    DailyUsage, ModelPrice, UsageBy, UsageReport, UsageRow, UsageTotals, model_key as price_id,
    model_label,
};

use crate::clock;
use crate::context::{ContextError, ConversationManager};
use crate::storage::ledger::{UsageKey, UsageQuery, UsageRecord, UsageSum};
use crate::storage::{self, Collection, Query, Record, StorageAdapter};

/// Reads and writes the ledger and the prices.
pub struct UsageLedger {
    storage: Arc<dyn StorageAdapter>,
    conversation: Arc<ConversationManager>,
}

/// The local calendar day of a unix-ms time, `YYYY-MM-DD` (UTC if the system's time
/// zone is unknown).
pub fn local_day(ms: i64) -> String {
    let when = jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    when.to_zoned(jiff::tz::TimeZone::system())
        .date()
        .to_string()
}

/// A group's totals, costed with the reported cost and, for the runs without one, the
/// user's price for its model if there is one.
fn totals(sum: &UsageSum, price: Option<&ModelPrice>) -> UsageTotals {
    let priced =
        price.map(|p| p.cost_nanos(sum.unreported_input_tokens, sum.unreported_output_tokens));
    let costed_runs = sum.reported_runs + price.map_or(0, |_| sum.runs - sum.reported_runs);
    UsageTotals {
        runs: sum.runs,
        input_tokens: sum.input_tokens,
        cached_input_tokens: sum.cached_input_tokens,
        output_tokens: sum.output_tokens,
        thinking_tokens: sum.thinking_tokens,
        duration_ms: sum.duration_ms,
        cost_nanos: (costed_runs > 0).then(|| sum.reported_cost_nanos + priced.unwrap_or(0)),
        costed_runs,
    }
}

fn tokens(t: &UsageTotals) -> u64 {
    t.input_tokens + t.output_tokens + t.thinking_tokens
}

impl UsageLedger {
    /// The ledger over `storage`; thread titles come from `conversation`.
    pub fn new(storage: Arc<dyn StorageAdapter>, conversation: Arc<ConversationManager>) -> Self {
        Self {
            storage,
            conversation,
        }
    }

    /// Record a finished run (a run that waits for a decision is recorded when it ends;
    /// recording one twice counts it once).
    pub async fn record(&self, run: &ExecutionMetadata) -> Result<(), ContextError> {
        if run.status == art_types::RunStatus::Suspended {
            return Ok(());
        }
        let duration = i64::try_from(run.total_duration_ms).unwrap_or(0);
        let started_at = clock::now_ms() - duration;
        let record = UsageRecord {
            trace_id: run.trace_id.clone(),
            thread_id: run.thread_id.clone(),
            provider: run.provider.clone().unwrap_or_default(),
            model: run.model.clone().unwrap_or_default(),
            day: local_day(started_at),
            started_at,
            duration_ms: run.total_duration_ms,
            input_tokens: run.usage.input_tokens,
            cached_input_tokens: run.usage.cached_input_tokens,
            output_tokens: run.usage.output_tokens,
            thinking_tokens: run.usage.thinking_tokens,
            cost_nanos: run.usage.cost_nanos,
        };
        Ok(self.storage.record_usage(vec![record]).await?)
    }

    /// The ledger grouped `by`, from `since` (`YYYY-MM-DD`) on if given.
    pub async fn report(
        &self,
        by: UsageBy,
        since: Option<&str>,
    ) -> Result<UsageReport, ContextError> {
        let since_day = since.map(parse_day).transpose()?;
        let first = match by {
            UsageBy::Model | UsageBy::Provider => None,
            UsageBy::Thread => Some(UsageKey::Thread),
            UsageBy::Day => Some(UsageKey::Day),
        };
        // Always per provider and model too: prices apply per model.
        let group: Vec<UsageKey> = first
            .into_iter()
            .chain([UsageKey::Provider, UsageKey::Model])
            .collect();
        let query = UsageQuery {
            group,
            since_day: since_day.clone(),
            thread_id: None,
        };
        let sums = self.storage.usage(&query).await?;
        let prices = self.price_map().await?;
        let titles: HashMap<String, String> = match by {
            UsageBy::Thread => self
                .conversation
                .list_threads()
                .await?
                .into_iter()
                .map(|t| (t.thread_id, t.title))
                .collect(),
            _ => HashMap::new(),
        };
        let mut rows: Vec<UsageRow> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut total = UsageTotals::default();
        for sum in &sums {
            let (provider, model) = (&sum.keys[sum.keys.len() - 2], &sum.keys[sum.keys.len() - 1]);
            let t = totals(sum, prices.get(&price_id(provider, model)));
            total.add(&t);
            let (key, label) = match by {
                UsageBy::Model => (price_id(provider, model), model_label(provider, model)),
                UsageBy::Provider if provider.is_empty() => {
                    (String::new(), "no provider".to_owned())
                }
                UsageBy::Provider => (provider.clone(), provider.clone()),
                UsageBy::Thread => {
                    let id = sum.keys[0].clone();
                    let title = titles.get(&id).cloned();
                    (id, title.unwrap_or_else(|| "Deleted thread".to_owned()))
                }
                UsageBy::Day => (sum.keys[0].clone(), sum.keys[0].clone()),
            };
            match index.get(&key) {
                Some(&i) => rows[i].totals.add(&t),
                None => {
                    index.insert(key.clone(), rows.len());
                    rows.push(UsageRow {
                        key,
                        label,
                        totals: t,
                    });
                }
            }
        }
        match by {
            UsageBy::Day => rows.sort_by(|a, b| a.key.cmp(&b.key)),
            _ => rows.sort_by(|a, b| {
                tokens(&b.totals)
                    .cmp(&tokens(&a.totals))
                    .then(a.key.cmp(&b.key))
            }),
        }
        let daily = self.daily(since_day.clone()).await?;
        Ok(UsageReport {
            by,
            since: since_day,
            rows,
            total,
            daily,
        })
    }

    /// Tokens per day per model, days in order.
    async fn daily(&self, since_day: Option<String>) -> Result<Vec<DailyUsage>, ContextError> {
        let query = UsageQuery {
            group: vec![UsageKey::Day, UsageKey::Provider, UsageKey::Model],
            since_day,
            thread_id: None,
        };
        Ok(self
            .storage
            .usage(&query)
            .await?
            .into_iter()
            .map(|s| DailyUsage {
                day: s.keys[0].clone(),
                model: price_id(&s.keys[1], &s.keys[2]),
                tokens: s.input_tokens + s.output_tokens + s.thinking_tokens,
            })
            .collect())
    }

    /// What one thread's runs used.
    pub async fn thread(&self, thread_id: &str) -> Result<UsageTotals, ContextError> {
        let query = UsageQuery {
            group: vec![UsageKey::Provider, UsageKey::Model],
            since_day: None,
            thread_id: Some(thread_id.to_owned()),
        };
        let prices = self.price_map().await?;
        let mut total = UsageTotals::default();
        for sum in self.storage.usage(&query).await? {
            total.add(&totals(
                &sum,
                prices.get(&price_id(&sum.keys[0], &sum.keys[1])),
            ));
        }
        Ok(total)
    }

    /// The prices the user entered, by provider then model.
    pub async fn prices(&self) -> Result<Vec<ModelPrice>, ContextError> {
        let records = self
            .storage
            .query(Collection::Prices, &Query::default())
            .await?;
        let mut prices: Vec<ModelPrice> = records
            .iter()
            .map(|r| r.decode(Collection::Prices))
            .collect::<Result<_, _>>()?;
        prices.sort_by(|a, b| (&a.provider, &a.model).cmp(&(&b.provider, &b.model)));
        Ok(prices)
    }

    async fn price_map(&self) -> Result<HashMap<String, ModelPrice>, ContextError> {
        Ok(self
            .prices()
            .await?
            .into_iter()
            .map(|p| (price_id(&p.provider, &p.model), p))
            .collect())
    }

    /// Enter or change a model's price (checked: names given, 0 to 10,000 dollars per
    /// million tokens).
    pub async fn save_price(&self, price: ModelPrice) -> Result<ModelPrice, ContextError> {
        let price = ModelPrice {
            provider: price.provider.trim().to_owned(),
            model: price.model.trim().to_owned(),
            ..price
        };
        if let Some((field, message)) = price.problems().into_iter().next() {
            return Err(ContextError::InvalidField { field, message });
        }
        let record = Record {
            id: price_id(&price.provider, &price.model),
            thread_id: None,
            trace_id: None,
            kind: None,
            parent: None,
            timestamp: clock::now_ms(),
            search_text: None,
            body: storage::encode(&price)?,
        };
        self.storage.set(Collection::Prices, vec![record]).await?;
        Ok(price)
    }

    /// Forget a model's price; `false` when it had none.
    pub async fn delete_price(&self, provider: &str, model: &str) -> Result<bool, ContextError> {
        Ok(self
            .storage
            .delete(Collection::Prices, &price_id(provider, model))
            .await?)
    }
}

/// A `YYYY-MM-DD` day, checked.
fn parse_day(text: &str) -> Result<String, ContextError> {
    let day: jiff::civil::Date = text
        .trim()
        .parse()
        .map_err(|_| ContextError::InvalidField {
            field: "since",
            message: format!("{text:?} is not a day: write it as YYYY-MM-DD"),
        })?;
    Ok(day.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_costs_and_prices_add_up_and_nothing_is_guessed() {
        let sum = UsageSum {
            runs: 3,
            input_tokens: 3_000,
            output_tokens: 300,
            reported_cost_nanos: 40,
            reported_runs: 1,
            unreported_input_tokens: 2_000,
            unreported_output_tokens: 200,
            ..Default::default()
        };
        let unpriced = totals(&sum, None);
        assert_eq!((unpriced.cost_nanos, unpriced.costed_runs), (Some(40), 1));
        let price = ModelPrice {
            provider: "p".into(),
            model: "m".into(),
            input_per_million: 1.0,
            output_per_million: 2.0,
        };
        let priced = totals(&sum, Some(&price));
        // 2,000 in at $1/M = 2,000,000 nano; 200 out at $2/M = 400,000 nano.
        assert_eq!(
            (priced.cost_nanos, priced.costed_runs),
            (Some(2_400_040), 3)
        );
        let nothing = UsageSum {
            runs: 1,
            input_tokens: 5,
            unreported_input_tokens: 5,
            ..Default::default()
        };
        assert_eq!(totals(&nothing, None).cost_nanos, None);
        assert_eq!(parse_day("2026-11-24").unwrap(), "2026-11-24");
        assert!(matches!(
            parse_day("24/11/2026"),
            Err(ContextError::InvalidField { field: "since", .. })
        ));
    }
}
