//! MCP: a `tools/call` round trip over stdio and the time from "enable" to "ready", for
//! our client and for the official TypeScript SDK client, side by side in one run, to
//! the same server (`@modelcontextprotocol/server-everything`, its `echo` tool) as
//! `cargo xtask test` installs it.
//!
//! Ours: `McpManager::start` (spawn, handshake, `tools/list`, tools registered) and
//! `McpManager::call` (schema check, registry, JSON-RPC over the child's pipes) — the
//! path a run takes. The peer: `tests/mcp/bench_client.mjs` (connect, `listTools`,
//! `callTool`), its own process. The floor: JSON lines written and read by hand, no
//! client at all — what the server itself takes. Each run: [`WARMUP`] calls, then
//! [`CALLS`] timed one by one; a run's figure is the median call. The budget is on what
//! each client adds above the floor (ours ≤ 0.5× the SDK's). Run: `cargo xtask bench
//! mcp`.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use art::secrets::MemoryStore;
use art::storage::sqlite::SqliteStorage;
use art::tools::ToolRegistry;
use art::tools::mcp::{McpManager, McpStore};
use art_testkit::bench::{Budget, Figure, Results, Stats};
use art_types::mcp::McpServerState;
use serde_json::{Value, json};

const RUNS: usize = 5;
const CALLS: usize = 2_000;
const WARMUP: usize = 200;

struct Run {
    ready_ms: f64,
    call_us: f64,
}

/// One run of our client: a fresh manager, start, warm up, timed calls.
async fn ours() -> Result<Run, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let storage =
        Arc::new(SqliteStorage::open(dir.path().join("b.sqlite3")).map_err(|e| e.to_string())?);
    let mcp = McpManager::new(
        McpStore::new(storage, Arc::new(MemoryStore::new())),
        Arc::new(ToolRegistry::new()),
    );
    let config = art_testkit::mcp::everything("everything", "bench");
    mcp.store()
        .save(&config, &BTreeMap::new())
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let status = mcp.start("everything").await.map_err(|e| e.to_string())?;
    let ready_ms = started.elapsed().as_secs_f64() * 1e3;
    if !matches!(status.state, McpServerState::Ready { .. }) {
        return Err(format!(
            "server-everything did not start: {:?}",
            status.state
        ));
    }
    let arguments = json!({ "message": "ping" });
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..WARMUP + CALLS {
        let t = Instant::now();
        let result = mcp
            .call("everything", "echo", &arguments)
            .await
            .map_err(|e| e.message)?;
        if i >= WARMUP {
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        if result["content"][0]["text"] != "Echo: ping" {
            return Err(format!("unexpected result {result}"));
        }
    }
    mcp.shutdown().await;
    Ok(Run {
        ready_ms,
        call_us: Stats::of(&times).median,
    })
}

/// The floor: no client library, one task on a current-thread runtime writing each
/// `tools/call` line to the server's stdin and reading its stdout up to the answer.
/// What is left of a round trip here is the server's own time and the pipes'.
fn floor() -> Result<f64, String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let mut child = tokio::process::Command::new("node")
            .args([art_testkit::mcp::everything_script(), "stdio".into()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("node: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let mut ask = async |id: usize, line: String| -> Result<(), String> {
            stdin.write_all(line.as_bytes()).await.map_err(|e| e.to_string())?;
            stdin.write_all(b"\n").await.map_err(|e| e.to_string())?;
            while let Some(answer) = lines.next_line().await.map_err(|e| e.to_string())? {
                // Notifications come between answers; the answer carries our id.
                let message: Value = serde_json::from_str(&answer).map_err(|e| e.to_string())?;
                if message["id"] == id {
                    return Ok(());
                }
            }
            Err("the server closed its stdout".into())
        };
        let hello = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "floor", "version": "1" } } });
        ask(0, hello.to_string()).await?;
        let mut times = Vec::with_capacity(CALLS);
        for id in 1..=WARMUP + CALLS {
            let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "echo", "arguments": { "message": "ping" } } });
            let t = Instant::now();
            ask(id, call.to_string()).await?;
            if id > WARMUP {
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        Ok(Stats::of(&times).median)
    })
}

