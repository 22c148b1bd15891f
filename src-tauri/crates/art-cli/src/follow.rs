//! Following a run to its end on the terminal: tokens and observations printed as they
//! come, Ctrl-C stops it, and a run that waits for a decision on a tool call is decided
//! here — by `--approve all|none`, by asking on the terminal, or left waiting for
//! `art approve` / `art deny` when there is no terminal to ask on.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use art::agent::CancellationToken;
use art::sockets::{ObservationFilter, StreamFilter};
use art::standard::Standard;
use art_types::approval::{ApprovalDecision, PLAN_REVIEW, SuspensionContent};
use art_types::mcp::elicit::ElicitAnswer;
use art_types::{AgentFinalResponse, AgentProps, RunStatus};
use serde_json::Value;

use crate::out::{note, noteln, sayln};
use crate::printer::Printer;

/// What to do when a tool asks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Approve {
    /// Run every call that asks.
    All,
    /// Run none of them (the model is told each was denied).
    None,
}

/// Go on with the thread's waiting run after `decision` (`art approve` / `art deny`),
/// printing the rest of it.
pub async fn decided(
    stack: &Standard,
    thread_id: &str,
    decision: ApprovalDecision,
) -> anyhow::Result<ExitCode> {
    let Some(waiting) = stack.art.waiting(thread_id).await? else {
        anyhow::bail!("no run of thread {thread_id} waits for a decision");
    };
    let printer = Printer::new(thread_id, &waiting.trace_id, false);
    follow(
        stack,
        printer,
        None,
        Work::Resume(thread_id.to_owned(), decision),
    )
    .await
}

/// What the followed run does.
pub enum Work {
    /// Answer a question.
    Ask(AgentProps),
    /// Go on after a decision on the thread's waiting call.
    Resume(String, ApprovalDecision),
    /// Go on with a run kept on a server's question (thread, question id) whose process
    /// ended, with the answer to it.
    Answer(String, String, ElicitAnswer),
}

/// Run `work` to its end (deciding on waiting calls as `approve` says), printing as it
/// goes; the exit status says how it ended.
pub async fn follow(
    stack: &Standard,
    mut printer: Printer,
    approve: Option<Approve>,
    work: Work,
) -> anyhow::Result<ExitCode> {
    let (thread_id, mut work) = match work {
        Work::Ask(props) => (props.thread_id.clone(), Work::Ask(props)),
        Work::Resume(thread, decision) => (thread.clone(), Work::Resume(thread, decision)),
        Work::Answer(thread, question, answer) => {
            (thread.clone(), Work::Answer(thread, question, answer))
        }
    };
    loop {
        let (out, stopped) = drive(stack, &mut printer, work).await?;
        if out.metadata.status != RunStatus::Suspended || stopped {
            return Ok(ended(&out, &printer, &thread_id, stopped));
        }
        let Some(waiting) = stack.art.waiting(&thread_id).await? else {
            return Ok(ended(&out, &printer, &thread_id, stopped));
        };
        match decide(stack, &thread_id, &waiting.call, approve).await {
            Some(decision) => work = Work::Resume(thread_id.clone(), decision),
            None => {
                noteln!(
                    "art: run {} waits for your decision on `{}`: `art approve --thread {thread_id}` \
                     runs it, `art deny --thread {thread_id}` does not, `art stop --thread {thread_id}` ends the run",
                    out.metadata.trace_id,
                    waiting.call.tool_name
                );
                return Ok(ExitCode::from(4));
            }
        }
    }
}

/// The decision on `call`: the flag's, else the terminal's answer (asked again while an
/// edit does not fit the tool's schema); `None` without either, or when the user pressed
/// Ctrl-C or Ctrl-D at the prompt (the run then stays waiting).
async fn decide(
    stack: &Standard,
    thread_id: &str,
    call: &SuspensionContent,
    approve: Option<Approve>,
) -> Option<ApprovalDecision> {
    if approve.is_some() || !std::io::stdin().is_terminal() {
        return flag_decision(approve);
    }
    loop {
        // A thread of its own, not the runtime's blocking pool: after Ctrl-C the read
        // never ends, and the runtime would wait for it at exit.
        let asked = call.clone();
        let (tx, answer) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || tx.send(ask_on_terminal(&asked)));
        let decision = tokio::select! {
            answer = answer => answer.ok().flatten(),
            _ = tokio::signal::ctrl_c() => {
                noteln!();
                None
            }
        }?;
        match stack.art.check_decision(thread_id, &decision).await {
            Err(art::agent::AgentError::InvalidInput(problem)) => {
                noteln!("Those arguments do not fit the tool: {problem}. Try again.");
            }
            _ => return Some(decision),
        }
    }
}

