//! How the webview paints where the machine has no GPU (Linux: WebKitGTK; elsewhere the
//! system's webview decides).
//!
//! WebKitGTK paints its tiles with Skia on OpenGL and composites them with OpenGL. With no
//! GPU to reach (a VM, a remote or virtual X server: no `/dev/dri/renderD…` node) Mesa runs
//! that OpenGL on the CPU (llvmpipe), which then does a GPU's painting on the CPU: measured
//! under Xvfb while four answers stream, llvmpipe's threads took 38 % of all CPU time and a
//! frame came every 200 ms at the 95th percentile. There the app asks Skia to paint on the
//! CPU (`WEBKIT_SKIA_ENABLE_CPU_RENDERING`), keeping WebKit's compositing: 42 ms. (Turning
//! acceleration off altogether — WebKit's non-composited mode — measured 33 ms, but two such
//! apps on one display stopped answering WebDriver's screenshots: not shipped.)
//!
//! WebKit reads the variable when it starts its web process, from the environment, and a
//! running Rust program can no longer set its own environment safely (another thread may
//! read it meanwhile). So the app starts itself again, once, before anything else runs:
//! `exec` of the same program with the same arguments and the variable set (same process
//! id, same open files). The user's own choice — any of WebKit's or Mesa's rendering
//! variables — always wins.

use std::ffi::OsString;
use std::path::Path;

/// Skia's switch from GPU to CPU painting (WebKitGTK 2.46 and later).
const SKIA_CPU: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// Set beside [`SKIA_CPU`] when the app chose it, so that the program started again knows
/// the choice is made (and its log says it was the app's, not the user's).
const CHOSEN_BY_APP: &str = "ART_WORKBENCH_CPU_PAINTING";

/// WebKit's (and Mesa's) variables that choose how it renders: set, the user decided.
const USER_CHOICES: &[&str] = &[
    "WEBKIT_DISABLE_COMPOSITING_MODE",
    "WEBKIT_FORCE_COMPOSITING_MODE",
    SKIA_CPU,
    "WEBKIT_DISABLE_DMABUF_RENDERER",
    "LIBGL_ALWAYS_SOFTWARE",
];

/// Where the kernel lists the GPUs a process can render with.
const DRI: &str = "/dev/dri";

/// How the webview will paint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Painting {
    /// WebKit's default: accelerated, through the GPU.
    Gpu,
    /// Skia on the CPU, composited as usual: no GPU to render with.
    Cpu,
    /// As the user chose with this variable.
    UserChose(&'static str),
}

/// The choice for a process with environment `env` on a machine whose render nodes are
/// listed in `dri` (`/dev/dri`: a `renderD…` node per GPU).
pub fn choose(env: impl Fn(&str) -> Option<OsString>, dri: &Path) -> Painting {
    if env(CHOSEN_BY_APP).is_some() && env(SKIA_CPU).is_some() {
        return Painting::Cpu;
    }
    if let Some(name) = USER_CHOICES.iter().find(|name| env(name).is_some()) {
        return Painting::UserChose(name);
    }
    let gpu = std::fs::read_dir(dri).is_ok_and(|nodes| {
        nodes
            .flatten()
            .any(|node| node.file_name().to_string_lossy().starts_with("renderD"))
    });
    if gpu { Painting::Gpu } else { Painting::Cpu }
}

/// What [`prepare`] found, to log once logging runs.
#[derive(Debug)]
pub struct Prepared {
    painting: Painting,
    /// Why the program could not start again with CPU painting (then it paints as WebKit
    /// would by default).
    failed: Option<std::io::Error>,
}

/// Call first in the process: where this machine should paint on the CPU and the
/// environment does not say so yet, start this program again with it said (does not
/// return then). Otherwise returns the painting in effect.
pub fn prepare() -> Prepared {
    let painting = choose(|name| std::env::var_os(name), Path::new(DRI));
    // Skia's variable set means the choice is in effect (the app started again, or the
    // user's): never started twice.
    if painting != Painting::Cpu || std::env::var_os(SKIA_CPU).is_some() {
        return Prepared {
            painting,
            failed: None,
        };
    }
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os();
    let mut again = std::process::Command::new("/proc/self/exe");
    if let Some(name) = args.next() {
        again.arg0(name);
    }
    // Only returns if the program could not be started again.
    let failed = again
        .args(args)
        .env(SKIA_CPU, "1")
        .env(CHOSEN_BY_APP, "1")
        .exec();
    Prepared {
        painting: Painting::Gpu,
        failed: Some(failed),
    }
}

impl Prepared {
    /// Say in the log how the webview paints, and why.
    pub fn log(&self) {
        match &self.failed {
            None => tracing::info!(painting = ?self.painting, "how the webview paints"),
            Some(e) => tracing::warn!(
                "no GPU render node, but the app could not restart itself to paint on the \
                 CPU ({e}): WebKit paints through Mesa's emulated GPU, slower; set \
                 {SKIA_CPU}=1 to paint on the CPU"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_render_node_paints_on_the_cpu_a_gpu_keeps_webkits_default() {
        let dri = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        assert_eq!(choose(none, &dri.path().join("missing")), Painting::Cpu);
        std::fs::write(dri.path().join("card0"), "").unwrap();
        assert_eq!(
            choose(none, dri.path()),
            Painting::Cpu,
            "a card without a render node"
        );
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        assert_eq!(choose(none, dri.path()), Painting::Gpu);
    }

    #[test]
    fn the_users_own_webkit_variables_decide() {
        let dri = tempfile::tempdir().unwrap();
        let forced = |name: &str| (name == "WEBKIT_FORCE_COMPOSITING_MODE").then(|| "1".into());
        assert_eq!(
            choose(forced, dri.path()),
            Painting::UserChose("WEBKIT_FORCE_COMPOSITING_MODE")
        );
        let skia = |name: &str| (name == SKIA_CPU).then(|| "1".into());
        assert_eq!(choose(skia, dri.path()), Painting::UserChose(SKIA_CPU));
    }

    #[test]
    fn started_again_the_app_knows_it_chose_cpu_painting() {
        // What the program sees after starting itself again: both set, so it paints on the
        // CPU and does not start again (no loop), even on a machine with a GPU.
        let dri = tempfile::tempdir().unwrap();
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        let again = |name: &str| {
            [SKIA_CPU, CHOSEN_BY_APP]
                .contains(&name)
                .then(|| "1".into())
        };
        assert_eq!(choose(again, dri.path()), Painting::Cpu);
        // The app's mark alone (e.g. inherited without Skia's variable) decides nothing.
        let mark = |name: &str| (name == CHOSEN_BY_APP).then(|| "1".into());
        assert_eq!(choose(mark, dri.path()), Painting::Gpu);
    }
}
