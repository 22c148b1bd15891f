//! The OS keychain through the `keyring` crate: Secret Service on Linux, Keychain on
//! macOS, Credential Manager on Windows.

use art_types::KeychainStatus;

use super::{Secret, SecretError, SecretStore, check_account};

/// Account name used only to check that the keychain answers; no secret is stored.
const PROBE_ACCOUNT: &str = "__art_workbench_probe__";

/// [`SecretStore`] backed by the OS keychain, under one service name.
#[derive(Debug, Clone)]
pub struct KeychainStore {
    service: String,
}

impl Default for KeychainStore {
    fn default() -> Self {
        Self::new(crate::APP_IDENTIFIER)
    }
}

impl KeychainStore {
    /// A store whose entries are filed under `service` (the app uses its identifier).
    pub fn new(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, SecretError> {
        check_account(account)?;
        keyring::Entry::new(&self.service, account).map_err(classify)
    }
}

/// Name of the platform backend, for the About panel.
fn backend_name() -> &'static str {
    if cfg!(target_os = "macos") {
        "macOS Keychain"
    } else if cfg!(windows) {
        "Windows Credential Manager"
    } else {
        "Secret Service"
    }
}

/// What a user can do when the keychain is unreachable on this platform.
fn hint() -> String {
    if cfg!(target_os = "linux") {
        "Start a Secret Service provider (GNOME Keyring or KWallet) in your desktop session; \
         on a headless machine run the app inside `dbus-run-session` with \
         `gnome-keyring-daemon --unlock --components=secrets`."
            .into()
    } else {
        "Unlock the system keychain and allow ART Workbench to use it.".into()
    }
}

/// Map a keyring error to ours. Keyring errors carry no secret values.
fn classify(err: keyring::Error) -> SecretError {
    match err {
        keyring::Error::PlatformFailure(e) | keyring::Error::NoStorageAccess(e) => {
            SecretError::Unavailable {
                reason: e.to_string(),
                hint: hint(),
            }
        }
        keyring::Error::Invalid(attr, why) => SecretError::InvalidName(format!("{attr}: {why}")),
        other => SecretError::Backend(other.to_string()),
    }
}

impl SecretStore for KeychainStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, SecretError> {
        match self.entry(account)?.get_password() {
            Ok(value) => Ok(Some(Secret::new(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), SecretError> {
        let set = self.entry(account)?.set_password(secret.expose());
        super::changed();
        set.map_err(classify)
    }

    fn delete(&self, account: &str) -> Result<(), SecretError> {
        let deleted = self.entry(account)?.delete_credential();
        super::changed();
        match deleted {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(classify(e)),
        }
    }

    fn probe(&self) -> KeychainStatus {
        match self.get(PROBE_ACCOUNT) {
            Ok(_) => KeychainStatus::Available {
                backend: backend_name().into(),
            },
            Err(SecretError::Unavailable { reason, hint }) => {
                KeychainStatus::Unavailable { reason, hint }
            }
            Err(other) => KeychainStatus::Unavailable {
                reason: other.to_string(),
                hint: hint(),
            },
        }
    }
}
