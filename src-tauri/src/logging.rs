//! `tracing` set-up: level from `ART_WORKBENCH_LOG` (default `info`, `rmcp` at `warn`), lines to stderr
//! and to daily-rotated files in the data directory (7 kept).
//!
//! Invariant: no secret is ever logged. Secrets are `art::secrets::Secret`, whose
//! `Debug`/`Display` redact the value, and no code logs request headers.

use art::paths::DataDir;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use art::LOG_ENV;

/// Number of daily log files kept.
const KEPT_LOG_FILES: usize = 7;

/// The default filter: `info`, but the MCP SDK's own chatter (it logs each server's
/// whole handshake, instructions included) only from warnings up; what the servers
/// write to stderr is logged by `art::mcp`.
const DEFAULT_FILTER: &str = "info,rmcp=warn";

fn filter() -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// Install the global subscriber. Returns the file writer's guard (keep it alive) when
/// a log file could be opened.
pub fn init(data_dir: Option<&DataDir>) -> Option<WorkerGuard> {
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter());
    let file = data_dir.and_then(|dir| {
        RollingFileAppender::builder()
            .rotation(Rotation::DAILY)
            .filename_prefix("art-workbench")
            .filename_suffix("log")
            .max_log_files(KEPT_LOG_FILES)
            .build(dir.log_dir())
            .map_err(|e| eprintln!("log file unavailable, logging to stderr only: {e}"))
            .ok()
    });
    let (file_layer, guard) = match file {
        Some(appender) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(writer)
                .with_filter(filter());
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    // A second init (tests) keeps the first subscriber; that is fine.
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file_layer)
        .try_init();
    guard
}
