//! The app's settings and the model picker: what new threads start with, a thread's
//! model chosen in its header, and the models chosen lately.

use serde::{Deserialize, Serialize};

use crate::thread::ThreadConfig;

/// The app's settings ([`AppSettings`](crate::settings::AppSettings)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetAppSettings {}

/// Make `config` what new threads start with; checked as a thread's settings are (every
/// problem in `details.problems[]`, nothing saved unless none). Returns the settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetNewThreadDefaults {
    /// The settings new threads start with.
    pub config: ThreadConfig,
}

/// Give thread `thread_id` the model `model` of provider `provider` (its other settings
/// kept; the provider's options too when it stays the same), and remember the choice
/// among the recent ones; with `make_default`, new threads start with it too. Returns
/// the thread's settings as saved. Runs already started keep their model; each run
/// records the one it used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChooseModel {
    /// The thread.
    pub thread_id: String,
    /// The provider entry's name.
    pub provider: String,
    /// The model's id at that provider.
    pub model: String,
    /// New threads start with this model too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub make_default: bool,
}
