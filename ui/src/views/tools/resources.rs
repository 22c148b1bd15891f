//! A server's resources on the Tools page: listed when opened (address, name, type,
//! size), each attachable to the next message — it waits in the composer of the thread
//! opened next, as a dropped file does.

use art_types::IpcError;
use art_types::commands::{AttachMcpResource, ListMcpResources, Picked};
use art_types::mcp::catalog::McpResource;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::components::error_card::ErrorCard;
use crate::ipc;
use crate::store::Store;

/// The resources of running server `server`.
#[component]
pub fn ServerResources(server: String) -> impl IntoView {
    let store = expect_context::<Store>();
    let listed = RwSignal::new(None::<Result<Vec<McpResource>, IpcError>>);
    let note = RwSignal::new(None::<Result<String, IpcError>>);
    let server = StoredValue::new(server);
    let load = move || {
        if listed.get_untracked().is_some() {
            return;
        }
        spawn_local(async move {
            let asked = ListMcpResources {
                server: server.get_value(),
            };
            listed.try_set(Some(ipc::call(&asked).await));
        });
    };
    let attach = move |resource: McpResource| {
        note.set(None);
        spawn_local(async move {
            let asked = AttachMcpResource {
                server: resource.server.clone(),
                uri: resource.uri.clone(),
            };
            let done = ipc::call(&asked).await.map(|picked: Picked| {
                let said = attached_note(&picked);
                store.dropped.update(|waiting| {
                    let waiting = waiting.get_or_insert_with(Picked::default);
                    waiting.attached.extend(picked.attached);
                    waiting.refused.extend(picked.refused);
                });
                said
            });
            note.try_set(Some(done));
        });
    };
    let rows = move || match listed.get() {
        None => view! { <p class="muted small">"Listing…"</p> }.into_any(),
        Some(Err(error)) => view! { <ErrorCard error /> }.into_any(),
        Some(Ok(all)) if all.is_empty() => {
            view! { <p class="muted small">"This server offers no resources."</p> }.into_any()
        }
        Some(Ok(all)) => all
            .into_iter()
            .map(|r| {
                let title = r.title.clone().unwrap_or_else(|| r.name.clone());
                let facts = facts(&r);
                let uri = r.uri.clone();
                let shown = r.uri.clone();
                view! {
                    <div class="resource-item" data-uri=uri>
                        <strong>{title}</strong>
                        <code class="muted small">{shown}</code>
                        <span class="muted small">{facts}</span>
                        <button class="ghost attach-resource" title="Attach it to your next message"
                            on:click=move |_| attach(r.clone())>"Attach"</button>
                    </div>
                }
            })
            .collect_view()
            .into_any(),
    };
    view! {
        <details id="mcp-resources" on:toggle=move |_| load()>
            <summary class="muted small">"Resources"</summary>
            {move || note.get().map(|n| match n {
                Ok(said) => view! { <p class="small" id="resource-attached">{said}</p> }.into_any(),
                Err(error) => view! { <ErrorCard error id="resource-problem" /> }.into_any(),
            })}
            <div class="resource-list">{rows}</div>
        </details>
    }
}

/// Its type and size, as far as the server says.
fn facts(r: &McpResource) -> String {
    let mut facts: Vec<String> = r.mime_type.iter().cloned().collect();
    if let Some(size) = r.size {
        facts.push(match size {
            s if s >= 1 << 20 => format!("{:.1} MB", s as f64 / f64::from(1 << 20)),
            s if s >= 1 << 10 => format!("{:.1} kB", s as f64 / 1024.0),
            s => format!("{s} bytes"),
        });
    }
    facts.join(" · ")
}

/// What the page says once a resource is read.
fn attached_note(picked: &Picked) -> String {
    let mut said = Vec::new();
    if !picked.attached.is_empty() {
        let names: Vec<&str> = picked.attached.iter().map(|a| a.name.as_str()).collect();
        said.push(format!(
            "Attached {}: it waits in the composer of the thread you open next.",
            names.join(", ")
        ));
    }
    said.extend(picked.refused.iter().map(|p| format!("Not attached: {p}")));
    said.join(" ")
}
