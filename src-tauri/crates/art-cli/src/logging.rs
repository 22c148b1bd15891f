//! `art`'s log: the framework's `tracing` events on stderr, beside what `art` prints.
//! The filter is `ART_WORKBENCH_LOG` as in the app when set, else the verbosity: warnings
//! (the MCP SDK's only from errors; an MCP server that fails to start is reported by the
//! command itself, not warned of twice), `-v` information (an MCP server's stderr lines
//! among them), `-vv` everything down to debug.

use tracing_subscriber::EnvFilter;

/// The filter for `verbose` (`-v` counted) when `ART_WORKBENCH_LOG` is not set.
fn default_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "warn,rmcp=error,art::tools::mcp::manager=error",
        1 => "info,rmcp=warn",
        _ => "debug",
    }
}

/// Install the global subscriber (stderr, no colours unless it is a terminal).
pub fn init(verbose: u8) {
    let filter = EnvFilter::try_from_env(art::LOG_ENV)
        .unwrap_or_else(|_| EnvFilter::new(default_filter(verbose)));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}
