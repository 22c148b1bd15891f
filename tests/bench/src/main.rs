//! `art-bench`: every benchmark of ART Workbench — the streaming pipeline against the
//! clients users would pick instead, storage, export, the desktop app, the adapters — and
//! the report that turns their figures into BENCHMARKS.md. One binary, so `cargo xtask
//! bench` compiles the framework once. It installs the peers, builds the release app and
//! runs this; by hand:
//!
//! ```text
//! art-bench compare [--tokens N] [--runs R] [--peers DIR]   # figures → tests/bench/results/stream.json
//! art-bench framework | export | adapters | mcp | attachments | knowledge | push | columns | first-token
//!                                                           # figures → tests/bench/results/<name>.json
//! art-bench desktop | columns-page                          # need ART_E2E_APP, a display, tauri-driver
//! art-bench client <name> <url> <model> <tokens> <ct|mt>    # one Rust client, one stream (JSON line)
//! art-bench report [--out FILE]                             # every results file → BENCHMARKS.md
//! art-bench serve [--tokens N] [--framing events|paced|burst] [--prefill-ms MS]  # the fake server: its URL, then
//!                                                           # `served NS` per answer
//! ```

mod adapters;
mod attachments;
mod clients;
mod columns;
mod compare;
mod desktop;
mod export;
mod first_token;
mod framework;
mod knowledge;
mod ledger;
mod mcp;
mod peers;
mod push;
mod report;
mod server;

use std::path::PathBuf;

const USAGE: &str = "usage: art-bench compare [--tokens N] [--runs R] [--peers DIR]\n\
                     \x20      art-bench framework | export | adapters | desktop | mcp | attachments | knowledge | push | columns | columns-page | first-token\n\
                     \x20      art-bench client <name> <url> <model> <tokens> <ct|mt>\n\
                     \x20      art-bench report [--out FILE]\n\
                     \x20      art-bench serve [--tokens N] [--framing events|paced|burst] [--prefill-ms MS]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("art-bench: {e}");
        std::process::exit(1);
    }
}

/// The value after `flag`, parsed.
fn flag<T: std::str::FromStr>(args: &[String], flag: &str) -> Result<Option<T>, String> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} needs a valid value\n{USAGE}")),
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("compare") => {
            let tokens = flag(args, "--tokens")?.unwrap_or(100_000);
            let runs = flag(args, "--runs")?.unwrap_or(5);
            let peers = flag::<PathBuf>(args, "--peers")?.map(|dir| compare::Peers { dir });
            let results = compare::compare(tokens, runs, peers)?;
            results.write().map_err(|e| e.to_string())?;
            Ok(())
        }
        Some("framework") => framework::run(),
        Some("export") => export::run(),
        Some("adapters") => adapters::run(),
        Some("desktop") => desktop::run(),
        Some("mcp") => mcp::run(),
        Some("attachments") => attachments::run(),
        Some("knowledge") => knowledge::run(),
        Some("push") => push::run(args.get(1).map(String::as_str)),
        Some("columns") => columns::run(),
        Some("first-token") => first_token::run_bench(),
        Some("columns-page") => desktop::columns::run(),
        Some("push-receiver") => push::receiver(),
        Some("client") => {
            let [_, name, url, model, tokens, runtime] = args else {
                return Err(USAGE.into());
            };
            let tokens = tokens
                .parse()
                .map_err(|_| format!("bad token count {tokens:?}"))?;
            let runtime = peers::Runtime::parse(runtime)?.build()?;
            // A task on the runtime, as the app runs a run (and as a service would use a
            // client): on a multi-thread runtime, `block_on` would run the loop on this
            // thread and every read would hop to it from a worker.
            let (name, url, model) = (name.clone(), url.clone(), model.clone());
            let task =
                runtime.spawn(async move { clients::run(&name, &url, &model, tokens).await });
            let sample = runtime
                .block_on(task)
                .map_err(|e| format!("the client's task failed: {e}"))??;
            println!("{}", sample.to_json());
            Ok(())
        }
        Some("report") => {
            let out = flag::<PathBuf>(args, "--out")?.unwrap_or_else(|| "BENCHMARKS.md".into());
            report::write(&art_testkit::bench::results_dir(), &out)
        }
        Some("serve") => {
            let tokens = flag(args, "--tokens")?.unwrap_or(100_000);
            let framing = match flag::<String>(args, "--framing")? {
                Some(key) => server::Framing::parse(&key)?,
                None => server::Framing::Events,
            };
            let prefill = flag::<u64>(args, "--prefill-ms")?.unwrap_or(0);
            let server = server::Server::bind(tokens, framing)?
                .with_prefill(std::time::Duration::from_millis(prefill));
            println!("{}", server.url());
            server.run(|ns| println!("served {ns}"));
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}
