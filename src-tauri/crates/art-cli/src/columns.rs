//! `art compare`: one question to 2–4 models at once in a thread, each answer a run on
//! its own branch; the columns are printed one after another when all have ended (plan,
//! tool calls, answer or why it failed), then a table of their figures. Ctrl-C stops
//! every column.

use std::process::ExitCode;

use art::agent::pes::{Column, MAX_COLUMNS, MIN_COLUMNS, queued_behind};
use art::reasoning::provider::ProviderSource as _;
use art::standard::Standard;
use art_types::record::diff::RunFigures;
use art_types::record::view::RunView;
use art_types::{AgentProps, ProviderConfig, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::compare::provider_model;
use crate::out::{noteln, sayln};

/// Options of `art compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The thread to ask in (see `art threads`).
    #[arg(long, value_name = "ID")]
    thread: String,
    /// A model to ask, as PROVIDER:MODEL (the model's own colons stay), or at a server of
    /// its own as PROVIDER@URL:MODEL (openai@http://127.0.0.1:8080/v1:smollm2); 2 to 4
    /// of them. Another model of the thread's provider, without a URL, is reached where
    /// the thread reaches it.
    #[arg(long = "model", value_name = "PROVIDER:MODEL", required = true)]
    models: Vec<String>,
    /// The question.
    question: String,
}

/// Ask, wait for every column, print them; 0 when every column answered, 1 when one
/// failed, 130 when stopped.
pub async fn compare(stack: &Standard, args: CompareArgs) -> anyhow::Result<ExitCode> {
    let art = &stack.art;
    if !(MIN_COLUMNS..=MAX_COLUMNS).contains(&args.models.len()) {
        anyhow::bail!(
            "give {MIN_COLUMNS} to {MAX_COLUMNS} models with --model, not {}",
            args.models.len()
        );
    }
    let providers: Vec<ProviderConfig> = args
        .models
        .iter()
        .map(|asked| provider_model(stack, asked))
        .collect::<anyhow::Result<_>>()?;
    let stop = CancellationToken::new();
    let columns: Vec<Column> = providers
        .iter()
        .map(|provider| Column {
            trace_id: art::clock::new_id(),
            provider: provider.clone(),
            cancel: stop.child_token(),
            // Nothing is asked while the columns run: a call that asks first is refused.
            can_ask: false,
        })
        .collect();
    let traces: Vec<String> = columns.iter().map(|c| c.trace_id.clone()).collect();
    noteln!(
        "art: asking {} models at once in thread {} (each on a branch of its own; the \
         thread shows the first's)",
        columns.len(),
        args.thread
    );
    let names: Vec<String> = providers.iter().map(label).collect();
    let refs: Vec<&ProviderConfig> = providers.iter().collect();
    let is_local = |name: &str| stack.providers.is_local(name);
    for (i, before) in queued_behind(&refs, is_local).into_iter().enumerate() {
        if let Some(before) = before {
            noteln!(
                "art: {} waits for {} (this machine runs one local model at a time)",
                names[i],
                names[before]
            );
        }
    }
    let props = AgentProps {
        query: args.question,
        thread_id: args.thread.clone(),
        trace_id: Some(art::clock::new_id()),
        options: Default::default(),
        attachments: Vec::new(),
    };
    let comparing = art.compare(props, columns, &|_, _| {});
    tokio::pin!(comparing);
    let mut stopped = false;
    let ended = loop {
        tokio::select! {
            ended = &mut comparing => break ended?,
            _ = tokio::signal::ctrl_c(), if !stopped => {
                noteln!("art: stopping every column…");
                stop.cancel();
                stopped = true;
            }
        }
    };
    let mut figures = Vec::with_capacity(ended.len());
    for (i, (outcome, trace)) in ended.iter().zip(&traces).enumerate() {
        sayln!("── {}. {} ──", i + 1, names[i]);
        match (outcome, art::compare::run(art, trace).await) {
            (Ok(_), Ok((view, _))) => {
                print_column(&view);
                figures.push(RunFigures::of(&view));
            }
            (Err(e), _) => {
                sayln!("did not run: {e}");
                figures.push(RunFigures {
                    trace_id: trace.clone(),
                    ..RunFigures::default()
                });
            }
            (Ok(out), Err(e)) => {
                sayln!(
                    "{}\n(its record could not be read: {e})",
                    out.response.content
                );
                figures.push(RunFigures {
                    trace_id: trace.clone(),
                    status: Some(out.metadata.status),
                    ..RunFigures::default()
                });
            }
        }
        sayln!();
    }
    print_table(&names, &figures);
    let failed = figures
        .iter()
        .any(|f| !matches!(f.status, Some(RunStatus::Success | RunStatus::Partial)));
    Ok(if stopped {
        ExitCode::from(130)
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `provider:model`, or `provider@url:model` for a column with a server of its own.
fn label(provider: &ProviderConfig) -> String {
    art_types::ModelSpec {
        provider: provider.provider_name.clone(),
        base_url: provider
            .adapter_options
            .get(art::providers::options::BASE_URL)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        model: provider.model_id.clone(),
    }
    .to_string()
}

/// A column: its plan, tool calls and answer (or why it has none).
fn print_column(view: &RunView) {
    if let Some(plan) = &view.plan {
        for (n, step) in plan.steps.iter().enumerate() {
            sayln!("  {}. {}", n + 1, step.description);
        }
    }
    for tool in &view.tools {
        let outcome = match (&tool.error, &tool.output) {
            (Some(error), _) => format!("failed: {error}"),
            (None, Some(output)) => output.to_string(),
            (None, None) => "no result".into(),
        };
        sayln!(
            "  ⚙ {} {} → {}",
            tool.tool_name,
            tool.arguments,
            clip(&outcome)
        );
    }
    if !view.answer.is_empty() {
        sayln!("{}", view.answer.trim_end());
    }
    if let Some((code, message)) = &view.error {
        sayln!("✗ {}: {message}", code.as_str());
    }
}

/// At most 200 characters of `text`.
fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The columns' figures side by side.
fn print_table(names: &[String], figures: &[RunFigures]) {
    let seconds =
        |ms: Option<u64>| ms.map_or_else(|| "—".into(), |ms| format!("{:.2} s", ms as f64 / 1e3));
    let width = names.iter().map(String::len).max().unwrap_or(5).max(5);
    sayln!(
        "{:<3}{:<width$}  {:<8} {:>11} {:>9} {:>15} {:>9} {:>9}  RUN",
        "#",
        "MODEL",
        "ENDED",
        "FIRST TOKEN",
        "TIME",
        "TOKENS IN/OUT",
        "LLM/TOOL",
        "COST"
    );
    for (i, (name, f)) in names.iter().zip(figures).enumerate() {
        let ended = f
            .status
            .map_or_else(|| "—".into(), |s| format!("{s:?}").to_lowercase());
        let cost = f
            .cost_nanos
            .map_or_else(|| "—".into(), |n| format!("${:.4}", n as f64 / 1e9));
        sayln!(
            "{:<3}{name:<width$}  {ended:<8} {:>11} {:>9} {:>15} {:>9} {cost:>9}  {}",
            i + 1,
            seconds(f.first_token_ms),
            seconds(f.duration_ms),
            format!("{} / {}", f.input_tokens, f.output_tokens),
            format!("{} / {}", f.llm_calls, f.tool_calls),
            f.trace_id
        );
    }
}
