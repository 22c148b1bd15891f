//! Checks a thread configuration before it is saved: a form or a CLI gets every
//! problem at once, each naming its field, and nothing invalid reaches storage.

use art_types::ThreadConfig;
use serde::{Deserialize, Serialize};

/// Longest model id accepted.
pub const MAX_MODEL_ID: usize = 200;
/// Longest thread system prompt accepted (characters).
pub const MAX_SYSTEM_PROMPT: usize = 100_000;
/// Most past messages a run may send.
pub const MAX_HISTORY_LIMIT: u32 = 1_000;
/// Largest `max_tokens` accepted.
pub const MAX_TOKENS: u32 = 1_000_000;
/// Context windows accepted (tokens).
pub const CONTEXT_WINDOW: std::ops::RangeInclusive<u32> = 512..=100_000_000;
/// Largest serialised adapter options (bytes).
pub const MAX_ADAPTER_OPTIONS: usize = 64 * 1024;

/// One field that is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigProblem {
    /// The field, in the config's JSON names (`providerConfig.modelId`, `enabledTools`…).
    pub field: String,
    /// What is wrong, for people.
    pub message: String,
}

fn problem(field: &str, message: impl Into<String>) -> ConfigProblem {
    ConfigProblem {
        field: field.into(),
        message: message.into(),
    }
}

/// LLM calls a step may be allowed.
pub const STEP_ITERATIONS: std::ops::RangeInclusive<u32> = 1..=50;
/// Tool calls a run may be allowed.
pub const TOOL_CALLS: std::ops::RangeInclusive<u32> = 1..=1_000;

fn limit_problems(limits: &art_types::RunLimits) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    if !STEP_ITERATIONS.contains(&limits.step_iterations) {
        problems.push(problem(
            "limits.stepIterations",
            format!(
                "a step may make {} to {} LLM calls, not {}",
                STEP_ITERATIONS.start(),
                STEP_ITERATIONS.end(),
                limits.step_iterations
            ),
        ));
    }
    if !TOOL_CALLS.contains(&limits.tool_calls) {
        problems.push(problem(
            "limits.toolCalls",
            format!(
                "a run may make {} to {} tool calls, not {}",
                TOOL_CALLS.start(),
                TOOL_CALLS.end(),
                limits.tool_calls
            ),
        ));
    }
    if limits.tokens == Some(0) {
        problems.push(problem(
            "limits.tokens",
            "a token budget is at least 1 token",
        ));
    }
    if limits.seconds == Some(0) {
        problems.push(problem(
            "limits.seconds",
            "a time budget is at least 1 second",
        ));
    }
    problems
}

