//! `art config --thread ID [changes…]`: a thread's settings read and changed from the
//! command line (`--new-threads`: the settings every new thread starts with, in the app
//! and in `art run --new`) — provider, model, base URL, whether the model sees images, system
//! prompt, tools and their policies, how tools are offered, plan review, limits,
//! sampling — checked as the app's Settings form checks them
//! (`Standard::save_thread_config`): nothing invalid is saved, every problem is named.

use anyhow::{Context, bail};
use art::providers::options::BASE_URL;
use art::standard::{SettingsError, Standard};
use art_types::approval::ToolPolicy;
use art_types::{ThreadConfig, ToolCalling};
use serde_json::Value;

use crate::out::sayln;

/// How tools are offered to the model.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Offer {
    /// The provider's native tool calling.
    Native,
    /// Described in the prompt, calls written as JSON (models without native tools).
    Text,
}

/// On or off.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// Whether the thread's model sees images.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Images {
    /// As the model says: a local server is asked (Ollama's capabilities); other
    /// providers are trusted to.
    Auto,
    /// The model sees images.
    Yes,
    /// The model does not: a question with an image is refused before it is sent.
    No,
}

/// Options of `art config`: without changes, the settings are printed.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("whose").required(true).args(["thread", "new_threads"])))]
pub struct Args {
    /// The thread (see `art threads`).
    #[arg(long, value_name = "ID")]
    thread: Option<String>,
    /// The settings new threads start with (the app's default model, tools, prompt).
    #[arg(long)]
    new_threads: bool,
    /// Provider (any case): ollama, openai, anthropic, gemini, deepseek, openrouter.
    #[arg(long)]
    provider: Option<String>,
    /// Model id, e.g. `llama3.2:3b` or `gpt-4o-mini`.
    #[arg(long)]
    model: Option<String>,
    /// Base URL of the provider (`""` goes back to the provider's own).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Whether the model sees images (`auto`: a local server is asked).
    #[arg(long, value_enum)]
    images: Option<Images>,
    /// The thread's own system prompt (`""` removes it).
    #[arg(long, value_name = "TEXT")]
    system_prompt: Option<String>,
    /// The tools the thread may use, comma-separated (`""` for none).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
    /// A tool's policy in this thread: `TOOL=runs`, `TOOL=asks` (first) or `TOOL=never`;
    /// `TOOL=default` goes back to the tool's own. Repeatable.
    #[arg(long = "policy", value_name = "TOOL=POLICY")]
    policies: Vec<String>,
    /// How tools are offered: natively, or in text for models without tool calling.
    #[arg(long, value_enum)]
    tool_calling: Option<Offer>,
    /// Ask for the plan by its JSON Schema, as the provider's structured output (`off`:
    /// as plain text, for a server that refuses it — noticed and set by itself).
    #[arg(long, value_enum)]
    structured_plans: Option<Switch>,
    /// Show the plan for review before any step runs.
    #[arg(long, value_enum)]
    plan_review: Option<Switch>,
    /// Plan first even with no tools (`off`, the default: a thread that offers no
    /// tools answers in one streamed call).
    #[arg(long, value_enum)]
    plan_first: Option<Switch>,
    /// The knowledge collections `search_knowledge` searches in this thread, by name,
    /// comma-separated (`""`: all of them).
    #[arg(long, value_delimiter = ',', value_name = "COLLECTIONS")]
    knowledge: Option<Vec<String>>,
    /// Always search first: the question is searched for in the thread's collections
    /// before planning, and every phase is given what was found.
    #[arg(long, value_enum)]
    search_first: Option<Switch>,
    /// LLM calls one step may make.
    #[arg(long, value_name = "N")]
    step_calls: Option<u32>,
    /// Tool calls one run may make.
    #[arg(long, value_name = "N")]
    tool_calls: Option<u32>,
    /// Tokens one run may use (0: no limit).
    #[arg(long, value_name = "TOKENS")]
    token_budget: Option<u64>,
    /// Seconds after which a run starts no more step work (0: no limit).
    #[arg(long, value_name = "SECS")]
    time_budget: Option<u32>,
    /// Longest answer of one model call, in tokens (0: the provider's default).
    #[arg(long, value_name = "TOKENS")]
    max_tokens: Option<u32>,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f64>,
    /// The model's context size in tokens (0: unset).
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<u32>,
    /// Past messages sent with each run.
    #[arg(long, value_name = "N")]
    history_limit: Option<u32>,
}