/// The decision `--approve` gives, if any.
fn flag_decision(approve: Option<Approve>) -> Option<ApprovalDecision> {
    match approve {
        Some(Approve::All) => Some(ApprovalDecision::approve()),
        Some(Approve::None) => Some(ApprovalDecision::Deny {
            reason: Some("denied from the command line (--approve none)".into()),
        }),
        None => None,
    }
}

/// The user's answer on the terminal about `call` (blocking); `None` at Ctrl-D.
fn ask_on_terminal(call: &SuspensionContent) -> Option<ApprovalDecision> {
    let stdin = std::io::stdin();
    if call.tool_name == PLAN_REVIEW {
        return review_on_terminal(call, &stdin);
    }
    let server = call
        .server
        .as_deref()
        .map(|s| format!(" (MCP server `{s}`)"))
        .unwrap_or_default();
    let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    noteln!(
        "\nThe agent wants to run `{}`{server} with:\n{arguments}",
        call.tool_name
    );
    loop {
        let answer = ask(
            &stdin,
            "Run it? [y]es, [n]o, [a]lways in this thread, [e]dit the arguments: ",
        )?;
        match answer.to_lowercase().as_str() {
            "y" | "yes" => return Some(ApprovalDecision::approve()),
            "a" | "always" => {
                return Some(ApprovalDecision::Approve {
                    arguments: None,
                    always: true,
                });
            }
            "n" | "no" => {
                let reason = ask(
                    &stdin,
                    "Why not (the model reads it; Enter for no reason)? ",
                )?;
                let reason = Some(reason).filter(|r| !r.is_empty());
                return Some(ApprovalDecision::Deny { reason });
            }
            "e" | "edit" => {
                let json = ask(&stdin, "Arguments as JSON on one line: ")?;
                match serde_json::from_str::<serde_json::Value>(&json) {
                    Ok(arguments) if arguments.is_object() => {
                        return Some(ApprovalDecision::Approve {
                            arguments: Some(arguments),
                            always: false,
                        });
                    }
                    _ => noteln!("That is not a JSON object."),
                }
            }
            _ => {}
        }
    }
}

