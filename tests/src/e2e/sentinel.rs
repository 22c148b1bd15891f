//! Hermetic end-to-end tests: the app must reach only servers a test started. The
//! addresses the app would use on its own (a local Ollama's default `127.0.0.1:11434`)
//! are held for the whole test process by a listener that records every connection and
//! closes it; a session that caused one fails when it closes, naming the request.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The default addresses the app knows of that a test could reach by mistake.
const DEFAULTS: &[&str] = &["127.0.0.1:11434"];

/// Who knocked: the address and the request line it sent.
static KNOCKS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static STARTED: OnceLock<Result<(), String>> = OnceLock::new();

/// Hold the default addresses (once per process); an error says which one is taken.
pub fn start() -> Result<(), String> {
    STARTED
        .get_or_init(|| {
            for address in DEFAULTS {
                let listener = TcpListener::bind(address).map_err(|e| {
                    format!(
                        "cannot hold {address} ({e}): something (a local Ollama?) listens there. \
                         The end-to-end tests hold the app's default addresses to prove they never \
                         reach a server they did not start: stop it and run them again"
                    )
                })?;
                std::thread::Builder::new()
                    .name(format!("sentinel {address}"))
                    .spawn(move || watch(listener, address))
                    .map_err(|e| format!("cannot watch {address}: {e}"))?;
            }
            Ok(())
        })
        .clone()
}

/// Record each connection with its first line, then close it.
fn watch(listener: TcpListener, address: &'static str) {
    for stream in listener.incoming().flatten() {
        let line = first_line(stream).unwrap_or_else(|| "(nothing sent)".into());
        let mut knocks = KNOCKS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        knocks.push(format!("{address}: {line}"));
    }
}

fn first_line(stream: TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).ok()?;
    Some(line.trim().to_owned()).filter(|l| !l.is_empty())
}

/// How many connections so far.
pub fn count() -> usize {
    KNOCKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .len()
}

/// The connections after the first `from`.
pub fn since(from: usize) -> Vec<String> {
    let knocks = KNOCKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    knocks
        .get(from..)
        .map(<[String]>::to_vec)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_connection_to_a_default_address_is_recorded_with_its_request() {
        start().expect("the default addresses are free");
        let before = count();
        let mut stream = TcpStream::connect(DEFAULTS[0]).unwrap();
        stream.write_all(b"GET /api/tags HTTP/1.1\r\n\r\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while since(before).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(since(before), ["127.0.0.1:11434: GET /api/tags HTTP/1.1"]);
    }
}
