//! Ids and wall-clock time, in one place so every record is stamped the same way.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A new random (v4) UUID in its hyphenated form.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
