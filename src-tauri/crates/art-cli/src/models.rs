//! `art models …`: Ollama's models from the command line, the same data as the app's
//! Models page: what is installed and what each can do, what is loaded, pulling with a
//! progress bar, deleting, unloading.

use std::io::{BufRead, IsTerminal};
use std::time::Duration;

use anyhow::bail;
use art::providers::ollama::models::{OllamaModels, PULL_STALL};
use art::standard::Standard;
use art_types::attachment::human_size;
use art_types::models::{LocalModel, SUGGESTED};
use clap::{Args as ClapArgs, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use crate::out::{noteln, sayln};

/// `art models [--base-url URL] …`.
#[derive(ClapArgs)]
pub struct Args {
    /// Ollama's address (default: the Ollama provider's, from OLLAMA_HOST or
    /// http://127.0.0.1:11434).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    #[command(subcommand)]
    command: Command,
}

/// What `art models` can do.
#[derive(Subcommand)]
enum Command {
    /// The installed models: size, parameters, quantization, context length, what each
    /// can do, and whether it is loaded now.
    List,
    /// One installed model in full.
    Show {
        /// Its name (`llama3.2` is `llama3.2:latest`).
        name: String,
    },
    /// Download models from the Ollama library, one after another, with a progress bar
    /// (`llama3.2:3b`, `qwen2.5:7b-instruct-q4_K_M`, `hf.co/user/repo:Q4_K_M`). An
    /// interrupted pull resumes where it stopped.
    Pull {
        /// The models' names.
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Delete an installed model's files.
    #[command(alias = "delete")]
    Rm {
        /// Its name.
        name: String,
        /// Do not ask (needed when standard input is not a terminal).
        #[arg(short, long)]
        yes: bool,
    },
    /// The models loaded in memory now.
    Ps,
    /// Unload a model from memory now (its files stay).
    Unload {
        /// Its name.
        name: String,
    },
}

/// Run `art models …`.
pub async fn models(stack: &Standard, args: Args) -> anyhow::Result<()> {
    let base = args
        .base_url
        .unwrap_or_else(|| art::providers::ollama::configured_base_url(&stack.providers.entries()));
    let ollama = OllamaModels::new(&base)?;
    match args.command {
        Command::List => list(&ollama).await,
        Command::Show { name } => show(&ollama, &name).await,
        Command::Pull { names } => {
            for name in names {
                pull(&ollama, &name).await?;
            }
            Ok(())
        }
        Command::Rm { name, yes } => remove(&ollama, &name, yes).await,
        Command::Ps => ps(&ollama).await,
        Command::Unload { name } => {
            ollama.unload(&name).await?;
            sayln!("Unloaded {name}.");
            Ok(())
        }
    }
}

/// `tools, vision` — or `unknown` from an Ollama too old to say.
fn abilities(model: &LocalModel) -> String {
    model
        .capability_labels()
        .map_or_else(|| "unknown".to_owned(), |labels| labels.join(", "))
}

fn context(tokens: Option<u64>) -> String {
    tokens.map_or_else(|| "-".to_owned(), |n| format!("{}k", n / 1024))
}

async fn list(ollama: &OllamaModels) -> anyhow::Result<()> {
    let models = ollama.list().await?;
    if models.is_empty() {
        sayln!("No models installed in Ollama at {}.", ollama.base_url());
        sayln!("Pull one, for example:");
        for s in SUGGESTED {
            sayln!(
                "  art models pull {:<18} {:>8}  {}",
                s.name,
                human_size(s.size_bytes),
                s.note
            );
        }
        return Ok(());
    }
    sayln!(
        "{:<32} {:>8} {:>7} {:<8} {:>7}  {:<28} LOADED",
        "NAME",
        "SIZE",
        "PARAMS",
        "QUANT",
        "CONTEXT",
        "CAN"
    );
    for m in &models {
        sayln!(
            "{:<32} {:>8} {:>7} {:<8} {:>7}  {:<28} {}",
            m.id,
            human_size(m.size_bytes),
            m.parameters.as_deref().unwrap_or("-"),
            m.quantization.as_deref().unwrap_or("-"),
            context(m.context_length),
            abilities(m),
            if m.loaded { "yes" } else { "" }
        );
    }
    Ok(())
}

async fn show(ollama: &OllamaModels, name: &str) -> anyhow::Result<()> {
    let m = ollama.show(name).await?;
    sayln!("{}", m.id);
    sayln!("  size:          {}", human_size(m.size_bytes));
    let rows = [
        ("family", m.family.clone()),
        ("parameters", m.parameters.clone()),
        ("quantization", m.quantization.clone()),
        ("context", m.context_length.map(|n| format!("{n} tokens"))),
        ("modified", m.modified_at.clone()),
    ];
    for (label, value) in rows {
        sayln!(
            "  {:<14} {}",
            format!("{label}:"),
            value.as_deref().unwrap_or("-")
        );
    }
    sayln!("  can:           {}", abilities(&m));
    sayln!("  loaded:        {}", if m.loaded { "yes" } else { "no" });
    Ok(())
}

async fn pull(ollama: &OllamaModels, name: &str) -> anyhow::Result<()> {
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template(
            "{msg:24} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} ({eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let pulled = ollama
        .pull(name, PULL_STALL, |p| {
            bar.set_message(p.status.clone());
            bar.set_length(p.total());
            bar.set_position(p.completed());
        })
        .await;
    bar.finish_and_clear();
    let pulled = pulled?;
    noteln!("art: pulled {name} ({})", human_size(pulled.total()));
    Ok(())
}

async fn remove(ollama: &OllamaModels, name: &str, yes: bool) -> anyhow::Result<()> {
    if !yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!("not deleting {name} without --yes (standard input is not a terminal)");
        }
        let model = ollama.show(name).await?;
        noteln!(
            "Delete {} ({})? Threads that use it will say it is missing. [y/N]",
            model.id,
            human_size(model.size_bytes)
        );
        let mut answer = String::new();
        stdin.lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            sayln!("Kept {name}.");
            return Ok(());
        }
    }
    let freed = ollama.delete(name).await?;
    sayln!("Deleted {name}: up to {} freed.", human_size(freed));
    Ok(())
}

async fn ps(ollama: &OllamaModels) -> anyhow::Result<()> {
    let loaded = ollama.loaded().await?;
    if loaded.is_empty() {
        sayln!("No model is loaded (Ollama loads one when a thread asks it).");
        return Ok(());
    }
    sayln!(
        "{:<32} {:>8} {:>8} {:>7}  UNTIL",
        "NAME",
        "MEMORY",
        "GPU",
        "CONTEXT"
    );
    for m in loaded {
        sayln!(
            "{:<32} {:>8} {:>8} {:>7}  {}",
            m.id,
            human_size(m.size_bytes),
            human_size(m.vram_bytes),
            context(m.context_length),
            m.expires_at.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}
