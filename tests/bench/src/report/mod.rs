//! BENCHMARKS.md, made from the results files every benchmark writes (see
//! [`art_testkit::bench`]): the budgets at a glance, then each benchmark's figures with
//! the command, machine and date that produced them, the peers side by side, and the
//! hand-written notes of `tests/bench/notes.md` at the end.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

pub mod format;

use format::{date, number, spread};

/// The benchmarks, in the order the report shows them, with their section titles.
const SECTIONS: &[(&str, &str)] = &[
    ("stream", "Streaming pipeline vs peers"),
    ("framework", "Storage and agent"),
    ("export", "Trace export"),
    ("desktop", "Desktop app"),
    ("adapters", "Provider adapters in one process"),
    ("mcp", "MCP client vs the TypeScript SDK"),
    ("attachments", "Attachments"),
    ("knowledge", "Knowledge search"),
    ("push", "Traces to a collector"),
    ("columns", "Comparing models"),
    ("columns-page", "Comparing models in the app"),
    ("first-token", "Time to the first answer token"),
];

/// The hand-written part (how to read the numbers, how budgets were reached), read when
/// the report is written, so editing it needs no rebuild of the benchmarks.
fn notes_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("notes.md")
}

/// Render every results file in `dir`, then the notes, into `out`.
pub fn write(dir: &Path, out: &Path) -> Result<(), String> {
    let notes = notes_path();
    let notes = std::fs::read_to_string(&notes).map_err(|e| format!("{}: {e}", notes.display()))?;
    let mut docs = Vec::new();
    for (bench, _) in SECTIONS {
        let path = dir.join(format!("{bench}.json"));
        match std::fs::read_to_string(&path) {
            Ok(text) => docs.push(
                serde_json::from_str::<Value>(&text)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            ),
            Err(_) => eprintln!("report: no figures for {bench} (not run yet)"),
        }
    }
    let text = render(&docs, &notes);
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("report: {} written", out.display());
    Ok(())
}

/// The whole report for the results `docs`.
pub fn render(docs: &[Value], notes: &str) -> String {
    let mut md = String::from("# Benchmarks\n\n");
    md.push_str(
        "<!-- Made by `cargo xtask bench` (`art-bench report`) from the figures the benchmarks \
         write to tests/bench/results/. Edit the benches or tests/bench/notes.md, not this file. -->\n\n",
    );
    md.push_str(
        "Every figure here comes from `cargo xtask bench`, which runs all the benchmarks, \
         the peers included, and rewrites this file (`cargo xtask bench <name>` re-runs one; \
         the others keep their last figures and dates). Each figure is the **median** of its \
         runs, with [min – max]; the budgets are those of DESIGN.md §8.\n\n",
    );
    if let Some(first) = docs.first() {
        let m = &first["machine"];
        let _ = writeln!(
            md,
            "Machine: {} cores, {} GiB, {}; {}.\n",
            m["cores"],
            m["memory_gib"],
            m["cpu"].as_str().unwrap_or("unknown CPU"),
            m["os"].as_str().unwrap_or("unknown OS"),
        );
    }
    md.push_str(&budgets(docs));
    for (bench, title) in SECTIONS {
        let Some(doc) = docs.iter().find(|d| d["bench"] == *bench) else {
            let _ = writeln!(
                md,
                "## {title}\n\nNot measured yet: run `cargo xtask bench {bench}`.\n"
            );
            continue;
        };
        let _ = writeln!(md, "## {title}\n");
        let _ = writeln!(
            md,
            "`{}` — {}, {:.0} s{}.\n",
            doc["command"].as_str().unwrap_or_default(),
            date(doc["started_unix"].as_u64().unwrap_or(0)),
            doc["seconds"].as_f64().unwrap_or(0.0),
            calibration(doc)
                .map(|(a, b)| format!("; calibration loop {a:.0} ms before, {b:.0} ms after"))
                .unwrap_or_default()
        );
        for note in doc["notes"].as_array().into_iter().flatten() {
            let _ = writeln!(md, "{}\n", note.as_str().unwrap_or_default());
        }
        if *bench == "stream" {
            md.push_str(&stream_tables(doc));
        } else {
            md.push_str(&figure_table(doc));
        }
    }
    md.push_str(&noise_and_speed(docs));
    md.push_str(notes);
    md
}

