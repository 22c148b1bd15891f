//! `art`: ART Workbench without the window, over the same data directory as the app.
//!
//! ```text
//! art threads                                   list threads
//! art run --thread ID "question"                run the agent, print plan, tools, answer
//! art export --format otlp --thread ID -o FILE  export traces (jsonl | otlp | markdown)
//! art import FILE                               import a native (jsonl) trace file
//! art diff RUN_A RUN_B [--format text|md|json]  two runs compared: plans, calls, answers
//! art replay --trace ID --model P:M [--recorded] a run asked again, on another model
//! art retry --thread ID                         ask the last failed question again
//! art drop --thread ID                          remove the last failed question
//! art branches --thread ID                      the active branch and the others
//! art switch --thread ID --message ID           show the branch through a message
//! art fork --thread ID --message ID             a new thread with the history up to it
//! art usage [--by model|provider|thread|day] [--since DATE]
//!                                               tokens, time and cost of runs
//! art price list | set | remove                 prices per model, for costs
//! art mcp list | add | import | remove | enable | disable | tools | call
//!                                               MCP servers and their tools
//! ```

mod answer;
mod branches;
mod catalog;
mod columns;
mod compare;
mod config;
mod elicit;
mod export;
mod follow;
mod kb;
mod logging;
mod mcp;
mod models;
mod out;
mod printer;
mod run;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use art::attachments::{Attachments, BlobStore};
use art::paths::DataDir;
use art::standard::Standard;
use art_types::approval::ApprovalDecision;
use clap::{Parser, Subcommand};
use out::{noteln, sayln};

