use art_testkit::bench::{Budget, Figure, Results};

use super::format::{date, number};
use super::*;

#[test]
fn numbers_dates_and_ranges_read_naturally() {
    assert_eq!(number(1_234_567.8), "1,234,568");
    assert_eq!(number(354.4), "354");
    assert_eq!(number(12.34), "12.3");
    assert_eq!(number(0.456), "0.46");
    assert_eq!(date(0), "1970-01-01 00:00 UTC");
    assert_eq!(date(1_795_426_200), "2026-11-23 09:30 UTC");
    assert_eq!(date(951_782_400), "2000-02-29 00:00 UTC");
}

/// A results document as a benchmark writes it.
fn written(results: &Results) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = results.write_to(dir.path()).unwrap();
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn budgets_are_judged_on_the_median_and_peers_sit_side_by_side() {
    let mut stream = Results::new("stream", "cargo xtask bench stream");
    let fig = |id: &str, label: &str, unit: &str, v: Vec<f64>| Figure::new(id, label, unit, v);
    stream.add(
        fig(
            "stream/openai-events/art-pipeline/tokens_per_s",
            "Ours",
            "tokens/s",
            vec![9e5, 1.1e6, 1.2e6],
        )
        .budget(Budget::AtLeast(1e6)),
    );
    stream.add(fig(
        "stream/openai-events/art-pipeline/cpu_us_per_token",
        "Ours",
        "µs/token",
        vec![1.0; 5],
    ));
    stream.add(fig(
        "stream/openai-events/node-openai/tokens_per_s",
        "openai (Node)",
        "tokens/s",
        vec![5e4],
    ));
    stream.add(fig(
        "stream/openai-events/node-openai/cpu_us_per_token",
        "openai (Node)",
        "µs/token",
        vec![20.0],
    ));
    stream.add(
        fig(
            "stream/openai-events/ratio/node-openai",
            "ratio",
            "×",
            vec![0.6, 0.7, 0.8],
        )
        .budget(Budget::AtMost(0.5)),
    );
    let mut desktop = Results::new("desktop", "cargo xtask bench desktop");
    desktop.add(
        fig("desktop/start_ms", "Start", "ms", vec![400.0, 500.0, 450.0])
            .budget(Budget::AtMost(1000.0)),
    );
    let md = render(
        &[written(&stream), written(&desktop)],
        "## How to read these numbers\n\nThe notes.\n",
    );

    assert!(md.contains("| Ours — throughput (openai-events) | **1,100,000** tokens/s [900,000 – 1,200,000] | ≥ 1,000,000 tokens/s: met |"), "{md}");
    assert!(
        md.contains("| Start | **450** ms [400 – 500] | ≤ 1,000 ms: met |"),
        "{md}"
    );
    // Peers sit in rows beside ours; the comparisons follow, judged against their budgets.
    assert!(
        md.contains("### OpenAI Chat Completions (SSE), one HTTP chunk per event"),
        "{md}"
    );
    assert!(
        md.contains("| openai (Node) | **50,000** tokens/s | **20.0** µs/token | — |"),
        "{md}"
    );
    assert!(
        md.contains("| ratio | **0.70** × [0.60 – 0.80] | ≤ 0.50 ×: **missed** |"),
        "{md}"
    );
    assert!(
        !md.contains("paced:"),
        "a framing without figures has no table: {md}"
    );
    // Benchmarks without figures say how to get them; the notes close the report.
    assert!(md.contains("Not measured yet: run `cargo xtask bench export`."));
    assert!(
        md.ends_with("## How to read these numbers\n\nThe notes.\n"),
        "the notes close the report"
    );
    assert!(md.contains("## How noisy this machine was"));
    // Each section says how fast the machine was around it; the noise section sums it up.
    assert!(md.contains("calibration loop"), "{md}");
    assert!(md.contains("A fixed CPU-bound loop"), "{md}");
}