/// The built-in provider `asked` names (any case), or the list of those there are.
pub fn provider(stack: &Standard, asked: &str) -> anyhow::Result<String> {
    stack.provider_named(asked).with_context(|| {
        let known: Vec<String> = stack
            .providers
            .entries()
            .into_iter()
            .map(|e| e.name)
            .collect();
        format!(
            "there is no provider named {asked:?}; the providers are: {}",
            known.join(", ")
        )
    })
}

/// Print the thread's settings (or those new threads start with), changed first when
/// `args` asks for changes.
pub async fn config(stack: &Standard, args: Args) -> anyhow::Result<()> {
    let art = &stack.art;
    let mut config = match &args.thread {
        Some(thread) => {
            art.conversation.thread(thread).await?;
            art.state.load_thread_context(thread).await?.config
        }
        None => art.settings.get().await?.new_thread,
    };
    if apply(stack, &mut config, &args)? {
        let saved = match &args.thread {
            Some(thread) => stack.save_thread_config(thread, &config).await,
            None => art::standard::save_new_thread_defaults(art, &stack.providers, &config)
                .await
                .map(drop),
        };
        match saved {
            Ok(()) => sayln!("Saved."),
            Err(SettingsError::Invalid(problems)) => {
                let lines: Vec<String> = problems
                    .iter()
                    .map(|p| format!("  {}: {}", p.field, p.message))
                    .collect();
                bail!("nothing was saved:\n{}", lines.join("\n"));
            }
            Err(e) => return Err(e.into()),
        }
    }
    print(stack, &config);
    Ok(())
}

/// Apply the changes `args` asks for; whether there were any.
fn apply(stack: &Standard, config: &mut ThreadConfig, args: &Args) -> anyhow::Result<bool> {
    let before = serde_json::to_value(&*config)?;
    let provider = &mut config.provider_config;
    if let Some(asked) = &args.provider {
        provider.provider_name = self::provider(stack, asked)?;
    }
    if let Some(model) = &args.model {
        provider.model_id = model.trim().to_owned();
    }
    match args.base_url.as_deref().map(str::trim) {
        Some("") => {
            provider.adapter_options.remove(BASE_URL);
        }
        Some(url) => {
            provider
                .adapter_options
                .insert(BASE_URL.into(), Value::String(url.to_owned()));
        }
        None => {}
    }
    if let Some(images) = args.images {
        provider.set_sees_images(match images {
            Images::Auto => None,
            Images::Yes => Some(true),
            Images::No => Some(false),
        });
    }
    if let Some(text) = &args.system_prompt {
        config.system_prompt = Some(text.clone()).filter(|t| !t.trim().is_empty());
    }
    if let Some(tools) = &args.tools {
        config.enabled_tools = tools
            .iter()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect();
    }
    for policy in &args.policies {
        let (tool, word) = policy
            .split_once('=')
            .with_context(|| format!("--policy {policy:?}: write it as TOOL=runs|asks|never"))?;
        let tool = tool.trim().to_owned();
        // The words the app shows, or the policy's wire name (`auto`, `ask`, `deny`).
        let chosen = match word.trim().to_ascii_lowercase().as_str() {
            "default" => None,
            "runs" | "run" => Some(ToolPolicy::Auto),
            "asks" => Some(ToolPolicy::Ask),
            "never" => Some(ToolPolicy::Deny),
            other => Some(ToolPolicy::parse(other).with_context(|| {
                format!("--policy {policy:?}: {other:?} is not runs, asks, never or default")
            })?),
        };
        match chosen {
            Some(chosen) => config.tool_policies.insert(tool, chosen),
            None => config.tool_policies.remove(&tool),
        };
    }
    if let Some(offer) = args.tool_calling {
        config.tool_calling = match offer {
            Offer::Native => ToolCalling::Native,
            Offer::Text => ToolCalling::Text,
        };
    }
    if let Some(structured) = args.structured_plans {
        config.plain_plans = matches!(structured, Switch::Off);
    }
    if let Some(review) = args.plan_review {
        config.plan_checkpoint = matches!(review, Switch::On);
    }
    if let Some(first) = args.plan_first {
        config.plan_first = matches!(first, Switch::On);
    }
    if let Some(first) = args.search_first {
        config.search_first = matches!(first, Switch::On);
    }
    if let Some(names) = &args.knowledge {
        config.knowledge = names
            .iter()
            .filter(|n| !n.trim().is_empty())
            .map(|n| stack.knowledge.find(n).map(|c| c.id))
            .collect::<Result<_, _>>()?;
    }
    let limits = &mut config.limits;
    if let Some(n) = args.step_calls {
        limits.step_iterations = n;
    }
    if let Some(n) = args.tool_calls {
        limits.tool_calls = n;
    }
    if let Some(n) = args.token_budget {
        limits.tokens = Some(n).filter(|n| *n > 0);
    }
    if let Some(n) = args.time_budget {
        limits.seconds = Some(n).filter(|n| *n > 0);
    }
    if let Some(n) = args.max_tokens {
        config.generation.max_tokens = Some(n).filter(|n| *n > 0);
    }
    if let Some(t) = args.temperature {
        config.generation.temperature = Some(t);
    }
    if let Some(n) = args.context_window {
        config.context_window = Some(n).filter(|n| *n > 0);
    }
    if let Some(n) = args.history_limit {
        config.history_limit = n;
    }
    Ok(serde_json::to_value(&*config)? != before)
}