/// `question` on the terminal, and the line answered (trimmed); `None` at its end.
fn ask(stdin: &std::io::Stdin, question: &str) -> Option<String> {
    note!("{question}");
    let mut line = String::new();
    match stdin.lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// The plan shown on the terminal: run it as it is, or cancel the run (editing it is the
/// app's, or `art approve --arguments '{"steps": [...]}'`).
fn review_on_terminal(
    call: &SuspensionContent,
    stdin: &std::io::Stdin,
) -> Option<ApprovalDecision> {
    let steps = call.arguments["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    noteln!("\nThe plan, before any step runs:");
    for (i, step) in steps.iter().enumerate() {
        noteln!("  {}. {}", i + 1, step.as_str().unwrap_or_default());
    }
    loop {
        match ask(stdin, "Run it? [y]es, [n]o (cancel the run): ")?
            .to_lowercase()
            .as_str()
        {
            "y" | "yes" => return Some(ApprovalDecision::approve()),
            "n" | "no" => return Some(ApprovalDecision::Deny { reason: None }),
            _ => {}
        }
    }
}

/// One stretch of the run (to its end or its next wait), printed; whether Ctrl-C
/// stopped it.
async fn drive(
    stack: &Standard,
    printer: &mut Printer,
    work: Work,
) -> anyhow::Result<(AgentFinalResponse, bool)> {
    let art = &stack.art;
    let thread_id = match &work {
        Work::Ask(props) => props.thread_id.clone(),
        Work::Resume(thread, _) | Work::Answer(thread, ..) => thread.clone(),
    };
    let mut stream = art.sockets.stream.subscribe(StreamFilter {
        thread_id: Some(thread_id.clone()),
        trace_id: Some(printer.trace_id().to_owned()),
    });
    let mut observations = art.sockets.observations.subscribe(ObservationFilter {
        thread_id: Some(thread_id.clone()),
        types: Printer::TYPES.to_vec(),
    });
    let cancel = CancellationToken::new();
    let run = async {
        match work {
            Work::Ask(props) => art.process(props, cancel.clone()).await,
            Work::Resume(thread, decision) => art.resume(&thread, decision, cancel.clone()).await,
            Work::Answer(thread, question, answer) => {
                art.answer_held(&thread, &question, answer, cancel.clone())
                    .await
            }
        }
    };
    tokio::pin!(run);
    let end = told_to_end();
    tokio::pin!(end);
    let mut stopped = false;
    let outcome = loop {
        // In this order: an observation (a plan) is broadcast before the tokens that
        // follow it, so preferring observations prints them in the order they happened;
        // the run's end comes last, after what it sent.
        tokio::select! {
            biased;
            Some(o) = observations.recv() => printer.observation(&o),
            Some(event) = stream.recv() => printer.stream(&event),
            _ = tokio::signal::ctrl_c(), if !stopped => {
                stopped = true;
                noteln!("\nStopping…");
                cancel.cancel();
            }
            () = &mut end, if !stopped => {
                // The terminal closed (SIGHUP) or the system asks us to end (SIGTERM):
                // servers stop, and a run waiting on a server's question stays kept on
                // it for `art answer`; any other run is stopped.
                stopped = true;
                art.close().await;
                cancel.cancel();
            }
            out = &mut run => break out,
        }
    };
    while let Some(o) = observations.try_recv() {
        printer.observation(&o);
    }
    while let Some(event) = stream.try_recv() {
        printer.stream(&event);
    }
    printer.end_thinking();
    Ok((outcome?, stopped))
}

/// SIGHUP or SIGTERM (never elsewhere than on Unix).
async fn told_to_end() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut hangup), Ok(mut terminate)) = (
            signal(SignalKind::hangup()),
            signal(SignalKind::terminate()),
        ) {
            tokio::select! {
                _ = hangup.recv() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    std::future::pending().await
}

/// The footer and the exit status of a run that ended (or waits).
fn ended(out: &AgentFinalResponse, printer: &Printer, thread_id: &str, stopped: bool) -> ExitCode {
    if printer.answered() {
        sayln!();
    }
    sayln!("\n{}", footer(out, printer.first_token()));
    if out.metadata.history_left_out > 0 {
        noteln!(
            "art: {} earlier message(s) left out to fit the model's context window",
            out.metadata.history_left_out
        );
    }
    match out.metadata.status {
        _ if stopped => ExitCode::from(130),
        RunStatus::Success => ExitCode::SUCCESS,
        RunStatus::Partial => ExitCode::from(3),
        RunStatus::Suspended => ExitCode::from(4),
        RunStatus::Error => {
            match &out.metadata.error {
                // Printed once: as it happened, or here.
                Some(_) if printer.error_shown() => noteln!("art: the run failed"),
                Some(e) => noteln!("art: the run failed: {} ({})", e.message, e.code),
                None => {}
            }
            // A document no model reads whole: what to do from the terminal.
            if out
                .metadata
                .error
                .as_ref()
                .is_some_and(|e| e.code == art_types::FailureCode::DocumentTooLong)
            {
                noteln!(
                    "art: to ask about it, put it in a knowledge collection (`art kb create \
                     Docs`, `art kb add Docs FILE`) and ask with `--tools search_knowledge`: \
                     the agent searches it and cites its pages"
                );
            }
            if !printer.answered() {
                noteln!(
                    "art: the question is kept but left out of later questions; ask it again \
                     with `art retry --thread {thread_id}`, or remove it with `art drop --thread \
                     {thread_id}`"
                );
            }
            ExitCode::FAILURE
        }
    }
}

fn footer(out: &AgentFinalResponse, first_token: Option<std::time::Duration>) -> String {
    let m = &out.metadata;
    // The model that answered, else the one the run asked; no name, no empty field.
    let model = out
        .response
        .metadata
        .get("model")
        .and_then(Value::as_str)
        .or(m.model.as_deref())
        .filter(|m| !m.is_empty())
        .map(|m| format!("{m} · "))
        .unwrap_or_default();
    let cached = match m.usage.cached_input_tokens {
        0 => String::new(),
        n => format!(" ({n} cached)"),
    };
    // A thread without tools answers in one call: said, so nobody looks for the plan.
    let plan = if m.direct { ", no plan" } else { "" };
    // How long the user waited for the answer to start.
    let first = first_token
        .map(|d| format!("first token {:.1} s · ", d.as_secs_f64()))
        .unwrap_or_default();
    format!(
        "{model}{}{cached} → {} tokens · {} LLM calls, {} tool calls{plan} · {first}{:.1} s · run {}",
        m.usage.input_tokens,
        m.usage.output_tokens,
        m.llm_calls,
        m.tool_calls,
        m.total_duration_ms as f64 / 1000.0,
        m.trace_id
    )
}
