//! The app's security configuration, checked: the content security policy allows no
//! `eval`, no inline script and nothing remote; the window may call exactly the app's
//! own commands and listen to events — no filesystem, shell, HTTP, dialog or window
//! APIs; and the page is the bundled UI, not a URL.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn json(path: &str) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_content_security_policy_allows_nothing_remote_and_no_eval() {
    let config = json("tauri.conf.json");
    let security = &config["app"]["security"];
    let csp = security["csp"].as_object().expect("a CSP is set");
    let sources: Vec<&str> = csp
        .values()
        .filter_map(Value::as_str)
        .flat_map(str::split_whitespace)
        .collect();
    for source in &sources {
        assert!(
            !matches!(*source, "'unsafe-eval'" | "'unsafe-inline'" | "*"),
            "the CSP allows {source}"
        );
        // The only scheme-qualified source is Tauri's IPC.
        if source.contains("://") {
            assert_eq!(*source, "http://ipc.localhost", "remote source {source}");
        }
        assert!(
            !matches!(*source, "https:" | "http:" | "ws:" | "wss:"),
            "{source}"
        );
    }
    assert_eq!(csp["default-src"], "'self'");
    assert_eq!(csp["object-src"], "'none'");
    assert_eq!(csp["frame-ancestors"], "'none'");
    assert_eq!(security["freezePrototype"], true);
    // The window shows the bundled UI, never a remote page.
    for window in config["app"]["windows"].as_array().unwrap() {
        if let Some(url) = window["url"].as_str() {
            assert!(!url.contains("://"), "window loads {url}");
        }
    }
    let frontend = config["build"]["frontendDist"].as_str().unwrap_or_default();
    assert!(!frontend.contains("://"), "frontend from {frontend}");
}

#[test]
fn the_window_may_call_only_the_apps_own_commands() {
    // The commands the app registers: one handler per name of the one list.
    let commands: BTreeSet<String> = art_types::commands::NAMES
        .iter()
        .map(|name| format!("allow-{}", name.replace('_', "-")))
        .collect();
    assert!(commands.len() > 20, "found the commands: {commands:?}");
    let capability = json("capabilities/main.json");
    assert_eq!(capability["windows"], serde_json::json!(["main"]));
    let permissions: BTreeSet<String> = capability["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().expect("plain permission names").to_owned())
        .collect();
    let events: BTreeSet<String> = ["core:event:allow-listen", "core:event:allow-unlisten"]
        .map(str::to_owned)
        .into();
    let granted: BTreeSet<String> = permissions.difference(&events).cloned().collect();
    assert_eq!(
        granted, commands,
        "exactly one permission per registered command, and nothing else"
    );
    assert!(
        permissions
            .iter()
            .all(|p| !p.contains(':') || p.starts_with("core:event:")),
        "no plugin or core permission besides events: {permissions:?}"
    );
}
