//! The root component: sidebar on the left, the selected pane on the right, the start-up
//! handshake with the backend and the keyboard shortcuts.

use art_types::commands as cmd;
use art_types::{ReadyEvent, events};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::components::sidebar::Sidebar;
use crate::ipc;
use crate::shell::{Connection, Pane, Shell};
use crate::store::Store;
use crate::views::about::About;
use crate::views::home::Home;
use crate::views::knowledge::Knowledge;
use crate::views::models::Models;
use crate::views::prompts::Prompts;
use crate::views::providers::Providers;
use crate::views::send_traces::SendTraces;
use crate::views::thread::ThreadView;
use crate::views::tools::Tools;
use crate::views::usage::Usage;

/// Subscribe to backend events first, then ask the backend to announce itself: an event
/// emitted before the UI listened would be lost, so the handshake goes in this order.
fn start_handshake(connection: RwSignal<Connection>, store: Store) {
    spawn_local(async move {
        let subscribed = match ipc::listen(events::READY, move |ev: ReadyEvent| {
            connection.set(Connection::Ready(ev));
        })
        .await
        {
            Ok(()) => store.listen().await,
            Err(e) => Err(e),
        };
        store.reload_threads();
        let result = match subscribed {
            Ok(()) => ipc::call(&cmd::UiReady {}).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            connection.set(Connection::Failed(e));
        }
    });
}

/// Keyboard shortcuts: Ctrl/⌘+N new thread, Ctrl/⌘+K search, Esc stops the running
/// answer. They press the same buttons a click would, so there is one code path.
fn shortcuts() {
    use wasm_bindgen::JsCast;
    let _handle = window_event_listener(leptos::ev::keydown, |ev| {
        let modifier = ev.ctrl_key() || ev.meta_key();
        let (id, focus) = match (modifier, ev.key().as_str()) {
            (true, "n" | "N") => ("new-thread", false),
            (true, "k" | "K") => ("search-input", true),
            (false, "Escape") => ("stop-button", false),
            _ => return,
        };
        let Some(element) = document()
            .get_element_by_id(id)
            .and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        else {
            return;
        };
        ev.prevent_default();
        if focus {
            let _ = element.focus();
        } else {
            element.click();
        }
    });
}

/// The root component.
#[component]
pub fn App() -> impl IntoView {
    let shell = Shell {
        pane: RwSignal::new(Pane::Home),
        connection: RwSignal::new(Connection::Connecting),
        info: LocalResource::new(|| ipc::call(&cmd::AppInfo {})),
    };
    let store = Store::new();
    provide_context(shell);
    provide_context(store);
    start_handshake(shell.connection, store);
    shortcuts();
    // What the main pane shows; a memo, so choosing the open pane or thread again does
    // not rebuild its view.
    let current = Memo::new(move |_| (shell.pane.get(), store.selected.get()));

    view! {
        <div class="shell">
            <Sidebar />
            <main class="main-pane">
                {move || store.banner.get().map(|error| view! {
                    <div class="banner" id="banner">
                        <ErrorCard error />
                        <button class="ghost small" on:click=move |_| store.banner.set(None)>"Dismiss"</button>
                    </div>
                })}
                {move || match current.get() {
                    (Pane::Thread, Some(thread)) => view! { <ThreadView thread_id=thread /> }.into_any(),
                    (Pane::About, _) => view! { <About /> }.into_any(),
                    (Pane::Providers, _) => view! { <Providers /> }.into_any(),
                    (Pane::Prompts, _) => view! { <Prompts /> }.into_any(),
                    (Pane::Tools, _) => view! { <Tools /> }.into_any(),
                    (Pane::Usage, _) => view! { <Usage /> }.into_any(),
                    (Pane::Knowledge, _) => view! { <Knowledge /> }.into_any(),
                    (Pane::Models, _) => view! { <Models /> }.into_any(),
                    (Pane::SendTraces, _) => view! { <SendTraces /> }.into_any(),
                    _ => view! { <Home /> }.into_any(),
                }}
            </main>
        </div>
    }
}
