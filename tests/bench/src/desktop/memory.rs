//! Memory of a desktop app made of several processes (the app, WebKit's web and network
//! processes), read from `/proc`: resident size (RSS, what the budget names; shared
//! libraries count once per process) and proportional size (PSS: each shared page split
//! between the processes that map it, so the sum is what the processes cost together).
//! Also the baseline every WebKitGTK app starts from: WebKitGTK's own MiniBrowser showing
//! a blank page, measured the same way.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long an app idles after start before its memory is read.
pub const IDLE: Duration = Duration::from_secs(3);

/// One process's memory.
#[derive(Debug, Clone)]
pub struct Usage {
    /// Its name (`/proc/<pid>/comm`, at most 15 characters).
    pub name: String,
    /// Resident set size, kB.
    pub rss_kb: u64,
    /// Proportional set size, kB.
    pub pss_kb: u64,
}

/// Sums over a process tree, in MB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Totals {
    /// RSS of all the processes, MB.
    pub rss_mb: f64,
    /// PSS of all the processes, MB.
    pub pss_mb: f64,
}

/// The totals of `processes`.
pub fn totals(processes: &[Usage]) -> Totals {
    let mb = |kb: u64| kb as f64 / 1024.0;
    Totals {
        rss_mb: mb(processes.iter().map(|p| p.rss_kb).sum()),
        pss_mb: mb(processes.iter().map(|p| p.pss_kb).sum()),
    }
}

/// `name 123 MB RSS / 80 MB PSS, …` for the log.
pub fn breakdown(processes: &[Usage]) -> String {
    processes
        .iter()
        .map(|p| {
            format!(
                "{} {:.0} MB RSS / {:.0} MB PSS",
                p.name,
                p.rss_kb as f64 / 1024.0,
                p.pss_kb as f64 / 1024.0
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Process `root` and its descendants.
pub fn under(root: u32) -> Vec<Usage> {
    tree(|pid, _| pid == root)
}

/// Every process running `exe`, and their descendants.
pub fn running(exe: &Path) -> Vec<Usage> {
    tree(|_, path| path == exe)
}

/// The processes `root` picks (by pid and executable) and all their descendants.
fn tree(root: impl Fn(u32, &Path) -> bool) -> Vec<Usage> {
    let procs: Vec<(u32, u32, PathBuf)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            Some((pid, ppid, exe))
        })
        .collect();
    let mut ours: Vec<u32> = procs
        .iter()
        .filter(|p| root(p.0, &p.2))
        .map(|p| p.0)
        .collect();
    let mut i = 0;
    while i < ours.len() {
        let parent = ours[i];
        ours.extend(procs.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    ours.iter().filter_map(|pid| usage(*pid)).collect()
}

/// One process's memory, if it is still there.
fn usage(pid: u32) -> Option<Usage> {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let field = |key: &str| {
        rollup
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
    };
    Some(Usage {
        name: name.trim().to_owned(),
        rss_kb: field("Rss:")?,
        pss_kb: field("Pss:")?,
    })
}

/// WebKitGTK's MiniBrowser, shipped with the library the app runs on.
pub fn mini_browser() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib").ok()?;
    dirs.filter_map(Result::ok)
        .map(|d| d.path().join("webkit2gtk-4.1/MiniBrowser"))
        .chain([PathBuf::from("/usr/lib/webkit2gtk-4.1/MiniBrowser")])
        .find(|p| p.is_file())
}

/// MiniBrowser showing `about:blank`, idle for as long as the app is measured after its
/// start (its start-up plus [`IDLE`]): the memory any WebKitGTK window costs here. It
/// paints as the app does: on a machine with no GPU render node the app turns Skia's CPU
/// painting on (`src-tauri/src/painting.rs`), so MiniBrowser gets it too.
pub async fn blank_page(browser: &Path, wait: Duration) -> Result<(Totals, String), String> {
    let mut command = tokio::process::Command::new(browser);
    let gpu = std::fs::read_dir("/dev/dri").is_ok_and(|nodes| {
        nodes
            .flatten()
            .any(|node| node.file_name().to_string_lossy().starts_with("renderD"))
    });
    if !gpu && std::env::var_os("WEBKIT_SKIA_ENABLE_CPU_RENDERING").is_none() {
        command.env("WEBKIT_SKIA_ENABLE_CPU_RENDERING", "1");
    }
    let mut child = command
        .arg("about:blank")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("start {}: {e}", browser.display()))?;
    tokio::time::sleep(wait).await;
    let pid = child.id().ok_or("MiniBrowser exited at once")?;
    let processes = under(pid);
    let _ = child.kill().await;
    Ok((totals(&processes), breakdown(&processes)))
}
