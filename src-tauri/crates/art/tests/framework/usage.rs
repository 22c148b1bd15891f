//! The usage ledger through real runs over HTTP on real SQLite: each finished run is
//! entered once with its tokens, time, provider and model; OpenRouter's reported cost is
//! kept; a user's price costs the runs of its model; nothing else gets a cost; sums per
//! model, provider, thread and day; a deleted thread's usage stays; bad input is refused.

use art_testkit::framework::adapters as wire;
use art_testkit::framework::scripted::steps_json;

use art::context::ContextError;
use art::usage::local_day;
use art_testkit::fake::scripts::{Protocol, openrouter_reply, text_reply};
use art_types::AgentFinalResponse;
use art_types::usage::{ModelPrice, UsageBy};

use super::stepped::Stepped;

fn plan() -> String {
    steps_json("Hi", &[("1", "Answer", &[])], &[])
}

/// Two threads: one on OpenRouter (the provider reports each call's cost), one on
/// OpenAI (it does not), a run each.
async fn two_runs() -> (Stepped, String, AgentFinalResponse) {
    let replies = vec![
        openrouter_reply(&plan(), 0.0001),
        openrouter_reply("Hello from OpenRouter.", 0.0002),
        text_reply(Protocol::OpenAi, &plan(), 64),
        text_reply(Protocol::OpenAi, "Hello from OpenAI.", 64),
    ];
    let run = Stepped::start(("openrouter", Protocol::OpenAi, "/v1"), replies, |_| {}).await;
    let first = run.ask("Hi?").await;
    let base = format!("{}/v1", run.server.url());
    let other = wire::thread_at(&run.art, "openai", "fake-model", &base, &[]).await;
    run.art
        .process(
            wire::ask(&other, "Hi?"),
            art::agent::CancellationToken::new(),
        )
        .await
        .unwrap();
    (run, other, first)
}

#[tokio::test]
async fn runs_are_entered_with_their_tokens_and_only_known_costs() {
    let (run, other, _) = two_runs().await;
    let ledger = &run.art.usage;

    let by_model = ledger.report(UsageBy::Model, None).await.unwrap();
    let rows: Vec<(&str, u64, Option<u64>, u64)> = by_model
        .rows
        .iter()
        .map(|r| {
            let t = &r.totals;
            (r.key.as_str(), t.runs, t.cost_nanos, t.costed_runs)
        })
        .collect();
    assert!(
        rows.contains(&("openrouter/fake-model", 1, Some(300_000), 1)),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("openai/fake-model", 1, None, 0)),
        "{rows:?}"
    );
    let openrouter = by_model
        .rows
        .iter()
        .find(|r| r.key == "openrouter/fake-model")
        .unwrap();
    assert_eq!(openrouter.label, "fake-model (openrouter)");
    // Two calls of 7 prompt tokens each; the answers' words as completion tokens.
    assert_eq!(openrouter.totals.input_tokens, 14);
    assert!(openrouter.totals.output_tokens > 0);
    assert_eq!(by_model.total.runs, 2);
    assert_eq!(by_model.total.cost_nanos, Some(300_000));
    assert_eq!(by_model.total.costed_runs, 1, "the OpenAI run has no cost");

    // A price for the OpenAI model costs its run; the reported one stays as reported.
    let price = ModelPrice {
        provider: "openai".into(),
        model: "fake-model".into(),
        input_per_million: 1.0,
        output_per_million: 2.0,
    };
    ledger.save_price(price.clone()).await.unwrap();
    let by_provider = ledger.report(UsageBy::Provider, None).await.unwrap();
    let openai = by_provider.rows.iter().find(|r| r.key == "openai").unwrap();
    let t = openai.totals;
    let expected = t.input_tokens * 1_000 + (t.output_tokens + t.thinking_tokens) * 2_000;
    assert_eq!((t.cost_nanos, t.costed_runs), (Some(expected), 1));
    assert_eq!(by_provider.total.costed_runs, 2);
    assert_eq!(ledger.prices().await.unwrap(), [price]);

    // Per thread (a thread's header), per day.
    let mine = ledger.thread(&other).await.unwrap();
    assert_eq!((mine.runs, mine.cost_nanos), (1, Some(expected)));
    let by_day = ledger.report(UsageBy::Day, None).await.unwrap();
    let today = local_day(art::clock::now_ms());
    assert_eq!(by_day.rows.len(), 1);
    assert_eq!(by_day.rows[0].key, today);
    assert_eq!(by_day.daily.len(), 2, "one bar segment per model");
    let tomorrow = jiff::civil::Date::strptime("%Y-%m-%d", &today)
        .unwrap()
        .tomorrow()
        .unwrap()
        .to_string();
    let later = ledger.report(UsageBy::Day, Some(&tomorrow)).await.unwrap();
    assert!(later.rows.is_empty() && later.total.runs == 0);

    // A deleted thread's runs stay in the ledger.
    run.art.conversation.delete_thread(&other).await.unwrap();
    let by_thread = ledger.report(UsageBy::Thread, None).await.unwrap();
    let gone = by_thread.rows.iter().find(|r| r.key == other).unwrap();
    assert_eq!(
        (gone.label.as_str(), gone.totals.runs),
        ("Deleted thread", 1)
    );

    // Forgetting the price forgets that cost.
    assert!(ledger.delete_price("openai", "fake-model").await.unwrap());
    let total = ledger.report(UsageBy::Model, None).await.unwrap().total;
    assert_eq!((total.cost_nanos, total.costed_runs), (Some(300_000), 1));
}

#[tokio::test]
async fn a_run_is_counted_once_and_bad_input_is_refused() {
    let (run, _, first) = two_runs().await;
    let ledger = &run.art.usage;
    let before = ledger.report(UsageBy::Model, None).await.unwrap().total;
    assert_eq!(before.runs, 2);
    // Entered again (a retried write, a resumed run ending twice): counted once.
    ledger.record(&first.metadata).await.unwrap();
    let after = ledger.report(UsageBy::Model, None).await.unwrap().total;
    assert_eq!(after, before);

    let err = ledger
        .report(UsageBy::Day, Some("last week"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ContextError::InvalidField { field: "since", .. }),
        "{err}"
    );
    for (input, output, field) in [
        (-1.0, 1.0, "inputPerMillion"),
        (1.0, f64::INFINITY, "outputPerMillion"),
    ] {
        let bad = ModelPrice {
            provider: "openai".into(),
            model: "m".into(),
            input_per_million: input,
            output_per_million: output,
        };
        let err = ledger.save_price(bad).await.unwrap_err();
        assert!(
            matches!(err, ContextError::InvalidField { field: f, .. } if f == field),
            "{err}"
        );
    }
    assert!(
        ledger.prices().await.unwrap().is_empty(),
        "nothing was saved"
    );
}
