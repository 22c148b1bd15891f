//! CurrentTimeTool: the current date and time in an IANA time zone (default UTC).

use art_types::{ToolExample, ToolSchema};
use serde_json::{Value, json};

use super::{ExecutionContext, ToolError, ToolExecutor};

/// Name the model calls it by.
pub const NAME: &str = "current_time";

/// The clock.
pub struct CurrentTimeTool {
    schema: ToolSchema,
}

impl Default for CurrentTimeTool {
    fn default() -> Self {
        Self {
            schema: ToolSchema {
                name: NAME.into(),
                description:
                    "Get the current date and time, optionally in an IANA time zone such as \
                    `Europe/Paris` or `America/New_York` (default: UTC)."
                        .into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "timezone": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 64,
                            "pattern": "^[A-Za-z0-9_+\\-/]+$",
                            "description": "IANA time zone name; defaults to UTC."
                        }
                    },
                    "additionalProperties": false
                }),
                output_schema: None,
                examples: vec![ToolExample {
                    input: json!({ "timezone": "Asia/Tokyo" }),
                    output: None,
                    description: Some("time in Tokyo".into()),
                }],
            },
        }
    }
}

/// The time now in `zone` (`None`: UTC) as `{iso, timezone, weekday, unixMs}`.
pub fn now_in(zone: Option<&str>) -> Result<Value, ToolError> {
    let name = zone.unwrap_or("UTC");
    let tz = jiff::tz::TimeZone::get(name).map_err(|_| {
        ToolError::new(
            "UNKNOWN_TIMEZONE",
            format!("`{name}` is not a known IANA time zone (examples: UTC, Europe/Paris, America/New_York)"),
        )
    })?;
    let now = jiff::Timestamp::now().to_zoned(tz);
    Ok(json!({
        "iso": now.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        "timezone": name,
        "weekday": now.strftime("%A").to_string(),
        "unixMs": now.timestamp().as_millisecond(),
    }))
}

#[async_trait::async_trait]
impl ToolExecutor for CurrentTimeTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn execute(
        &self,
        arguments: &Value,
        _context: &ExecutionContext,
    ) -> Result<Value, ToolError> {
        now_in(arguments.get("timezone").and_then(Value::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_by_default_and_named_zones() {
        let utc = now_in(None).unwrap();
        assert_eq!(utc["timezone"], "UTC");
        assert!(utc["iso"].as_str().unwrap().ends_with("+00:00"));
        let tokyo = now_in(Some("Asia/Tokyo")).unwrap();
        assert!(tokyo["iso"].as_str().unwrap().ends_with("+09:00"));
        let diff = tokyo["unixMs"].as_i64().unwrap() - utc["unixMs"].as_i64().unwrap();
        assert!(diff.abs() < 60_000);
    }

    #[test]
    fn unknown_zone_is_a_clear_error() {
        let err = now_in(Some("Mars/Olympus")).unwrap_err();
        assert_eq!(err.code, "UNKNOWN_TIMEZONE");
        assert!(err.message.contains("Mars/Olympus"));
    }
}
