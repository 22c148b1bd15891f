//! ARCHITECTURE.md kept true: every file (`x.rs`, `x.md`, `x.toml`) or folder (`x/`) it
//! cites in backticks exists in the repository, and every code name it cites (`ArtInstance::branch_to_edit`,
//! `for_each_command!`, `save_thread_config`) is still written somewhere in it. A file
//! moved or a function renamed without the document following fails `cargo xtask test`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Extensions of the files whose words make up the code's vocabulary.
const SOURCES: &[&str] = &["rs", "toml", "mjs", "js", "json", "css", "html", "sh", "py"];

/// What a backticked span of the document is taken for.
#[derive(Debug, PartialEq)]
enum Cited<'a> {
    /// A file or folder (`art/src/instance.rs`, `pes/`, `tree.rs`).
    Path(&'a str),
    /// Code names (`ArtInstance`, `Standard::open`, `branch_beside`), each to be found.
    Names(Vec<&'a str>),
    /// Anything else: values, wire names, commands, URLs.
    Other,
}

fn is_ident(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name worth checking: a type (`CamelCase` with two capitals) or a function or field
/// with an underscore (`start_for_thread`) — not a plain word or a constant.
fn is_code_name(word: &str) -> bool {
    let capitals = word.chars().filter(char::is_ascii_uppercase).count();
    let camel = word.starts_with(|c: char| c.is_ascii_uppercase())
        && capitals >= 2
        && word.chars().any(|c| c.is_ascii_lowercase());
    let snake = word.contains('_') && !word.chars().any(|c| c.is_ascii_uppercase());
    is_ident(word) && (camel || snake)
}

fn classify(span: &str) -> Cited<'_> {
    let file_like = |s: &str| {
        s.rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && ["rs", "md", "toml"].contains(&ext))
    };
    let path_chars = span
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    // A file by its extension, a folder by its trailing slash: `tools/list` (an MCP
    // method) or `art/keychain-tests` (a feature) are neither. What builds make
    // (`target/…`, `ui/dist`) is not in the repository.
    let generated = span.starts_with("target/") || span.starts_with("ui/dist");
    if path_chars
        && !span.starts_with(['/', '.'])
        && !generated
        && (file_like(span) || (span.ends_with('/') && span.len() > 1))
    {
        return Cited::Path(span);
    }
    let name = span.trim_end_matches("()").trim_end_matches('!');
    let segments: Vec<&str> = name.split("::").collect();
    if segments.iter().all(|s| is_ident(s)) && (segments.len() > 1 || is_code_name(name)) {
        let names = segments.into_iter().filter(|s| is_code_name(s)).collect();
        return Cited::Names(names);
    }
    Cited::Other
}

/// The document's backticked spans (single backticks; fenced blocks left out).
fn spans(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.extend(line.split('`').skip(1).step_by(2));
        }
    }
    out
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

/// The repository's tracked files.
fn tracked(root: &Path) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("git lists the repository's files");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether `cited` names a tracked file (by its path or a tail of it: `art/src/lib.rs`,
/// `tree.rs`) or a folder holding one (`pes/`, `tests/cli`).
fn exists(files: &[String], cited: &str) -> bool {
    let folder = cited.trim_end_matches('/');
    files.iter().any(|f| {
        let file = format!("/{f}");
        file.ends_with(&format!("/{cited}")) || file.contains(&format!("/{folder}/"))
    })
}

#[test]
fn architecture_cites_only_paths_and_names_that_exist() {
    let root = root();
    let files = tracked(&root);
    let mut words = HashSet::new();
    for file in &files {
        let ext = file.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
        if !SOURCES.contains(&ext) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        words.extend(
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(str::to_owned),
        );
    }
    let document = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for span in spans(&document) {
        match classify(span) {
            Cited::Path(path) if !exists(&files, path) => missing.push(format!("file {path}")),
            Cited::Names(names) => missing.extend(
                names
                    .into_iter()
                    .filter(|n| !words.contains(*n))
                    .map(|n| format!("name {n} (in `{span}`)")),
            ),
            _ => {}
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md cites what is not in the repository:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn spans_are_told_apart() {
    assert_eq!(
        classify("art/src/instance.rs"),
        Cited::Path("art/src/instance.rs")
    );
    assert_eq!(classify("pes/"), Cited::Path("pes/"));
    assert_eq!(
        classify("ArtInstance::branch_to_edit"),
        Cited::Names(vec!["ArtInstance", "branch_to_edit"])
    );
    assert_eq!(
        classify("for_each_command!"),
        Cited::Names(vec!["for_each_command"])
    );
    assert_eq!(classify("/api/tags"), Cited::Other);
    assert_eq!(classify("tools/list"), Cited::Other);
    assert_eq!(classify("target/mcp-servers/"), Cited::Other);
    assert_eq!(classify("keep_alive: 0"), Cited::Other);
    assert_eq!(classify("STATE_UPDATE"), Cited::Other);
    assert_eq!(classify("streaming"), Cited::Other);
    let files = ["src-tauri/crates/art/src/agent/pes/mod.rs".to_owned()];
    assert!(exists(&files, "pes/") && exists(&files, "art/src/agent/pes/mod.rs"));
    assert!(!exists(&files, "es/mod.rs") && !exists(&files, "agent/pes/run.rs"));
}
