//! ART Workbench UI: a Leptos client-side app compiled to wasm32.
//!
//! A pure view: it calls backend commands and renders backend events through `ipc`.
//! It never touches the network, disk or keychain, and never depends on `art`.

mod app;
mod components;
mod ipc;
mod live;
mod markdown;
mod store;
mod views;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