/// One run of the TypeScript SDK client, in its own process.
fn peer() -> Result<Run, String> {
    let dir = art_testkit::mcp::servers_dir();
    let out = Command::new("node")
        .arg(dir.join("bench_client.mjs"))
        .args([CALLS.to_string(), WARMUP.to_string()])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("node: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the TypeScript client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let answer: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the TypeScript client's answer: {e}"))?;
    let times: Vec<f64> = answer["callsUs"]
        .as_array()
        .ok_or("no callsUs")?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    Ok(Run {
        ready_ms: answer["readyMs"].as_f64().ok_or("no readyMs")?,
        call_us: Stats::of(&times).median,
    })
}

/// Both clients, alternating, `RUNS` times; figures go to `mcp.json`.
pub fn run() -> Result<(), String> {
    let rt = crate::framework::runtime();
    // Made first: the report gives how long the whole benchmark took.
    let mut results = Results::new("mcp", "cargo xtask bench mcp");
    let (mut mine, mut theirs, mut floors) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS {
        eprintln!("mcp: run {} of {RUNS}", i + 1);
        mine.push(rt.block_on(ours())?);
        theirs.push(peer()?);
        floors.push(floor()?);
    }
    results.note(&format!(
        "server-everything over stdio (node), its `echo` tool; per run {WARMUP} warm-up calls then \
         {CALLS} timed one at a time, the run's figure is its median call; {RUNS} runs, clients \
         alternating. Ours: McpManager::call (schema check, registry, rmcp); the peer: \
         @modelcontextprotocol/sdk's Client over StdioClientTransport in Node. Ready: spawn to \
         tools listed (ours also registers them)."
    ));
    let values = |runs: &[Run], f: fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    results.add(Figure::new(
        "mcp/art/call_us",
        "tools/call round trip, ours",
        "µs",
        values(&mine, |r| r.call_us),
    ));
    results.add(Figure::new(
        "mcp/ts-sdk/call_us",
        "tools/call round trip, TypeScript SDK",
        "µs",
        values(&theirs, |r| r.call_us),
    ));
    // What each client adds to the server's own time, run by run.
    let share = |runs: &[Run]| -> Vec<f64> {
        runs.iter()
            .zip(&floors)
            .map(|(r, f)| r.call_us - f)
            .collect()
    };
    let (our_share, their_share) = (share(&mine), share(&theirs));
    results.add(Figure::new(
        "mcp/floor/call_us",
        "tools/call round trip, bare JSON lines over the pipes (the floor: the server's own time)",
        "µs",
        floors.clone(),
    ));
    results.add(Figure::new(
        "mcp/art/client_us",
        "what our client adds to the floor",
        "µs",
        our_share.clone(),
    ));
    results.add(Figure::new(
        "mcp/ts-sdk/client_us",
        "what the TypeScript SDK adds to the floor",
        "µs",
        their_share.clone(),
    ));
    // The budget is on what a client owns: the server's own time (the floor) is 50–65 %
    // of the SDK's whole round trip, so half of that whole is below the floor.
    results.add(
        Figure::new(
            "mcp/ratio/client",
            "what our client adds ÷ what the TypeScript SDK adds",
            "×",
            our_share
                .iter()
                .zip(&their_share)
                .map(|(a, b)| a / b)
                .collect(),
        )
        .budget(Budget::AtMost(0.5)),
    );
    let ratios: Vec<f64> = mine
        .iter()
        .zip(&theirs)
        .map(|(a, b)| a.call_us / b.call_us)
        .collect();
    results.add(Figure::new(
        "mcp/ratio/call",
        "our round trip ÷ the TypeScript SDK's",
        "×",
        ratios,
    ));
    results.add(Figure::new(
        "mcp/art/ready_ms",
        "enable → ready, ours",
        "ms",
        values(&mine, |r| r.ready_ms),
    ));
    results.add(Figure::new(
        "mcp/ts-sdk/ready_ms",
        "connect → tools listed, TypeScript SDK",
        "ms",
        values(&theirs, |r| r.ready_ms),
    ));
    let added: Vec<f64> = mine
        .iter()
        .zip(&theirs)
        .map(|(a, b)| a.ready_ms - b.ready_ms)
        .collect();
    results.add(
        Figure::new(
            "mcp/ready_added_ms",
            "our enable → ready minus the TypeScript SDK's",
            "ms",
            added,
        )
        .budget(Budget::AtMost(50.0)),
    );
    results.write().map_err(|e| e.to_string())?;
    Ok(())
}