fn figures(doc: &Value) -> impl Iterator<Item = &Value> {
    doc["figures"].as_array().into_iter().flatten()
}

/// `median unit [min – max]`.
fn measured(f: &Value) -> String {
    let unit = f["unit"].as_str().unwrap_or_default();
    let n = f["values"].as_array().map_or(0, Vec::len);
    let median = number(f["median"].as_f64().unwrap_or(0.0));
    if n > 1 {
        format!("**{median}** {unit} {}", spread(f))
    } else {
        format!("**{median}** {unit}")
    }
}

/// `≤ 5 ms: met` for a figure with a budget, else `—`.
fn verdict(f: &Value) -> String {
    let median = f["median"].as_f64().unwrap_or(0.0);
    let unit = f["unit"].as_str().unwrap_or_default();
    let budget = &f["budget"];
    let (limit, ok, sign) = if let Some(v) = budget["at_most"].as_f64() {
        (v, median <= v, "≤")
    } else if let Some(v) = budget["at_least"].as_f64() {
        (v, median >= v, "≥")
    } else {
        return "—".into();
    };
    let word = if ok { "met" } else { "**missed**" };
    format!("{sign} {} {unit}: {word}", number(limit))
}

/// Every budgeted figure of every benchmark in one table.
fn budgets(docs: &[Value]) -> String {
    let mut md =
        String::from("## Budgets at a glance\n\n| Figure | Measured | Budget |\n|---|---|---|\n");
    for doc in docs {
        for f in figures(doc).filter(|f| !f["budget"].is_null()) {
            let _ = writeln!(md, "| {} | {} | {} |", label_of(f), measured(f), verdict(f));
        }
    }
    md.push('\n');
    md
}

/// A figure's label, with the protocol for streaming figures.
fn label_of(f: &Value) -> String {
    let id = f["id"].as_str().unwrap_or_default();
    let label = f["label"].as_str().unwrap_or_default();
    let mut parts = id.split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("stream"), Some(wire), Some("ratio"), _) => format!("{label} ({wire})"),
        (Some("stream"), Some(wire), _, Some(what))
        | (Some("adapters"), Some(wire), Some(what), _) => {
            let what = match what {
                "tokens_per_s" => "throughput",
                "cpu_us_per_token" => "CPU per token",
                "ttft_added_ms" => "added time to first token",
                other => other,
            };
            format!("{label} — {what} ({wire})")
        }
        _ => label.to_owned(),
    }
}

/// One row per figure.
fn figure_table(doc: &Value) -> String {
    let mut md = String::from("| Figure | Measured | Runs | Budget |\n|---|---|---|---|\n");
    for f in figures(doc) {
        let runs = f["values"].as_array().map_or(0, Vec::len);
        let _ = writeln!(
            md,
            "| {} | {} | {runs} | {} |",
            label_of(f),
            measured(f),
            verdict(f)
        );
    }
    md.push('\n');
    md
}

/// The streaming comparisons, in the order the report shows them: (figure-id part, title).
const STREAM_TABLES: &[(&str, &str)] = &[
    (
        "openai-events",
        "OpenAI Chat Completions (SSE), one HTTP chunk per event",
    ),
    (
        "ollama-events",
        "Ollama `/api/chat` (NDJSON), one HTTP chunk per line",
    ),
    (
        "openai-paced",
        "OpenAI, paced: one event at a time, as a model sends them",
    ),
    (
        "ollama-paced",
        "Ollama, paced: one line at a time, as a model sends them",
    ),
    (
        "openai-burst",
        "OpenAI, burst: 16 KiB writes (no real server sends this)",
    ),
    (
        "ollama-burst",
        "Ollama, burst: 16 KiB writes (no real server sends this)",
    ),
];

