//! Ids and wall-clock time, in one place so every record is stamped the same way.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A new time-ordered (v7) UUID in its hyphenated form. Ids that grow with time keep
/// index inserts at the end of the B-tree instead of scattering them (and sort by age).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
