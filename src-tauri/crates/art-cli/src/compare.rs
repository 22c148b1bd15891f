//! `art diff`: two recorded runs compared — plans, tool calls, answers, figures — as
//! Markdown or JSON on standard output; `art replay`: a recorded run asked again.

use std::process::ExitCode;

use anyhow::Context as _;
use art::standard::Standard;
use art_types::{AgentOptions, AgentProps, ProviderConfig, Replay, ReplayMode, Unmatched};
use clap::ValueEnum;

use crate::follow;
use crate::out::{noteln, sayln};
use crate::printer::Printer;

/// What `art diff` prints.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum DiffFormat {
    /// For reading: on a terminal what only one run has in colour, piped the answers as
    /// `-` / `+` lines (no markup either way).
    #[default]
    Text,
    /// Markdown: a figures table, the plans and calls marked, the answers' word diff
    /// with `<del>` / `<ins>`.
    Md,
    /// JSON: the whole diff, as the app exports it.
    Json,
}

/// Print the diff of runs `a` and `b`.
pub async fn diff(stack: &Standard, a: &str, b: &str, format: DiffFormat) -> anyhow::Result<()> {
    let diff = art::compare::diff(&stack.art, a, b).await?;
    match format {
        DiffFormat::Text => {
            let colour = std::io::IsTerminal::is_terminal(&std::io::stdout())
                && std::env::var_os("NO_COLOR").is_none();
            sayln!("{}", diff.text(colour).trim_end());
        }
        DiffFormat::Md => sayln!("{}", diff.markdown().trim_end()),
        DiffFormat::Json => sayln!("{}", serde_json::to_string_pretty(&diff)?),
    }
    Ok(())
}

/// Options of `art replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The run to replay (its id: `art run` prints it last; the Trace panel shows it).
    #[arg(long = "trace", value_name = "RUN_ID")]
    trace: String,
    /// The model to replay it with, as PROVIDER:MODEL (e.g. `ollama:llama3.2:1b`; the
    /// model's own colons stay); default: the thread's.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    model: Option<String>,
    /// Base URL of the provider (with --model; default: the thread's, when it is the
    /// thread's provider).
    #[arg(long, requires = "model", value_name = "URL")]
    base_url: Option<String>,
    /// A system prompt for the replay instead of the thread's.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Tools for the replay instead of the thread's, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
    /// Answer each tool call that has the same tool and arguments as one the run made
    /// with that call's recorded result; nothing runs.
    #[arg(long)]
    recorded: bool,
    /// With --recorded, what a call the run did not make gets: `not-recorded` (an
    /// error result the model reads; nothing runs) or `ask` (it runs once approved).
    #[arg(
        long,
        value_enum,
        default_value = "not-recorded",
        requires = "recorded"
    )]
    unmatched: UnmatchedArg,
    /// Also print the model's thinking.
    #[arg(long)]
    thinking: bool,
    /// Decide for every tool call that asks first: run them all, or none.
    #[arg(long, value_enum, value_name = "WHICH")]
    approve: Option<follow::Approve>,
}

/// `--unmatched`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UnmatchedArg {
    /// An error result, "not recorded".
    NotRecorded,
    /// It runs once approved.
    Ask,
}

/// A `PROVIDER:MODEL` (or `PROVIDER@URL:MODEL`) argument as the provider (checked),
/// model and server it names.
pub(crate) fn provider_model(stack: &Standard, asked: &str) -> anyhow::Result<ProviderConfig> {
    let spec = art_types::ModelSpec::parse(asked).with_context(|| {
        format!(
            "say the model as PROVIDER:MODEL (e.g. ollama:llama3.2), or with its server as \
             PROVIDER@URL:MODEL (e.g. openai@http://127.0.0.1:8080/v1:smollm2), not {asked:?}"
        )
    })?;
    let mut adapter_options = serde_json::Map::new();
    if let Some(url) = spec.base_url {
        adapter_options.insert(
            art::providers::options::BASE_URL.into(),
            serde_json::Value::String(url),
        );
    }
    Ok(ProviderConfig {
        provider_name: crate::config::provider(stack, &spec.provider)?,
        model_id: spec.model,
        adapter_options,
    })
}

/// Replay a run on a new branch beside it; the exit status says how the replay ended.
pub async fn replay(stack: &Standard, args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let art = &stack.art;
    let mut provider_config = args
        .model
        .as_deref()
        .map(|asked| provider_model(stack, asked))
        .transpose()?;
    let thread_id = art::compare::thread_of(art, &args.trace).await?;
    // (Without --base-url, another model of the thread's provider is reached where the
    // thread reaches it: the agent's rule.)
    if let (Some(provider), Some(url)) = (&mut provider_config, &args.base_url) {
        provider.adapter_options.insert(
            art::providers::options::BASE_URL.into(),
            serde_json::Value::String(url.clone()),
        );
    }
    if let Some(tools) = &args.tools {
        // MCP tools are known once their servers run.
        art.mcp.start_for(tools).await;
    }
    let offered = match &args.tools {
        Some(tools) => tools.clone(),
        None => {
            art.state
                .load_thread_context(&thread_id)
                .await?
                .config
                .enabled_tools
        }
    };
    let question = art.branch_to_replay(&thread_id, &args.trace).await?;
    for tool in art::compare::missing_tools(art, &thread_id, &args.trace, &offered).await? {
        if args.recorded {
            noteln!(
                "art: `{tool}` (called by the run) is not offered to the model now: its calls \
                 are answered from the record if the model makes them"
            );
        } else {
            noteln!(
                "art: `{tool}` (called by the run) is not available now: calls to it fail \
                 (not enabled, or no such tool)"
            );
        }
    }
    let mode = if args.recorded {
        ReplayMode::Recorded
    } else {
        ReplayMode::Live
    };
    let unmatched = match args.unmatched {
        UnmatchedArg::NotRecorded => Unmatched::NotRecorded,
        UnmatchedArg::Ask => Unmatched::Ask,
    };
    noteln!(
        "art: replaying run {} of thread {thread_id} on a new branch ({})",
        args.trace,
        if args.recorded {
            "tools answered from the record"
        } else {
            "tools run again"
        }
    );
    let props = AgentProps {
        query: question.content,
        thread_id: thread_id.clone(),
        trace_id: Some(art::clock::new_id()),
        options: AgentOptions {
            provider_config,
            system_prompt: args.system,
            tools: args.tools,
            replay: Some(Replay {
                of: args.trace,
                mode,
                unmatched,
            }),
            ..AgentOptions::default()
        },
        attachments: question.attachments,
    };
    let trace = props.trace_id.clone().unwrap_or_default();
    let printer = Printer::new(&thread_id, &trace, args.thinking);
    follow::follow(stack, printer, args.approve, follow::Work::Ask(props)).await
}
