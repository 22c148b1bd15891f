//! Sending traces to an OTLP collector as runs end: the settings the user chooses (kept
//! in the app's settings; header values in the OS keychain, never here), and the status
//! line the app and `art` show.

use serde::{Deserialize, Serialize};

/// Spans the queue holds by default before the oldest are dropped.
pub const DEFAULT_QUEUE_LIMIT: u64 = 200_000;

/// The keychain account holding the headers sent with every request (a JSON object of
/// name to value: an API key, an `Authorization`).
pub const HEADERS_ACCOUNT: &str = "otlp-push-headers";

/// How spans are sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PushEncoding {
    /// OTLP/HTTP protobuf (`application/x-protobuf`): what every collector takes.
    #[default]
    Protobuf,
    /// OTLP/HTTP JSON (`application/json`): for collectors that take only that.
    Json,
}

/// Which threads' runs are sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum PushScope {
    /// Every thread's.
    #[default]
    All,
    /// Only these threads'.
    Threads {
        /// Their ids.
        ids: Vec<String>,
    },
}

impl PushScope {
    /// Whether runs of `thread_id` are sent.
    pub fn includes(&self, thread_id: &str) -> bool {
        match self {
            Self::All => true,
            Self::Threads { ids } => ids.iter().any(|id| id == thread_id),
        }
    }
}

/// "Send traces to": where, how and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushSettings {
    /// Sending is on.
    pub enabled: bool,
    /// The collector's OTLP/HTTP address (`http://localhost:4318`, or the full
    /// `…/v1/traces`).
    pub endpoint: String,
    /// Protobuf or JSON.
    #[serde(default)]
    pub encoding: PushEncoding,
    /// Which threads.
    #[serde(default)]
    pub scope: PushScope,
    /// Send what people and models wrote (questions, answers, messages, tool arguments
    /// and results). Off unless chosen, as the GenAI conventions ask.
    #[serde(default)]
    pub include_content: bool,
    /// Spans kept while the collector cannot be reached; past it the oldest are
    /// dropped, and counted.
    #[serde(default = "default_limit")]
    pub queue_limit: u64,
    /// The names of the headers kept in the keychain (shown in the form; the values
    /// are never read back into the app's screens).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header_names: Vec<String>,
}

fn default_limit() -> u64 {
    DEFAULT_QUEUE_LIMIT
}

impl Default for PushSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: String::new(),
            encoding: PushEncoding::default(),
            scope: PushScope::default(),
            include_content: false,
            queue_limit: DEFAULT_QUEUE_LIMIT,
            header_names: Vec::new(),
        }
    }
}

/// What the sender is doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PushState {
    /// Sending is off.
    #[default]
    Off,
    /// Everything queued was sent.
    Idle,
    /// A batch is on its way.
    Sending,
    /// The last try failed; the queue waits for the next.
    Failing,
}

/// The status line's facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushStatus {
    /// What the sender is doing.
    pub state: PushState,
    /// Where it sends (the traces URL), when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Runs (or parts of runs) waiting.
    pub queued_runs: u64,
    /// Spans waiting.
    pub queued_spans: u64,
    /// Spans the collector took.
    pub sent_spans: u64,
    /// Spans dropped because the queue was full.
    pub dropped_spans: u64,
    /// Spans the collector refused for good.
    pub refused_spans: u64,
    /// The last failure, as the collector or the network said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// When the next try is (Unix ms), while failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<i64>,
}

impl PushStatus {
    /// The status as one line: `sent 1,204 spans · 3 queued` / `failing: … — retrying`.
    pub fn line(&self) -> String {
        let mut line = match self.state {
            PushState::Off => return "Sending traces is off".to_owned(),
            PushState::Idle | PushState::Sending if self.queued_spans == 0 => {
                format!("Sent {} spans", self.sent_spans)
            }
            PushState::Idle | PushState::Sending => format!(
                "Sent {} spans · {} queued",
                self.sent_spans, self.queued_spans
            ),
            PushState::Failing => format!(
                "Failing: {} · {} spans queued",
                self.last_error
                    .as_deref()
                    .unwrap_or("the collector did not take them"),
                self.queued_spans
            ),
        };
        if self.dropped_spans > 0 {
            line.push_str(&format!(
                " · {} dropped (the queue was full)",
                self.dropped_spans
            ));
        }
        if self.refused_spans > 0 {
            line.push_str(&format!(" · {} refused", self.refused_spans));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_saved_before_a_field_existed_read_with_its_default() {
        let s: PushSettings =
            serde_json::from_str(r#"{"enabled":true,"endpoint":"http://localhost:4318"}"#).unwrap();
        assert_eq!(s.queue_limit, DEFAULT_QUEUE_LIMIT);
        assert_eq!(s.encoding, PushEncoding::Protobuf);
        assert!(s.scope.includes("any") && !s.include_content);
        let some = PushScope::Threads {
            ids: vec!["t1".into()],
        };
        assert!(some.includes("t1") && !some.includes("t2"));
    }

    #[test]
    fn the_line_says_what_waits_and_what_was_lost() {
        let status = PushStatus {
            state: PushState::Failing,
            queued_spans: 40,
            dropped_spans: 7,
            last_error: Some("cannot reach http://h/v1/traces: Connection refused".into()),
            ..PushStatus::default()
        };
        assert_eq!(
            status.line(),
            "Failing: cannot reach http://h/v1/traces: Connection refused · 40 spans queued · 7 dropped (the queue was full)"
        );
    }
}
