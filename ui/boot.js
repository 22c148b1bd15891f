// Loads the Leptos UI (wasm). Kept out of index.html so the CSP needs no inline scripts.
// If the interface cannot start, say so on screen instead of leaving a blank window.
import init from "./art_ui.js";

function showFailure(what) {
  // The UI's panic hook already said what went wrong: keep its words.
  const panic = document.getElementById("ui-panic");
  const box = document.createElement("pre");
  box.id = "boot-error";
  box.className = "boot-error";
  box.textContent = "ART Workbench could not start its interface:\n" + what;
  document.body.replaceChildren(...(panic ? [panic, box] : [box]));
}

window.addEventListener("error", (event) => showFailure(event.message || String(event.error)));
window.addEventListener("unhandledrejection", (event) => showFailure(String(event.reason)));
init().catch((err) => showFailure(err && err.stack ? err.stack : String(err)));
