//! Benchmark figures as data. Each benchmark collects its [`Figure`]s in a [`Results`]
//! and writes them to `<results dir>/<bench>.json`; `art-bench report` (run by
//! `cargo xtask bench`) turns every results file into BENCHMARKS.md. The directory is
//! `$ART_BENCH_RESULTS`, else `tests/bench/results` of this workspace: the results are
//! committed with the report made from them, so a bench re-run alone leaves the others'
//! figures as they were, and anyone can check a figure against its raw runs.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// What a figure must stay within.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// The median must be at most this.
    AtMost(f64),
    /// The median must be at least this.
    AtLeast(f64),
}

/// One measured quantity: every run's value, in `unit`.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Stable key (`stream/openai/art-pipeline/cpu_us_per_token`), for reports to find.
    pub id: String,
    /// What was measured, for people.
    pub label: String,
    /// Unit of `values` (`tokens/s`, `ms`, `MB`, …).
    pub unit: String,
    /// One value per run (at least one).
    pub values: Vec<f64>,
    /// The budget the median is held to, if any.
    pub budget: Option<Budget>,
}

impl Figure {
    /// A figure without a budget.
    pub fn new(id: &str, label: &str, unit: &str, values: Vec<f64>) -> Self {
        Self {
            id: id.into(),
            label: label.into(),
            unit: unit.into(),
            values,
            budget: None,
        }
    }

    /// The same figure held to `budget`.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Median, min and max of the values.
    pub fn stats(&self) -> Stats {
        Stats::of(&self.values)
    }

    fn to_json(&self) -> Value {
        let stats = self.stats();
        json!({
            "id": self.id,
            "label": self.label,
            "unit": self.unit,
            "values": self.values,
            "median": stats.median,
            "min": stats.min,
            "max": stats.max,
            "budget": self.budget.map(|b| match b {
                Budget::AtMost(v) => json!({ "at_most": v }),
                Budget::AtLeast(v) => json!({ "at_least": v }),
            }),
        })
    }
}

/// Median and range of some runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The middle value (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

impl Stats {
    /// The stats of `values` (all zero when there are none).
    pub fn of(values: &[f64]) -> Self {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        if n == 0 {
            return Self {
                median: 0.0,
                min: 0.0,
                max: 0.0,
            };
        }
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Self {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        }
    }
}

/// The figures of one benchmark, written as one JSON file.
#[derive(Debug)]
pub struct Results {
    bench: String,
    command: String,
    started: SystemTime,
    calibration_ms: f64,
    figures: Vec<Figure>,
    notes: Vec<String>,
}

/// Milliseconds this machine takes for a fixed CPU-bound loop right now (integer mixing,
/// no memory traffic): its speed at the moment, so invocations can be compared. A
/// benchmark that ran while this was slow ran on a slow machine. Lower is faster.
pub fn calibrate() -> f64 {
    let started = std::time::Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..std::hint::black_box(40_000_000u64) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(i);
    }
    std::hint::black_box(x);
    started.elapsed().as_secs_f64() * 1e3
}

impl Results {
    /// Results of `bench`, produced by `command` (as a reader would type it). Times the
    /// [`calibrate`] loop first (and again when written).
    pub fn new(bench: &str, command: &str) -> Self {
        let calibration_ms = calibrate();
        Self {
            bench: bench.into(),
            command: command.into(),
            started: SystemTime::now(),
            calibration_ms,
            figures: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Add a figure, printing it as progress.
    pub fn add(&mut self, figure: Figure) {
        let s = figure.stats();
        eprintln!(
            "  {}: {} {} [{} – {}] ({} runs)",
            figure.label,
            round(s.median),
            figure.unit,
            round(s.min),
            round(s.max),
            figure.values.len()
        );
        self.figures.push(figure);
    }

    /// Add a sentence the report shows under this benchmark's table (conditions, caveats).
    pub fn note(&mut self, text: &str) {
        self.notes.push(text.into());
    }

    /// Write `<results dir>/<bench>.json` ([`results_dir`]), returning its path.
    pub fn write(&self) -> std::io::Result<PathBuf> {
        self.write_to(&results_dir())
    }

    /// Write `<dir>/<bench>.json`, returning its path.
    pub fn write_to(&self, dir: &std::path::Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.json", self.bench));
        let unix = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let doc = json!({
            "bench": self.bench,
            "command": self.command,
            "started_unix": unix(self.started).as_secs(),
            "seconds": self.started.elapsed().unwrap_or_default().as_secs_f64(),
            "machine": machine(),
            "calibration_ms": [self.calibration_ms, calibrate()],
            "notes": self.notes,
            "figures": self.figures.iter().map(Figure::to_json).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
        std::fs::write(&path, text)?;
        eprintln!("figures written to {}", path.display());
        Ok(path)
    }
}

/// Three significant digits, for progress lines.
fn round(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Where results files go (and the report reads them from).
pub fn results_dir() -> PathBuf {
    match std::env::var_os("ART_BENCH_RESULTS") {
        Some(dir) => dir.into(),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/results"),
    }
}

/// Cores, memory, CPU model and operating system of this machine (its cores, not those
/// this process may use: a bench pins clients to one core each).
pub fn machine() -> Value {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = match cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
    {
        0 => std::thread::available_parallelism().map_or(0, |n| n.get()),
        n => n,
    };
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_else(|| std::env::consts::OS.to_owned());
    json!({
        "cores": cores,
        "memory_gib": (mem_kb as f64 / 1_048_576.0 * 10.0).round() / 10.0,
        "cpu": cpu,
        "os": os,
    })
}

/// CPU time (user + system) of this process so far, from `/proc/self/stat` (10 ms ticks).
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at ") ".
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, r)| r.split(' ').collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 (1-based), 11 and 12 after the name; 100 Hz.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_take_the_middle_and_the_range() {
        let s = Stats::of(&[3.0, 1.0, 2.0, 10.0, 4.0]);
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 10.0));
        assert_eq!(Stats::of(&[1.0, 2.0, 3.0, 5.0]).median, 2.5);
        assert_eq!(Stats::of(&[]).median, 0.0);
    }

    #[test]
    fn results_are_written_as_json_with_their_machine() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Results::new("x", "cargo xtask bench x");
        r.add(Figure::new("a/b", "A b", "ms", vec![2.0, 1.0, 3.0]).budget(Budget::AtMost(2.5)));
        r.note("a note");
        let path = r.write_to(dir.path()).unwrap();
        assert_eq!(path, dir.path().join("x.json"));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["command"], "cargo xtask bench x");
        assert_eq!(doc["notes"][0], "a note");
        let figure = &doc["figures"][0];
        assert_eq!(
            (figure["id"].as_str(), figure["median"].as_f64()),
            (Some("a/b"), Some(2.0))
        );
        assert_eq!(
            (figure["min"].as_f64(), figure["max"].as_f64()),
            (Some(1.0), Some(3.0))
        );
        assert_eq!(figure["budget"]["at_most"], 2.5);
        assert!(doc["machine"]["cores"].as_u64().unwrap() >= 1);
    }
}
