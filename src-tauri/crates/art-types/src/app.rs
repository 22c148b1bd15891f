//! What the app says about itself: version, where its data lives, keychain reachability.

use serde::{Deserialize, Serialize};

/// Answer of the `app_info` command, shown in the About panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppInfo {
    /// Product name as shown to users.
    pub name: String,
    /// Semantic version of the running app.
    pub version: String,
    /// Absolute path of the data directory (database, logs).
    pub data_dir: String,
    /// Whether the data directory came from `ART_WORKBENCH_DATA_DIR`.
    pub data_dir_overridden: bool,
    /// Absolute path of the SQLite database file inside the data directory.
    pub database_path: String,
    /// Absolute path of the folder holding the rotating log files.
    pub log_dir: String,
    /// Whether the OS keychain can be used to store API keys.
    pub keychain: KeychainStatus,
    /// Target triple-ish description of the platform, e.g. `linux-x86_64`.
    pub platform: String,
}

/// Whether the OS keychain (Secret Service, macOS Keychain, Windows Credential Manager)
/// is reachable. API keys are stored nowhere else, so the UI explains when it is not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum KeychainStatus {
    /// A probe read succeeded: keys can be stored and read.
    Available {
        /// Which backend answered, e.g. `Secret Service`.
        backend: String,
    },
    /// The keychain could not be used; `reason` says why in plain words and `hint`
    /// says what the user can do about it.
    Unavailable {
        /// What went wrong, in plain words.
        reason: String,
        /// What to do about it.
        hint: String,
    },
}

impl KeychainStatus {
    /// True when keys can be stored.
    pub fn is_available(&self) -> bool {
        matches!(self, Self::Available { .. })
    }
}

/// Payload of the `art://ready` event: the backend has answered the UI's handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadyEvent {
    /// Version of the backend that answered.
    pub version: String,
    /// Milliseconds from process start to this event.
    pub uptime_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keychain_status_is_tagged_for_the_ui() {
        let unavailable = KeychainStatus::Unavailable {
            reason: "no D-Bus session".into(),
            hint: "start a desktop session".into(),
        };
        let json = serde_json::to_value(&unavailable).unwrap();
        assert_eq!(json["state"], "unavailable");
        assert_eq!(json["reason"], "no D-Bus session");
        let back: KeychainStatus = serde_json::from_value(json).unwrap();
        assert_eq!(back, unavailable);
        assert!(!back.is_available());
        assert!(
            KeychainStatus::Available {
                backend: "x".into()
            }
            .is_available()
        );
    }
}