/// Every problem of `config`, given the tools and providers that exist. Empty: valid.
pub fn validate_thread_config(
    config: &ThreadConfig,
    known_tools: &[String],
    known_providers: &[String],
) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    let provider = &config.provider_config;
    if provider.provider_name.trim().is_empty() {
        problems.push(problem("providerConfig.providerName", "choose a provider"));
    } else if !known_providers.contains(&provider.provider_name) {
        problems.push(problem(
            "providerConfig.providerName",
            format!(
                "there is no provider named {:?} (known: {})",
                provider.provider_name,
                known_providers.join(", ")
            ),
        ));
    }
    let model = provider.model_id.trim();
    if model.is_empty() {
        problems.push(problem("providerConfig.modelId", "choose a model"));
    } else if model.chars().count() > MAX_MODEL_ID || model.chars().any(char::is_control) {
        problems.push(problem(
            "providerConfig.modelId",
            format!("a model id has at most {MAX_MODEL_ID} printable characters"),
        ));
    }
    if let Some(base) = provider.adapter_options.get("base_url") {
        let ok = base
            .as_str()
            .is_some_and(|b| b.starts_with("http://") || b.starts_with("https://"));
        if !ok {
            problems.push(problem(
                "providerConfig.adapterOptions.base_url",
                "the base URL must start with http:// or https://",
            ));
        }
    }
    if provider
        .adapter_options
        .get(art_types::provider::VISION_OPTION)
        .is_some_and(|v| !v.is_boolean())
    {
        problems.push(problem(
            "providerConfig.adapterOptions.vision",
            "say true or false: whether the model sees images",
        ));
    }
    let options_size = serde_json::to_string(&provider.adapter_options).map_or(0, |s| s.len());
    if options_size > MAX_ADAPTER_OPTIONS {
        problems.push(problem(
            "providerConfig.adapterOptions",
            format!("adapter options are limited to {MAX_ADAPTER_OPTIONS} bytes"),
        ));
    }
    let unknown: Vec<&str> = config
        .enabled_tools
        .iter()
        .filter(|t| !known_tools.contains(t))
        .map(String::as_str)
        .take(5)
        .collect();
    if !unknown.is_empty() {
        problems.push(problem(
            "enabledTools",
            format!("unknown tools: {}", unknown.join(", ")),
        ));
    }
    if config.history_limit > MAX_HISTORY_LIMIT {
        problems.push(problem(
            "historyLimit",
            format!("the history limit is 0 to {MAX_HISTORY_LIMIT} messages"),
        ));
    }
    if let Some(n) = config
        .context_window
        .filter(|n| !CONTEXT_WINDOW.contains(n))
    {
        problems.push(problem(
            "contextWindow",
            format!(
                "the context window is {} to {} tokens, not {n}",
                CONTEXT_WINDOW.start(),
                CONTEXT_WINDOW.end()
            ),
        ));
    }
    problems.extend(limit_problems(&config.limits));
    if config
        .system_prompt
        .as_ref()
        .is_some_and(|p| p.chars().count() > MAX_SYSTEM_PROMPT)
    {
        problems.push(problem(
            "systemPrompt",
            format!("a system prompt has at most {MAX_SYSTEM_PROMPT} characters"),
        ));
    }
    let generation = &config.generation;
    if let Some(t) = generation.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
        problems.push(problem(
            "generation.temperature",
            format!("temperature is 0 to 2, not {t}"),
        ));
    }
    if let Some(p) = generation.top_p.filter(|p| !(0.0..=1.0).contains(p)) {
        problems.push(problem(
            "generation.topP",
            format!("top-p is 0 to 1, not {p}"),
        ));
    }
    if let Some(n) = generation
        .max_tokens
        .filter(|n| !(1..=MAX_TOKENS).contains(n))
    {
        problems.push(problem(
            "generation.maxTokens",
            format!("max tokens is 1 to {MAX_TOKENS}, not {n}"),
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use art_types::ProviderConfig;

    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn valid() -> ThreadConfig {
        ThreadConfig {
            provider_config: ProviderConfig {
                provider_name: "ollama".into(),
                model_id: "llama3.2".into(),
                ..Default::default()
            },
            enabled_tools: names(&["calculator"]),
            ..Default::default()
        }
    }

    fn fields(config: &ThreadConfig) -> Vec<String> {
        validate_thread_config(
            config,
            &names(&["calculator", "current_time"]),
            &names(&["ollama", "openai"]),
        )
        .into_iter()
        .map(|p| p.field)
        .collect()
    }

    #[test]
    fn a_sound_config_passes() {
        assert!(fields(&valid()).is_empty());
    }

    #[test]
    fn every_problem_is_reported_with_its_field() {
        let mut config = valid();
        config.provider_config.provider_name = "nope".into();
        config.provider_config.model_id = " ".into();
        config
            .provider_config
            .adapter_options
            .insert("base_url".into(), "ftp://x".into());
        config.enabled_tools = (0..10_000).map(|i| format!("tool{i}")).collect();
        config.history_limit = 5_000;
        config.context_window = Some(100);
        config.system_prompt = Some("x".repeat(MAX_SYSTEM_PROMPT + 1));
        config.generation.temperature = Some(3.5);
        config.generation.top_p = Some(-0.1);
        config.generation.max_tokens = Some(0);
        assert_eq!(
            fields(&config),
            [
                "providerConfig.providerName",
                "providerConfig.modelId",
                "providerConfig.adapterOptions.base_url",
                "enabledTools",
                "historyLimit",
                "contextWindow",
                "systemPrompt",
                "generation.temperature",
                "generation.topP",
                "generation.maxTokens",
            ]
        );
    }
}
