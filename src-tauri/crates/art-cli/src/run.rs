//! `art run`: one agent run in a thread, printed as it happens.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, bail};
use art::attachments::Attachments;
use art::providers::options::BASE_URL;
use art::standard::Standard;
use art_types::{
    AgentOptions, AgentProps, Attachment, AttachmentProblem, ConversationMessage, ProviderConfig,
};
use serde_json::Value;

use crate::follow;
use crate::out::noteln;
use crate::printer::Printer;

/// Options of `art run`.
#[derive(clap::Args)]
pub struct Args {
    /// The thread to ask in (see `art threads`).
    #[arg(
        long,
        value_name = "ID",
        conflicts_with = "new",
        required_unless_present = "new"
    )]
    thread: Option<String>,
    /// Start a new thread with this title instead, with the settings new threads start
    /// with (`art config --new-threads`; the app's default model).
    #[arg(long, value_name = "TITLE")]
    new: Option<String>,
    /// Provider for this run (default: the thread's; with --new, saved as the new
    /// thread's), e.g. ollama, openai.
    #[arg(long, requires = "model")]
    provider: Option<String>,
    /// Model for this run (with --provider).
    #[arg(long, requires = "provider")]
    model: Option<String>,
    /// Base URL of the provider for this run (with --provider).
    #[arg(long, requires = "provider", value_name = "URL")]
    base_url: Option<String>,
    /// Tools the thread may use, comma-separated, e.g. `calculator,current_time`
    /// (saved in the thread's settings).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
    /// The model's context size in tokens (saved in the thread's settings): older
    /// messages that would not fit are left out, and the run says so.
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<u32>,
    /// Ask on a new branch beside this message of the thread (edit & resend; the same
    /// question again answers it again): it and what followed it stay (`art branches`).
    #[arg(long, value_name = "MESSAGE_ID", requires = "thread")]
    edit: Option<String>,
    /// Also print the model's thinking.
    #[arg(long)]
    thinking: bool,
    /// Decide for every tool call that asks first: run them all, or none (default: ask
    /// on the terminal; without one, the run waits for `art approve` or `art deny`).
    #[arg(long, value_enum, value_name = "WHICH")]
    approve: Option<follow::Approve>,
    /// A file for the model to see with the question (repeat for several): an image
    /// (PNG, JPEG, WebP, GIF) or a document (text, Markdown, code, HTML, PDF, DOCX).
    #[arg(long = "attach", value_name = "FILE")]
    attach: Vec<PathBuf>,
    /// Attachments already in the store (a question asked again keeps its files).
    #[arg(skip)]
    attached: Vec<Attachment>,
    /// The `--attach` files on their way into the store ([`Args::start_attaching`]).
    #[arg(skip)]
    attaching: Option<Attaching>,
    /// The question.
    question: String,
}

impl Args {
    /// `question` asked again in `thread`, on the thread's own settings.
    fn again(thread: String, question: String, attached: Vec<Attachment>) -> Self {
        Self {
            thread: Some(thread),
            new: None,
            provider: None,
            model: None,
            base_url: None,
            tools: None,
            context_window: None,
            edit: None,
            thinking: false,
            approve: None,
            attach: Vec::new(),
            attached,
            attaching: None,
            question,
        }
    }

    /// Start reading the `--attach` files into `store` on a thread of their own, so that
    /// the run finds them done, or nearly, when it needs them.
    pub fn start_attaching(&mut self, store: &Arc<Attachments>) {
        if !self.attach.is_empty() {
            let files = std::mem::take(&mut self.attach);
            self.attaching = Some(Attaching::start(Arc::clone(store), files));
        }
    }
}

/// Files being read, checked and stored on a thread of their own.
struct Attaching(Option<JoinHandle<Result<Vec<Attachment>, AttachmentProblem>>>);

impl Attaching {
    fn start(store: Arc<Attachments>, files: Vec<PathBuf>) -> Self {
        let work = move || files.iter().map(|path| store.add_file(path)).collect();
        Self(Some(std::thread::spawn(work)))
    }

    /// Wait for the files: all attached, or the first refused (the others' bytes may
    /// be stored, referred to by nothing, until the store's clean-up).
    fn finish(mut self) -> anyhow::Result<Vec<Attachment>> {
        let handle = self.0.take().context("the files were already waited for")?;
        match handle.join() {
            Ok(attached) => Ok(attached?),
            Err(_) => bail!("reading the attached files stopped unexpectedly"),
        }
    }
}

impl Drop for Attaching {
    /// A run that fails before it needs the files still lets their writing end, so that
    /// the process leaves no file half-written (blocking, on that way out only).
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            let _ = handle.join();
        }
    }
}

/// The thread's last failed question and the run it belongs to.
async fn failed_question(
    stack: &Standard,
    thread: &str,
) -> anyhow::Result<(ConversationMessage, String)> {
    let Some(question) = stack.art.conversation.latest_failed(thread).await? else {
        bail!("thread {thread} has no failed question");
    };
    let trace = question.trace_id().unwrap_or_default().to_owned();
    Ok((question, trace))
}

/// `art retry`: the failed question goes, and is asked again as the thread's newest.
pub async fn retry(stack: &Standard, thread: String) -> anyhow::Result<ExitCode> {
    let (question, trace) = failed_question(stack, &thread).await?;
    stack.art.conversation.remove_run(&thread, &trace).await?;
    run(
        stack,
        Args::again(thread, question.content, question.attachments),
    )
    .await
}