/// ART Workbench on the command line: the same threads, agent and traces as the app.
#[derive(Parser)]
#[command(name = "art", version, about, long_about = None)]
struct Cli {
    /// Data directory (default: the app's, or ART_WORKBENCH_DATA_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Log more on stderr: `-v` information, `-vv` debug (default: warnings only;
    /// ART_WORKBENCH_LOG, as in the app, takes precedence).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List threads, most recently active first.
    Threads,
    /// Ask the agent in a thread; prints the plan, tool calls and the streamed answer.
    ///
    /// Exit status: 0 answered, 3 answered but a tool or step failed, 4 waiting for a
    /// decision on a tool call (see `art approve`), 1 failed, 130 stopped (Ctrl-C).
    Run(run::Args),
    /// Export threads or runs as native JSONL, OpenTelemetry (OTLP JSON) or Markdown.
    Export(export::Args),
    /// Two recorded runs compared, of one thread or two: the plans step by step, the
    /// tool calls aligned with the arguments that differ, the answers word by word,
    /// and their figures (tokens, time, cost, calls).
    Diff {
        /// The first run's id (its trace id: the Trace panel, `art export`).
        a: String,
        /// The second run's id.
        b: String,
        /// Text (coloured on a terminal, `-` / `+` lines when piped), Markdown or JSON.
        #[arg(long, value_enum, default_value = "text")]
        format: compare::DiffFormat,
    },
    /// A recorded run asked again on a branch beside it, with another model, system
    /// prompt or tool set: tools run again (approvals as usual), or with --recorded
    /// each call the run made is answered with its recorded result and nothing runs.
    /// Then `art diff ORIGINAL REPLAY` shows what changed.
    ///
    /// Exit status as for `art run`.
    Replay(compare::ReplayArgs),
    /// One question to 2–4 models at once in a thread, each answer a run on a branch of
    /// its own (the thread shows the first's; `art branches` switches): the columns one
    /// after another once all have ended — plan, tool calls, answer —, then their
    /// figures (time to first token, time, tokens, calls, cost). Local models answer one
    /// at a time. `art diff RUN_A RUN_B` compares two columns in depth.
    ///
    /// Exit status: 0 every column answered, 1 one failed, 130 stopped (Ctrl-C).
    Compare(columns::CompareArgs),
    /// Import a native JSONL trace file (checked whole first: a bad line changes nothing).
    Import {
        /// The file written by `art export --format jsonl`.
        file: PathBuf,
    },
    /// Ask a thread's last failed question again (the failed one is replaced).
    Retry {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
    },
    /// Remove a thread's last failed question (until then it is kept, shown with its
    /// error, and left out of what later questions send to the model).
    #[command(name = "drop")]
    DropFailed {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
    },
    /// Let the tool call a thread's run waits on run, and follow the run to its end.
    Approve {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
        /// Run it with these arguments instead (a JSON object, checked against the
        /// tool's schema).
        #[arg(long, value_name = "JSON")]
        arguments: Option<String>,
        /// Let this tool run without asking in this thread from now on.
        #[arg(long)]
        always: bool,
    },
    /// Do not let the tool call a thread's run waits on run; the run goes on without it.
    Deny {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
        /// Why, for the model (it reads this as the tool's result).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Answer an MCP server's question that a run waits on in another process (the
    /// app, or `art run` without a terminal): `art answer accept name=Ada age=36`,
    /// `art answer decline`, `art answer cancel`. Values are checked against the
    /// question first; prints what the server was sent.
    Answer(answer::Args),
    /// End a thread's run that waits for a decision.
    Stop {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
    },
    /// The thread's active branch, one message a line, with the other versions of each
    /// message that has some (edit & resend and regenerate keep the old ones).
    Branches {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
    },
    /// Show the branch through a message (and ask the next question on it).
    Switch {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
        /// A message of it, on any branch (see `art branches`).
        #[arg(long, value_name = "ID")]
        message: String,
    },
    /// A new thread with the history up to a message and the same settings; prints its id.
    Fork {
        /// The thread (see `art threads`).
        #[arg(long, value_name = "ID")]
        thread: String,
        /// The message the new thread's history ends with.
        #[arg(long, value_name = "ID")]
        message: String,
    },
    /// Tokens in, out and thinking, time and cost of the recorded runs, summed per
    /// model, provider, thread or day.
    Usage {
        /// How to group the runs.
        #[arg(long, value_enum, default_value = "model")]
        by: usage::By,
        /// Only runs from this day on (YYYY-MM-DD, local time).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
    },
    /// Prices per model (US dollars per million tokens), for the cost of runs whose
    /// provider does not report one.
    #[command(subcommand)]
    Price(usage::Price),
    /// MCP servers: add, import, list, remove, enable, disable, and try their tools.
    #[command(subcommand)]
    Mcp(mcp::Command),
    /// Knowledge collections the agent searches (`search_knowledge`): create, list, add
    /// files and folders, status, search, remove, reindex.
    #[command(subcommand)]
    Kb(kb::Command),
    /// Ollama's models: list (with what each can do), show, pull with a progress bar,
    /// rm, ps (loaded now), unload.
    Models(models::Args),
    /// A thread's settings: printed, or changed (`--provider`, `--model`, `--tools`,
    /// `--policy TOOL=asks`, `--plan-review on`, …) and checked as the app checks them.
    Config(config::Args),
}

/// The data directory, made ready, and its attachment store: `--data-dir` (a relative
/// one taken from the current folder), else `ART_WORKBENCH_DATA_DIR` as the app reads
/// it, else the app's own.
fn data_dir(data_dir: Option<PathBuf>) -> anyhow::Result<(DataDir, Arc<Attachments>)> {
    let named = data_dir
        .as_ref()
        .map(|given| format!("--data-dir {:?}", given.display().to_string()));
    let dir = DataDir::resolve_given(data_dir)
        .with_context(|| named.unwrap_or_else(|| "no data directory".into()))?;
    dir.ensure().context("cannot use the data directory")?;
    let attachments = Attachments::open(dir.attachments_dir(), BlobStore::DEFAULT_LIMIT)
        .with_context(|| format!("in {}", dir.attachments_dir().display()))?;
    Ok((dir, Arc::new(attachments)))
}

fn open(dir: &DataDir, attachments: Arc<Attachments>) -> anyhow::Result<Standard> {
    let stack = Standard::open_with(dir, attachments)
        .with_context(|| format!("in {}", dir.root().display()))?;
    // A server's question mid-call is asked on the terminal (declined at the end of
    // standard input).
    stack
        .art
        .mcp
        .set_elicitor(std::sync::Arc::new(elicit::Terminal::default()));
    Ok(stack)
}

async fn threads(stack: &Standard) -> anyhow::Result<()> {
    let threads = stack.art.conversation.list_threads().await?;
    if threads.is_empty() {
        sayln!(
            "No threads yet. Start one in the app, or: art run --new TITLE --provider ollama \
             --model llama3.2 \"question\""
        );
    }
    for t in threads {
        let fork = t
            .forked_from
            .map(|f| format!("  (forked from {} at {})", f.thread_id, f.message_id))
            .unwrap_or_default();
        let config = stack
            .art
            .state
            .load_thread_context(&t.thread_id)
            .await?
            .config;
        let provider = &config.provider_config;
        let model = match (provider.provider_name.as_str(), provider.model_id.as_str()) {
            ("", _) => "no model chosen".to_owned(),
            (name, "") => format!("{name}, no model"),
            (name, model) => format!("{name}/{model}"),
        };
        let waits = match stack.art.waiting(&t.thread_id).await? {
            Some(w) => match &w.asked {
                Some(asked) => format!(
                    "  [waits for your answer to {}'s question: art answer]",
                    asked.question.server
                ),
                None => format!("  [waits for your decision on {}]", w.call.tool_name),
            },
            None => String::new(),
        };
        sayln!(
            "{}  {:>5} messages  {}  ({model}){fork}{waits}",
            t.thread_id,
            t.message_count,
            t.title
        );
    }
    Ok(())
}

async fn main_async(mut cli: Cli) -> anyhow::Result<ExitCode> {
    let (dir, attachments) = data_dir(cli.data_dir.take())?;
    // `art run --attach`: the files are read, checked and stored on a thread of their
    // own while the rest opens (a photo's decoding is most of what it adds to a run).
    if let Command::Run(args) = &mut cli.command {
        args.start_attaching(&attachments);
    }
    let stack = open(&dir, attachments)?;
    // Answers a killed process left streaming are marked interrupted first, and the MCP
    // servers it left running end.
    stack.art.mcp.end_leftovers().await;
    let recovered = stack.art.conversation.recover_interrupted().await?;
    if recovered > 0 {
        noteln!("art: {recovered} answer(s) cut off by an earlier crash marked interrupted");
    }
    let outcome = match cli.command {
        Command::Threads => threads(&stack).await.map(|()| ExitCode::SUCCESS),
        Command::Run(args) => run::run(&stack, args).await,
        Command::Export(args) => export::export(&stack, args)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Diff { a, b, format } => compare::diff(&stack, &a, &b, format)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Replay(args) => compare::replay(&stack, args).await,
        Command::Compare(args) => columns::compare(&stack, args).await,
        Command::Import { file } => export::import(&stack, &file)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Retry { thread } => run::retry(&stack, thread).await,
        Command::DropFailed { thread } => run::drop_failed(&stack, &thread)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Mcp(command) => mcp::mcp(&stack, command).await,
        Command::Answer(args) => answer::answer(&stack, args).await,
        Command::Kb(command) => {
            let providers = stack.provider_models();
            let models = kb::Models {
                home: &stack.embedder,
                providers: &providers,
            };
            kb::kb(&stack.knowledge, &models, command).map(|()| ExitCode::SUCCESS)
        }
        Command::Models(args) => models::models(&stack, args)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Config(args) => config::config(&stack, args)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Usage { by, since } => usage::usage(&stack, by, since.as_deref())
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Price(command) => usage::price(&stack, command)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Branches { thread } => branches::list(&stack, &thread)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Switch { thread, message } => branches::switch(&stack, &thread, &message)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Fork { thread, message } => branches::fork(&stack, &thread, &message)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Approve {
            thread,
            arguments,
            always,
        } => match arguments.as_deref().map(serde_json::from_str).transpose() {
            Ok(arguments) => {
                let decision = ApprovalDecision::Approve { arguments, always };
                follow::decided(&stack, &thread, decision).await
            }
            Err(e) => Err(anyhow::anyhow!("--arguments is not JSON: {e}")),
        },
        Command::Deny { thread, reason } => {
            follow::decided(&stack, &thread, ApprovalDecision::Deny { reason }).await
        }
        Command::Stop { thread } => match stack.art.stop_waiting(&thread).await {
            Ok(Some(_)) => {
                noteln!("art: the run is stopped");
                Ok(ExitCode::SUCCESS)
            }
            Ok(None) => Err(anyhow::anyhow!(
                "no run of thread {thread} waits for a decision"
            )),
            Err(e) => Err(e.into()),
        },
    };
    // The MCP servers a run started end with the process.
    stack.art.mcp.shutdown().await;
    outcome
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose);
    // A reader's panic on a damaged file is a refusal, logged, not a message on stderr.
    art::panics::quiet_caught();
    // The trust store is read on the other core while the data directory opens.
    art::net::warm();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            noteln!("art: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(main_async(cli)) {
        Ok(code) => code,
        Err(e) => {
            noteln!("art: {}", reason(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes in one line, `outer: cause: …`, each cause said once: many of
/// the framework's errors already hold their cause in their own message.
fn reason(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::reason;

    #[test]
    fn an_error_says_each_cause_once() {
        let problem = art_types::knowledge::KnowledgeProblem::Database("database is locked".into());
        let opened: anyhow::Error = art::standard::OpenError::Knowledge(problem).into();
        let error = opened.context("in /tmp/data");
        assert_eq!(
            reason(&error),
            "in /tmp/data: cannot open the knowledge collections: the knowledge database \
             failed: database is locked"
        );
        let plain = anyhow::anyhow!("no such thread").context("cannot continue");
        assert_eq!(reason(&plain), "cannot continue: no such thread");
    }
}
