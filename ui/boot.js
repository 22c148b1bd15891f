// Loads the Leptos UI (wasm). Kept out of index.html so the CSP needs no inline scripts.
import init from "./art_ui.js";
init();