/// The settings, one a line.
fn print(stack: &Standard, config: &ThreadConfig) {
    let provider = &config.provider_config;
    let or_none = |s: &str| {
        if s.is_empty() {
            "(none)".to_owned()
        } else {
            s.to_owned()
        }
    };
    sayln!("provider        {}", or_none(&provider.provider_name));
    sayln!("model           {}", or_none(&provider.model_id));
    let base = provider
        .adapter_options
        .get(BASE_URL)
        .and_then(Value::as_str)
        .unwrap_or("(the provider's own)");
    sayln!("base URL        {base}");
    let images = match provider.sees_images() {
        Some(true) => "seen (set)",
        Some(false) => "not seen: questions with images are refused (set)",
        None => "as the model says",
    };
    sayln!("images          {images}");
    let prompt = match (&config.system_prompt, &config.prompt_id) {
        (Some(text), _) => format!("{:?}", text.chars().take(70).collect::<String>()),
        (None, Some(id)) => format!("library prompt {id}"),
        (None, None) => "(the app's)".to_owned(),
    };
    sayln!("system prompt   {prompt}");
    let tools = if config.enabled_tools.is_empty() {
        "(none)".to_owned()
    } else {
        config
            .enabled_tools
            .iter()
            .map(|t| match config.tool_policies.get(t) {
                Some(ToolPolicy::Auto) => format!("{t} (runs)"),
                Some(ToolPolicy::Ask) => format!("{t} (asks first)"),
                Some(ToolPolicy::Deny) => format!("{t} (never)"),
                None => t.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    sayln!("tools           {tools}");
    let offer = match config.tool_calling {
        ToolCalling::Native => "native",
        ToolCalling::Text => "text",
    };
    sayln!("tool calling    {offer}");
    let on = |b: bool| if b { "on" } else { "off" };
    sayln!("plan review     {}", on(config.plan_checkpoint));
    let planning = if config.answers_directly() {
        "no: answers in one call (no tools)"
    } else if config.plan_first && config.enabled_tools.is_empty() {
        "yes (plan first is on)"
    } else {
        "yes"
    };
    sayln!("plans           {planning}");
    sayln!("plan schema     {}", on(!config.plain_plans));
    let knowledge = if config.knowledge.is_empty() {
        "all collections".to_owned()
    } else {
        let all = stack.knowledge.collections().unwrap_or_default();
        config
            .knowledge
            .iter()
            .map(|id| {
                all.iter()
                    .find(|c| c.id == *id)
                    .map_or_else(|| format!("{id} (deleted)"), |c| c.name.clone())
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    sayln!("knowledge       {knowledge}");
    sayln!("search first    {}", on(config.search_first));
    let limits = &config.limits;
    let or_no_limit = |v: Option<String>| v.unwrap_or_else(|| "no limit".to_owned());
    sayln!("step calls      {}", limits.step_iterations);
    sayln!("tool calls      {}", limits.tool_calls);
    sayln!(
        "token budget    {}",
        or_no_limit(limits.tokens.map(|t| t.to_string()))
    );
    sayln!(
        "time budget     {}",
        or_no_limit(limits.seconds.map(|s| format!("{s} s")))
    );
    let generation = &config.generation;
    sayln!(
        "max tokens      {}",
        generation
            .max_tokens
            .map_or("(the provider's default)".to_owned(), |t| t.to_string())
    );
    sayln!(
        "temperature     {}",
        generation
            .temperature
            .map_or("(the model's default)".to_owned(), |t| t.to_string())
    );
    sayln!(
        "context window  {}",
        config
            .context_window
            .map_or("(not set)".to_owned(), |t| format!("{t} tokens"))
    );
    sayln!("history limit   {} messages", config.history_limit);
}