/// Per protocol and framing: one row per client, then the comparisons between them.
fn stream_tables(doc: &Value) -> String {
    let mut md = String::new();
    for (part, title) in STREAM_TABLES {
        let prefix = format!("stream/{part}/");
        let find = |key: &str, what: &str| {
            figures(doc).find(|f| f["id"].as_str() == Some(&format!("{prefix}{key}/{what}")))
        };
        let clients: Vec<&str> = figures(doc)
            .filter_map(|f| {
                f["id"]
                    .as_str()?
                    .strip_prefix(&prefix)?
                    .strip_suffix("/tokens_per_s")
            })
            .collect();
        if clients.is_empty() {
            continue;
        }
        let _ = writeln!(
            md,
            "### {title}\n\n| Client | Tokens/s | CPU µs per token | Added time to first token |\n|---|---|---|---|"
        );
        for key in clients {
            let cell = |what: &str| find(key, what).map_or("—".into(), measured);
            let label = find(key, "tokens_per_s")
                .and_then(|f| f["label"].as_str())
                .unwrap_or(key);
            let _ = writeln!(
                md,
                "| {label} | {} | {} | {} |",
                cell("tokens_per_s"),
                cell("cpu_us_per_token"),
                cell("ttft_added_ms")
            );
        }
        let ratios: Vec<&Value> = figures(doc)
            .filter(|f| {
                let rest = f["id"].as_str().and_then(|id| id.strip_prefix(&prefix));
                rest.is_some_and(|r| r.starts_with("ratio/") || r.starts_with("setup/"))
            })
            .collect();
        if !ratios.is_empty() {
            md.push_str("\n| Compared (CPU per token, round by round) and set-up | Measured | Budget |\n|---|---|---|\n");
            for f in ratios {
                let label = f["label"].as_str().unwrap_or_default();
                let _ = writeln!(md, "| {label} | {} | {} |", measured(f), verdict(f));
            }
        }
        md.push('\n');
    }
    md
}

/// The calibration loop's time (ms) before and after a benchmark, if recorded.
fn calibration(doc: &Value) -> Option<(f64, f64)> {
    let times = doc["calibration_ms"].as_array()?;
    Some((times.first()?.as_f64()?, times.get(1)?.as_f64()?))
}

/// How far repeat runs spread on this machine, from the figures themselves, and how its
/// speed moved between the benchmarks (the calibration loop).
fn noise_and_speed(docs: &[Value]) -> String {
    let mut md = noise(docs);
    let times: Vec<f64> = docs
        .iter()
        .filter_map(calibration)
        .flat_map(|(a, b)| [a, b])
        .collect();
    let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
    let slowest = times.iter().copied().fold(0.0, f64::max);
    if !times.is_empty() && fastest > 0.0 {
        if md.is_empty() {
            md.push_str("## How noisy this machine was\n\n");
        }
        let _ = write!(
            md,
            "A fixed CPU-bound loop (registers only), timed before and after each benchmark, \
             took {fastest:.0}–{slowest:.0} ms in this report ({:.0} % apart): compare it \
             between invocations to see whether the CPU time this machine gave us changed. \
             It measures the CPU only: contention for memory bandwidth and disk from \
             neighbours, which moves the storage and export figures most (the same code's \
             insert rate has read 240k/s and 157k/s in two invocations three hours apart), \
             it may not see.\n\n",
            (slowest / fastest - 1.0) * 100.0
        );
    }
    md
}

/// How far repeat runs spread on this machine, from the figures themselves.
fn noise(docs: &[Value]) -> String {
    let mut spreads: Vec<(f64, String)> = docs
        .iter()
        .flat_map(figures)
        .filter(|f| f["values"].as_array().is_some_and(|v| v.len() >= 5))
        .filter_map(|f| {
            let (median, min, max) = (
                f["median"].as_f64()?,
                f["min"].as_f64()?,
                f["max"].as_f64()?,
            );
            (median.abs() > 0.0).then(|| ((max - min) / median.abs() * 100.0, label_of(f)))
        })
        .collect();
    if spreads.is_empty() {
        return String::new();
    }
    spreads.sort_by(|a, b| a.0.total_cmp(&b.0));
    let middle = spreads[spreads.len() / 2].0;
    let (worst, worst_label) = spreads.last().cloned().unwrap_or_default();
    format!(
        "## How noisy this machine was\n\nAcross the {} figures above with at least 5 runs, \
         the range (max − min) was **{middle:.0} %** of the median for the typical figure; \
         the widest was {worst:.0} % ({worst_label}). Differences smaller than that range \
         are not evidence of anything.\n\n",
        spreads.len()
    )
}

#[cfg(test)]
mod tests;
