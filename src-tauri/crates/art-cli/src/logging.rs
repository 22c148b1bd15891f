//! `art`'s log: the framework's `tracing` events on stderr, beside what `art` prints.
//! The filter is `ART_WORKBENCH_LOG` as in the app when set, else the verbosity: `art`'s
//! own warnings only (the libraries' lines — the MCP SDK's ERRORs, a PDF reader's WARNs
//! — are not the user's business unless asked for; an MCP server that fails to start is
//! reported by the command itself, not warned of twice), `-v` information from
//! everything (an MCP server's stderr lines among them), `-vv` everything down to debug.

use tracing_subscriber::EnvFilter;

/// The filter for `verbose` (`-v` counted) when `ART_WORKBENCH_LOG` is not set.
fn default_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "off,art=warn,art::tools::mcp::manager=error",
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

#[cfg(test)]
mod tests {
    use super::default_filter;
    use tracing_subscriber::EnvFilter;

    /// By default a library's line never reaches the terminal, `art`'s warnings do;
    /// `-v` shows every crate's information.
    #[test]
    fn by_default_only_arts_own_warnings_are_shown() {
        let quiet = default_filter(0);
        assert!(EnvFilter::try_new(quiet).is_ok(), "{quiet}");
        let directives: Vec<&str> = quiet.split(',').collect();
        assert_eq!(directives[0], "off", "nothing but what is named: {quiet}");
        assert!(directives.contains(&"art=warn"), "{quiet}");
        assert!(default_filter(1).starts_with("info"));
    }
}
