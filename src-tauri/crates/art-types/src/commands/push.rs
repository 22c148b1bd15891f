//! "Send traces to": the push's settings (with the headers kept in the keychain) and its
//! status line.

use serde::{Deserialize, Serialize};

use crate::push::PushSettings;

/// Use `settings` for sending traces from now on, checked first (the address, each
/// header, the queue's limit: every problem in `details.problems[]`, nothing saved
/// unless none). `headers` replaces the headers kept in the keychain (`[]` removes
/// them); `None` keeps them. Returns the status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetTracePush {
    /// The settings, whole (their `headerNames` are set from `headers`).
    pub settings: PushSettings,
    /// The headers sent with every request, name and value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Vec<(String, String)>>,
}

/// How sending traces goes: sent, queued, failing and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracePushStatus {}
