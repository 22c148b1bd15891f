//! BENCHMARKS.md from the results files (placeholder while the streaming bench is built).

use std::path::Path;

/// Render every results file in `dir` into `out`.
pub fn write(dir: &Path, out: &Path) -> Result<(), String> {
    Err(format!(
        "report from {} to {} is not written yet",
        dir.display(),
        out.display()
    ))
}