/// `art drop`: the failed question goes, with whatever its run stored.
pub async fn drop_failed(stack: &Standard, thread: &str) -> anyhow::Result<()> {
    let (question, trace) = failed_question(stack, thread).await?;
    let removed = stack.art.conversation.remove_run(thread, &trace).await?;
    let preview: String = question.content.chars().take(60).collect();
    noteln!("art: removed the failed question {preview:?} ({removed} message(s))");
    Ok(())
}

/// Save a thread's provider (a new thread's) and enabled tools (checked by name).
async fn save_settings(
    stack: &Standard,
    thread_id: &str,
    provider: Option<&ProviderConfig>,
    tools: Option<Vec<String>>,
    context_window: Option<u32>,
) -> anyhow::Result<()> {
    let art = &stack.art;
    let mut config = art.state.load_thread_context(thread_id).await?.config;
    if let Some(window) = context_window {
        let range = art::context::validate::CONTEXT_WINDOW;
        if !range.contains(&window) {
            bail!(
                "the context window is {} to {} tokens, not {window}",
                range.start(),
                range.end()
            );
        }
        config.context_window = Some(window);
    }
    if let Some(provider) = provider {
        config.provider_config = provider.clone();
    }
    if let Some(tools) = tools {
        // MCP tools are known once their servers run.
        stack.art.mcp.start_for(&tools).await;
        let known: Vec<String> = art.tools.list().into_iter().map(|t| t.name).collect();
        if let Some(unknown) = tools.iter().find(|t| !known.contains(t))
            && let Some(server) = art_types::mcp::server_of(unknown)
            && let Ok(status) = stack.art.mcp.status(server).await
        {
            bail!(
                "{unknown:?} is not available: MCP server `{server}` is {}",
                match status.state {
                    art_types::mcp::McpServerState::Failed { reason, .. } =>
                        format!("failed ({reason})"),
                    art_types::mcp::McpServerState::Disabled => "disabled".to_owned(),
                    art_types::mcp::McpServerState::SignInNeeded { .. } =>
                        format!("waiting for sign-in (art mcp login {server})"),
                    _ => "running without that tool (see `art mcp tools`)".to_owned(),
                }
            );
        }
        if let Some(unknown) = tools.iter().find(|t| !known.contains(t)) {
            bail!(
                "there is no tool named {unknown:?} (known: {})",
                known.join(", ")
            );
        }
        config.enabled_tools = tools;
    }
    art.state.set_thread_config(thread_id, &config).await?;
    Ok(())
}

/// The `--attach` files in the attachment store (read now if they were not started on
/// early), each noted on stderr as attached; the first refused stops the run before
/// anything is created, saying why.
async fn attach(stack: &Standard, args: &mut Args) -> anyhow::Result<Vec<Attachment>> {
    if args.attaching.is_none() && !args.attach.is_empty() {
        let Some(store) = &stack.art.attachments else {
            bail!("this build of art has no attachment store");
        };
        args.start_attaching(store);
    }
    let Some(attaching) = args.attaching.take() else {
        return Ok(Vec::new());
    };
    let attached = tokio::task::spawn_blocking(move || attaching.finish()).await??;
    for attachment in &attached {
        noteln!("art: attached {}", attachment.describe());
    }
    Ok(attached)
}

/// Run the agent once; the exit status says how it ended.
pub async fn run(stack: &Standard, mut args: Args) -> anyhow::Result<ExitCode> {
    let art = &stack.art;
    // A provider is checked (any case), and files read, before anything is created.
    if let Some(asked) = &args.provider {
        args.provider = Some(crate::config::provider(stack, asked)?);
    }
    let mut attachments = std::mem::take(&mut args.attached);
    attachments.extend(attach(stack, &mut args).await?);
    let thread_id = match (&args.thread, &args.new) {
        (Some(id), _) => art.conversation.thread(id).await?.thread_id,
        (None, Some(title)) => art.new_thread(Some(title)).await?.thread_id,
        (None, None) => bail!("say which thread: --thread ID, or --new TITLE"),
    };
    let provider_config = args.provider.map(|provider_name| {
        let mut adapter_options = serde_json::Map::new();
        if let Some(url) = &args.base_url {
            adapter_options.insert(BASE_URL.into(), Value::String(url.clone()));
        }
        ProviderConfig {
            provider_name,
            model_id: args.model.unwrap_or_default(),
            adapter_options,
        }
    });
    if args.new.is_some() || args.tools.is_some() || args.context_window.is_some() {
        let provider = provider_config.as_ref().filter(|_| args.new.is_some());
        save_settings(stack, &thread_id, provider, args.tools, args.context_window).await?;
    }
    if let Some(message) = &args.edit {
        let original = art.branch_to_edit(&thread_id, message).await?;
        // The edited question keeps its files unless others are given.
        if attachments.is_empty() {
            attachments = original.attachments;
        }
    }
    let props = AgentProps {
        query: args.question,
        thread_id: thread_id.clone(),
        trace_id: Some(art::clock::new_id()),
        options: AgentOptions {
            provider_config,
            ..AgentOptions::default()
        },
        attachments,
    };
    let trace = props.trace_id.clone().unwrap_or_default();
    let printer = Printer::new(&thread_id, &trace, args.thinking);
    follow::follow(stack, printer, args.approve, follow::Work::Ask(props)).await
}
