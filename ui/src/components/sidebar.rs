//! The left column: brand, "New thread", the thread list area, and the footer with
//! the About button and the backend connection status.

use leptos::prelude::*;

use crate::app::{Connection, Pane, Shell};

/// The sidebar.
#[component]
pub fn Sidebar() -> impl IntoView {
    let shell = expect_context::<Shell>();
    let pane = shell.pane;
    let status = move || match shell.connection.get() {
        Connection::Connecting => ("connecting", "Connecting to backend…".to_owned()),
        Connection::Ready(ev) => ("ready", format!("Backend {} connected", ev.version)),
        Connection::Failed(e) => ("failed", format!("Backend unreachable: {}", e.message)),
    };
    view! {
        <aside class="sidebar">
            <header class="brand" on:click=move |_| pane.set(Pane::Home)>
                <img class="brand-mark" src="./icon.png" alt="" />
                <span class="brand-name">"ART Workbench"</span>
            </header>
            <button
                id="new-thread"
                class="primary wide"
                disabled=true
                title="Threads arrive with the agent framework"
            >
                "+ New thread"
            </button>
            <nav class="thread-list" id="thread-list" aria-label="Threads">
                <p class="muted small">"No threads yet."</p>
            </nav>
            <footer class="sidebar-footer">
                <button
                    id="about-button"
                    class="ghost wide"
                    class:active=move || pane.get() == Pane::About
                    on:click=move |_| pane.set(Pane::About)
                >
                    "About"
                </button>
                <div id="backend-status" class=move || format!("status {}", status().0)>
                    <span class="dot"></span>
                    <span>{move || status().1}</span>
                </div>
            </footer>
        </aside>
    }
}
