//! The real MCP servers the tests run against, as `cargo xtask test` installs them
//! (`tests/mcp` → `target/mcp-servers`, or where `ART_MCP_SERVERS` says), the in-tree
//! fault server, and a count of the processes a test's servers left behind.

use std::collections::BTreeMap;
use std::path::PathBuf;

use art_types::mcp::{McpServerConfig, McpTransport};

/// The environment variable every server a test starts carries, with a value unique to
/// the test: how [`left_behind`] finds its processes (children inherit it).
pub const MARKER_VAR: &str = "ART_MCP_TEST_MARKER";

/// Where the servers were installed.
pub fn servers_dir() -> PathBuf {
    let dir = std::env::var_os("ART_MCP_SERVERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-servers"),
        PathBuf::from,
    );
    assert!(
        dir.join("node_modules/@modelcontextprotocol/server-everything")
            .is_dir()
            && dir.join("venv/bin/mcp-server-time").is_file(),
        "the MCP test servers are not installed in {}: run `cargo xtask test` (it installs \
         them), or set ART_MCP_SERVERS to where they are",
        dir.display()
    );
    dir
}

/// A marker value no other test uses.
pub fn marker() -> String {
    format!("{}-{}", std::process::id(), uuid_like())
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{nanos:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn stdio(name: &str, command: PathBuf, args: Vec<String>, marker: &str) -> McpServerConfig {
    let env = BTreeMap::from([(MARKER_VAR.to_owned(), marker.to_owned())]);
    McpServerConfig::new(
        name,
        McpTransport::Stdio {
            command: command.to_string_lossy().into_owned(),
            args,
            env,
            cwd: None,
            secret_env: Vec::new(),
        },
    )
}

/// `@modelcontextprotocol/server-everything` over stdio (`node …/dist/index.js stdio`).
pub fn everything(name: &str, marker: &str) -> McpServerConfig {
    stdio(
        name,
        PathBuf::from("node"),
        vec![everything_script(), "stdio".into()],
        marker,
    )
}

/// The path of server-everything's entry point.
pub fn everything_script() -> String {
    servers_dir()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .to_string_lossy()
        .into_owned()
}

/// server-everything over streamable HTTP on a free port of loopback, once it accepts
/// connections: the child (killed when dropped) and its port. Its endpoint is
/// `http://127.0.0.1:{port}/mcp`.
pub async fn everything_over_http() -> (tokio::process::Child, u16) {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let server = tokio::process::Command::new("node")
        .args([everything_script(), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (server, port)
}

/// `mcp-server-time` (PyPI) over stdio, from its virtual environment.
pub fn time(name: &str, marker: &str) -> McpServerConfig {
    stdio(
        name,
        servers_dir().join("venv/bin/mcp-server-time"),
        vec!["--local-timezone".into(), "UTC".into()],
        marker,
    )
}

/// The in-tree fault server (`tests/mcp/fault_server.py`) in `mode` (see its header).
pub fn fault(name: &str, mode: &str, marker: &str) -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp/fault_server.py");
    stdio(
        name,
        PathBuf::from("python3"),
        vec![script.to_string_lossy().into_owned(), mode.into()],
        marker,
    )
}

/// How many processes still carry `marker` (Linux: read from `/proc`).
pub fn left_behind(marker: &str) -> usize {
    let needle = format!("{MARKER_VAR}={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| {
            let status = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // A zombie is gone but for its exit status: not left running.
            let state = status
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            state != Some("Z")
        })
        .filter_map(|e| std::fs::read(e.path().join("environ")).ok())
        .filter(|env| env.split(|b| *b == 0).any(|var| var == needle.as_bytes()))
        .count()
}

/// Wait up to `secs` seconds for the processes carrying `marker` to be gone; how many
/// are left.
pub async fn settle(marker: &str, secs: u64) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let left = left_behind(marker);
        if left == 0 || std::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The official MCP conformance suite as installed beside the servers, with what it
/// needs to test `art` as a client.
pub struct Conformance {
    /// Node 22 (the suite needs it), from npm's `node` package.
    pub node: PathBuf,
    /// The suite's entry point.
    pub suite: PathBuf,
    /// The client it drives: `art`, one scenario at a time (`ART_BIN` names it).
    pub client: PathBuf,
}

/// The conformance suite, installed by `cargo xtask test` with the servers.
pub fn conformance() -> Conformance {
    let dir = servers_dir();
    let found = Conformance {
        node: dir.join("node_modules/node/bin/node"),
        suite: dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        client: dir.join("conformance-client.sh"),
    };
    for path in [&found.node, &found.suite, &found.client] {
        assert!(
            path.is_file(),
            "{} is missing: run `cargo xtask test` (it installs the conformance suite)",
            path.display()
        );
    }
    found
}
