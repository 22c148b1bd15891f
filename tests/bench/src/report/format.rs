//! How the report writes numbers, ranges and dates.

use serde_json::Value;

/// A number for people: thousands grouped above 1,000, about three significant digits
/// below.
pub fn number(v: f64) -> String {
    if v.abs() >= 1_000.0 {
        let digits = format!("{:.0}", v.abs());
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        if v < 0.0 {
            format!("-{grouped}")
        } else {
            grouped
        }
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `[min – max]` of a figure.
pub fn spread(f: &Value) -> String {
    format!(
        "[{} – {}]",
        number(f["min"].as_f64().unwrap_or(0.0)),
        number(f["max"].as_f64().unwrap_or(0.0))
    )
}

/// `2026-11-23 09:30 UTC` for seconds since the Unix epoch.
pub fn date(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let (h, m) = ((unix % 86_400) / 3_600, (unix % 3_600) / 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02} UTC")
}
