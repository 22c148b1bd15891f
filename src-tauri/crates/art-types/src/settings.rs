//! The app's own settings, one record for the whole data directory: what a new thread
//! starts with (provider and model, tools, prompt — any thread setting), the models
//! chosen lately (the picker lists them first), and the Ollama server the Models page
//! manages.

use serde::{Deserialize, Serialize};

use crate::thread::{ProviderConfig, ThreadConfig};

/// How many recently chosen models are remembered.
pub const RECENT_MODELS: usize = 8;

/// A provider's model, as the picker offers it and a thread's settings hold it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChoice {
    /// The provider entry's name (`ollama`, `openai`).
    pub provider: String,
    /// The model's id at that provider.
    pub model: String,
}

impl ModelChoice {
    /// The choice a thread's provider settings make; `None` while they name no model.
    pub fn of(config: &ProviderConfig) -> Option<Self> {
        (!config.provider_name.is_empty() && !config.model_id.is_empty()).then(|| Self {
            provider: config.provider_name.clone(),
            model: config.model_id.clone(),
        })
    }
}

/// The app's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppSettings {
    /// The settings every new thread starts with (a thread's own settings, once saved,
    /// are its own: changing these later changes no thread).
    #[serde(default)]
    pub new_thread: ThreadConfig,
    /// Models chosen lately, the latest first, at most [`RECENT_MODELS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_models: Vec<ModelChoice>,
    /// The Ollama server the Models page manages; unset: the Ollama provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ollama_base_url: Option<String>,
    /// The pulls queued or running, kept as they change: those still here when the app
    /// starts again were cut short by its closing (the Models page says so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished_pulls: Vec<String>,
    /// "Send traces to": the OTLP collector runs are sent to as they end.
    #[serde(default)]
    pub trace_push: crate::push::PushSettings,
}

impl AppSettings {
    /// The model new threads start with, if one is chosen.
    pub fn default_model(&self) -> Option<ModelChoice> {
        ModelChoice::of(&self.new_thread.provider_config)
    }

    /// Put `choice` first among the recent models (once), keeping at most
    /// [`RECENT_MODELS`].
    pub fn remember(&mut self, choice: ModelChoice) {
        self.recent_models.retain(|c| *c != choice);
        self.recent_models.insert(0, choice);
        self.recent_models.truncate(RECENT_MODELS);
    }
}

/// A model as a person types it for a comparison or a replay: `PROVIDER:MODEL`
/// (`ollama:llama3.2:3b`, the model's own colons kept), or with the server it is at,
/// `PROVIDER@URL:MODEL` (`openai@http://127.0.0.1:8080/v1:smollm2`) — so columns of one
/// provider kind can each ask another server (LM Studio, llama.cpp, an Ollama elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// The provider entry's name.
    pub provider: String,
    /// The server's address, when given (else the provider's, or the thread's).
    pub base_url: Option<String>,
    /// The model's id at that server.
    pub model: String,
}

impl ModelSpec {
    /// Read `text`; `None` when it names no provider or no model. The address ends at
    /// the `:` after its path (or after its port, when it has no path).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let spec = match text.split_once('@') {
            Some((provider, rest)) if !provider.contains(':') => {
                let (scheme, after) = rest.split_once("://")?;
                // Host, then a port's digits, then a path: the model follows the next `:`.
                let mut end = after.find([':', '/']).unwrap_or(after.len());
                if after[end..].starts_with(':') {
                    let digits = after[end + 1..]
                        .find(|c: char| !c.is_ascii_digit())
                        .unwrap_or(after.len() - end - 1);
                    if digits > 0 {
                        end += 1 + digits;
                    }
                }
                if after[end..].starts_with('/') {
                    end += after[end..].find(':').unwrap_or(after.len() - end);
                }
                let model = after[end..].strip_prefix(':')?;
                Self {
                    provider: provider.trim().to_owned(),
                    base_url: Some(format!("{scheme}://{}", &after[..end])),
                    model: model.trim().to_owned(),
                }
            }
            _ => {
                let (provider, model) = text.split_once(':')?;
                Self {
                    provider: provider.trim().to_owned(),
                    base_url: None,
                    model: model.trim().to_owned(),
                }
            }
        };
        (!spec.provider.is_empty() && !spec.model.is_empty()).then_some(spec)
    }
}

impl std::fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.base_url {
            Some(url) => write!(f, "{}@{url}:{}", self.provider, self.model),
            None => write!(f, "{}:{}", self.provider, self.model),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(model: &str) -> ModelChoice {
        ModelChoice {
            provider: "ollama".into(),
            model: model.into(),
        }
    }

    #[test]
    fn a_model_chosen_again_moves_first_and_the_oldest_fall_off() {
        let mut settings = AppSettings::default();
        for n in 0..10 {
            settings.remember(choice(&format!("m{n}")));
        }
        settings.remember(choice("m5"));
        let names: Vec<_> = settings
            .recent_models
            .iter()
            .map(|c| c.model.as_str())
            .collect();
        assert_eq!(names, ["m5", "m9", "m8", "m7", "m6", "m4", "m3", "m2"]);
    }

    #[test]
    fn settings_saved_by_an_older_app_read_back_with_no_default_model() {
        let settings: AppSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(settings.default_model(), None);
        let mut settings = AppSettings::default();
        settings.new_thread.provider_config.provider_name = "ollama".into();
        assert_eq!(settings.default_model(), None, "a provider without a model");
        settings.new_thread.provider_config.model_id = "llama3.2:3b".into();
        let back: AppSettings =
            serde_json::from_str(&serde_json::to_string(&settings).unwrap()).unwrap();
        assert_eq!(back.default_model(), Some(choice("llama3.2:3b")));
    }

    #[test]
    fn a_model_is_read_with_or_without_its_server() {
        use super::ModelSpec;
        let read = |text: &str| ModelSpec::parse(text).map(|s| (s.provider, s.base_url, s.model));
        assert_eq!(
            read("ollama:llama3.2:3b"),
            Some(("ollama".into(), None, "llama3.2:3b".into()))
        );
        assert_eq!(
            read("openai@http://127.0.0.1:8080/v1:smollm2"),
            Some((
                "openai".into(),
                Some("http://127.0.0.1:8080/v1".into()),
                "smollm2".into()
            ))
        );
        assert_eq!(
            read("ollama@http://gpu-box:11434:qwen3:4b"),
            Some((
                "ollama".into(),
                Some("http://gpu-box:11434".into()),
                "qwen3:4b".into()
            ))
        );
        assert_eq!(
            read("openai@https://lm.example/v1:my-model"),
            Some((
                "openai".into(),
                Some("https://lm.example/v1".into()),
                "my-model".into()
            ))
        );
        for bad in [
            "",
            "ollama",
            "ollama:",
            ":model",
            "openai@http://h:1/v1",
            "openai@nowhere:m",
        ] {
            assert_eq!(read(bad), None, "{bad}");
        }
        let spec = ModelSpec::parse("openai@http://127.0.0.1:8080/v1:smollm2").unwrap();
        assert_eq!(spec.to_string(), "openai@http://127.0.0.1:8080/v1:smollm2");
    }
}
