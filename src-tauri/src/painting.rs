//! How the webview paints where the machine has no GPU (Linux: WebKitGTK; elsewhere the
//! system's webview decides). WebKitGTK paints its tiles with Skia on OpenGL and
//! composites them with OpenGL; with no GPU to reach, Mesa runs that OpenGL on the CPU
//! (llvmpipe), which then does a GPU's work on the CPU: measured under Xvfb while four
//! answers stream, llvmpipe's threads took 38 % of all CPU time, the page's own thread
//! 22 %. There the app asks WebKit for no hardware acceleration — it paints on the CPU
//! directly, no emulated GPU in between — unless the user chose a rendering mode with
//! WebKit's own variables, which then decide.

use std::ffi::OsString;
use std::path::Path;

/// WebKit's (and Mesa's) variables that choose how it renders: set, the user decided.
const USER_CHOICES: &[&str] = &[
    "WEBKIT_DISABLE_COMPOSITING_MODE",
    "WEBKIT_FORCE_COMPOSITING_MODE",
    "WEBKIT_SKIA_ENABLE_CPU_RENDERING",
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
    /// On the CPU: no GPU to render with.
    Cpu,
    /// As the user chose with this variable.
    UserChose(&'static str),
}

/// The choice for a process with environment `env` on a machine whose render nodes are
/// listed in `dri` (`/dev/dri`: a `renderD…` node per GPU).
pub fn choose(env: impl Fn(&str) -> Option<OsString>, dri: &Path) -> Painting {
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

/// Apply the choice for this machine to the main window's webview.
pub fn apply(app: &tauri::App) {
    use tauri::Manager;
    let painting = choose(|name| std::env::var_os(name), Path::new(DRI));
    tracing::info!(?painting, "how the webview paints");
    if painting != Painting::Cpu {
        return;
    }
    let Some(window) = app.get_webview_window("main") else {
        return;
    };
    let applied = window.with_webview(|webview| {
        use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
        if let Some(settings) = webview.inner().settings() {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    });
    if let Err(e) = applied {
        tracing::warn!("the webview paints with its defaults: {e}");
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
    }
}
