//! ART Workbench UI: a Leptos client-side app compiled to wasm32.
//!
//! A pure view: it calls backend commands and renders backend events through `ipc`.
//! It never touches the network, disk or keychain, and never depends on `art`.

mod app;
mod components;
mod failure;
mod ipc;
mod markdown;
mod run_view;
mod shell;
mod store;
mod tickets;
mod timeline;
mod views;

fn main() {
    // A bug must not leave a blank window: say what happened, on screen and in the console.
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        let document = leptos::prelude::document();
        if let (Ok(note), Some(body)) = (document.create_element("pre"), document.body()) {
            note.set_class_name("boot-error");
            note.set_id("ui-panic");
            note.set_text_content(Some(&format!("The UI stopped because of a bug: {info}")));
            let _ = body.append_child(&note);
        }
    }));
    leptos::mount::mount_to_body(app::App);
}
