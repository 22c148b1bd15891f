//! Hermetic end-to-end tests: the app must reach only servers a test started. The
//! addresses the app would use on its own are held for the whole test process by a
//! listener that records every connection and closes it; a session that caused one
//! fails when it closes, naming the request.
//!
//! The app's default Ollama address comes from `OLLAMA_HOST` (as Ollama's own does), and
//! the hub it downloads its embedder from from `HF_ENDPOINT` (as the hub's clients do);
//! `cargo xtask test` points both at ports of its own: the suite owns the address the app
//! would reach by default, so it passes beside a real Ollama on 11434. That port is
//! held too whenever it is free — always in CI —, so a default written past
//! `OLLAMA_HOST` would be caught there.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// `host:port` of an http(s) base URL.
fn address_of(url: &str) -> String {
    url.split_once("://")
        .map_or(url, |(_, rest)| rest)
        .trim_end_matches('/')
        .to_owned()
}

/// Who knocked: the address and the request line it sent.
static KNOCKS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static STARTED: OnceLock<Result<Vec<String>, String>> = OnceLock::new();

/// The app's default addresses: the one `OLLAMA_HOST` gives it and the hub `HF_ENDPOINT`
/// gives it (both must be held), and Ollama's own default (held when free).
fn defaults() -> Vec<(String, bool)> {
    use art::providers::ollama::{DEFAULT_BASE_URL, default_base_url};
    let configured = address_of(&default_base_url());
    let ollama = address_of(DEFAULT_BASE_URL);
    let hub = address_of(&art::knowledge::embed::download::endpoint());
    let mut defaults = vec![(configured.clone(), true), (hub, true)];
    if configured != ollama {
        defaults.push((ollama, false));
    }
    defaults
}

/// Hold the default addresses (once per process); the addresses held, or an error
/// saying which required one is taken.
pub fn start() -> Result<Vec<String>, String> {
    STARTED.get_or_init(|| hold(&defaults())).clone()
}

/// Hold `addresses` (each: required or only when free).
fn hold(addresses: &[(String, bool)]) -> Result<Vec<String>, String> {
    let mut held = Vec::new();
    for (address, required) in addresses {
        let listener = match TcpListener::bind(address) {
            Ok(listener) => listener,
            Err(e) if *required => {
                return Err(format!(
                    "cannot hold {address} ({e}), one of the app's default addresses in \
                     these tests (OLLAMA_HOST, HF_ENDPOINT: `cargo xtask test` sets both): \
                     the end-to-end tests hold them to prove the app never reaches a server \
                     they did not start"
                ));
            }
            Err(e) => {
                eprintln!(
                    "note: {address} is in use ({e}), probably by a local Ollama: the \
                     tests point the app's default at {} instead",
                    addresses[0].0
                );
                continue;
            }
        };
        let name: &'static str = Box::leak(address.clone().into_boxed_str());
        std::thread::Builder::new()
            .name(format!("sentinel {address}"))
            .spawn(move || watch(listener, name))
            .map_err(|e| format!("cannot watch {address}: {e}"))?;
        held.push(address.clone());
    }
    Ok(held)
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

/// The address of this test process's "Ollama that is not running": a port held by a
/// listener that closes every connection unanswered, as a machine without Ollama would
/// refuse it. A fresh session's app looks for Ollama there (its welcome page checks at
/// once), so what it finds depends on no real server — and knocks there are expected.
pub fn absent_ollama() -> String {
    static ABSENT: OnceLock<String> = OnceLock::new();
    ABSENT
        .get_or_init(|| {
            let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
            let address = listener.local_addr().expect("its address");
            std::thread::Builder::new()
                .name("absent ollama".into())
                .spawn(move || {
                    for stream in listener.incoming() {
                        drop(stream);
                    }
                })
                .expect("a thread for the absent Ollama");
            format!("http://{address}")
        })
        .clone()
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

    fn knock(address: &str, request: &[u8]) -> Vec<String> {
        let before = count();
        let mut stream = TcpStream::connect(address).unwrap();
        stream.write_all(request).unwrap();
        // Tests run at once: only this address's knocks.
        let mine = || -> Vec<String> {
            let prefix = format!("{address}: ");
            since(before)
                .into_iter()
                .filter(|k| k.starts_with(&prefix))
                .collect()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while mine().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        mine()
    }

    #[test]
    fn the_apps_default_addresses_are_required_and_11434_held_when_free() {
        let defaults = defaults();
        let configured = art::providers::ollama::default_base_url();
        assert!(
            configured.ends_with(&defaults[0].0),
            "{configured} {defaults:?}"
        );
        assert!(defaults[0].1, "the app's own default must be held");
        let hub = art::knowledge::embed::download::endpoint();
        assert!(hub.ends_with(&defaults[1].0), "{hub} {defaults:?}");
        assert!(defaults[1].1, "the hub the app downloads from must be held");
        assert!(
            defaults[2..].iter().all(|(address, required)| *address
                == address_of(art::providers::ollama::DEFAULT_BASE_URL)
                && !required),
            "{defaults:?}"
        );
    }

    #[test]
    fn an_address_someone_else_listens_on_is_left_unless_required() {
        // A local Ollama stands in as a listener of the test's own.
        let ollama = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = ollama.local_addr().unwrap().to_string();
        let free = TcpListener::bind("127.0.0.1:0").unwrap();
        let ours = free.local_addr().unwrap().to_string();
        drop(free);
        let held = hold(&[(ours.clone(), true), (taken.clone(), false)]).unwrap();
        assert_eq!(held, std::slice::from_ref(&ours));
        assert_eq!(
            knock(&ours, b"POST /api/chat HTTP/1.1\r\n\r\n"),
            [format!("{ours}: POST /api/chat HTTP/1.1")]
        );
        let refused = hold(&[(taken.clone(), true)]).unwrap_err();
        assert!(refused.contains(&taken), "{refused}");
    }
}
