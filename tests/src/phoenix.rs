//! A real Arize Phoenix for the trace tests, as `cargo xtask test` installs it from PyPI
//! (`tests/phoenix` → `target/phoenix`, or where `ART_PHOENIX` says): started on free
//! loopback ports with its database in a temporary folder (its gRPC receiver kept on
//! loopback by `serve.py`), read back through its REST API, stopped with its process
//! group when dropped.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long Phoenix may take to start (it migrates a new database first).
const START: Duration = Duration::from_secs(120);

/// Where Phoenix is installed.
pub fn phoenix_dir() -> PathBuf {
    let dir = std::env::var_os("ART_PHOENIX").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/phoenix"),
        PathBuf::from,
    );
    assert!(
        dir.join("venv/bin/python").is_file() && dir.join("serve.py").is_file(),
        "Arize Phoenix is not installed in {}: run `cargo xtask test` (it installs it), or \
         set ART_PHOENIX to where it is",
        dir.display()
    );
    dir
}

/// A free port on 127.0.0.1 (free when asked; Phoenix binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running Phoenix.
pub struct Phoenix {
    port: u16,
    child: tokio::process::Child,
    _work: tempfile::TempDir,
}

impl Phoenix {
    /// Start Phoenix and wait until it answers.
    pub async fn start() -> Self {
        let dir = phoenix_dir();
        let work = tempfile::tempdir().expect("Phoenix's working folder");
        let (port, grpc) = (free_port(), free_port());
        let log = std::fs::File::create(work.path().join("phoenix.log")).expect("a log file");
        let mut command = tokio::process::Command::new(dir.join("venv/bin/python"));
        command
            .arg(dir.join("serve.py"))
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_WORKING_DIR", work.path())
            // Nothing leaves the machine: no telemetry, no fonts or scripts from the web.
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .kill_on_drop(true);
        // A group of its own, ended whole on drop (uvicorn's workers too).
        #[cfg(unix)]
        command.process_group(0);
        let child = command.spawn().expect("Phoenix starts");
        let phoenix = Self {
            port,
            child,
            _work: work,
        };
        let deadline = tokio::time::Instant::now() + START;
        loop {
            if let Ok((200, _)) = phoenix.request("GET", "/healthz", None).await {
                return phoenix;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "Phoenix did not start in {START:?}: {}",
                phoenix.log()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Its address, e.g. `http://127.0.0.1:6006` (OTLP/HTTP at `/v1/traces`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._work.path().join("phoenix.log")).unwrap_or_default()
    }

    /// `GET path` of its REST API as JSON.
    pub async fn get(&self, path: &str) -> Value {
        let (status, body) = self
            .request("GET", path, None)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
    }

    /// The id of the project named `name`.
    pub async fn project_id(&self, name: &str) -> String {
        let projects = self.get("/v1/projects").await;
        projects["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == name)
            .and_then(|p| p["id"].as_str())
            .unwrap_or_else(|| panic!("no project {name}: {projects}"))
            .to_owned()
    }

    /// The spans in the default project as its REST API gives them, once at least `n`
    /// arrived (Phoenix inserts in batches), waiting up to `patience`.
    pub async fn spans(&self, n: usize, patience: Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let path = "/v1/projects/default/spans?limit=1000";
            let (status, body) = self.request("GET", path, None).await.unwrap_or_default();
            let spans: Vec<Value> = (status == 200)
                .then(|| serde_json::from_str::<Value>(&body).ok())
                .flatten()
                .and_then(|v| v["data"].as_array().cloned())
                .unwrap_or_default();
            if spans.len() >= n || tokio::time::Instant::now() >= deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// One HTTP/1.1 request on a new connection: status and body.
    async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> std::io::Result<(u16, String)> {
        let mut socket = TcpStream::connect(("127.0.0.1", self.port)).await?;
        let body = body.unwrap_or("");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        socket.write_all(head.as_bytes()).await?;
        socket.write_all(body.as_bytes()).await?;
        let mut answer = Vec::new();
        socket.read_to_end(&mut answer).await?;
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(answer.len());
        let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
        let rest = answer.get(split + 4..).unwrap_or_default();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = if head.contains("transfer-encoding: chunked") {
            dechunk(rest)
        } else {
            rest.to_vec()
        };
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// A chunked body's content.
fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..line])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let after = &rest[line + 2..];
        match size {
            Some(size) if size > 0 && after.len() >= size => {
                out.extend_from_slice(&after[..size]);
                rest = after[size..]
                    .strip_prefix(b"\r\n")
                    .unwrap_or(&after[size..]);
            }
            _ => break,
        }
    }
    out
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", "--", &format!("-{pid}")])
                .status();
        }
    }
}
