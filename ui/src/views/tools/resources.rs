//! A server's resources on the Tools page: listed when opened (address, name, type,
//! size), each attachable to the next message — it waits in the composer of the thread
//! opened next, as a dropped file does; its address templates with a box per variable.

use art_types::IpcError;
use std::collections::BTreeMap;

use art_types::commands::{AttachMcpResource, ListMcpResourceTemplates, ListMcpResources, Picked};
use art_types::mcp::catalog::{McpResource, McpResourceTemplate};
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
    let templates = RwSignal::new(Vec::<McpResourceTemplate>::new());
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
            let asked = ListMcpResourceTemplates {
                server: server.get_value(),
            };
            if let Ok(found) = ipc::call(&asked).await {
                templates.try_set(found);
            }
        });
    };
    let attach = move |uri: String| {
        note.set(None);
        spawn_local(async move {
            let asked = AttachMcpResource {
                server: server.get_value(),
                uri,
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
                            on:click=move |_| attach(r.uri.clone())>"Attach"</button>
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
            <div class="resource-list" id="mcp-resource-templates">
                {move || templates.get().into_iter().map(|t| view! {
                    <TemplateRow template=t note on_attach=Callback::new(attach) />
                }).collect_view()}
            </div>
        </details>
    }
}

/// A resource template: a box per variable, and Attach with the address filled in.
#[component]
fn TemplateRow(
    template: McpResourceTemplate,
    note: RwSignal<Option<Result<String, IpcError>>>,
    on_attach: Callback<String>,
) -> impl IntoView {
    let values = RwSignal::new(BTreeMap::<String, String>::new());
    let wrong = RwSignal::new(None::<String>);
    let title = template
        .title
        .clone()
        .unwrap_or_else(|| template.name.clone());
    let boxes = template
        .variables()
        .into_iter()
        .map(|name| {
            let key = name.clone();
            let set = name.clone();
            view! {
                <input type="text" class="template-variable" data-variable=key.clone() placeholder=name
                    on:input=move |ev| {
                        wrong.set(None);
                        let value = event_target_value(&ev);
                        values.update(|v| { v.insert(set.clone(), value); });
                    } />
            }
        })
        .collect_view();
    let shown = template.uri_template.clone();
    let marked = template.uri_template.clone();
    let about = template.description.clone();
    let template = StoredValue::new(template);
    let attach = move |_| match template.with_value(|t| values.with_untracked(|v| t.fill(v))) {
        Ok(uri) => {
            note.set(None);
            on_attach.run(uri);
        }
        Err(why) => wrong.set(Some(why)),
    };
    view! {
        <div class="resource-item resource-template" data-template=marked>
            <strong>{title}</strong>
            <code class="muted small">{shown}</code>
            {boxes}
            <button class="ghost attach-resource" title=about on:click=attach>"Attach"</button>
            {move || wrong.get().map(|w| view! { <p class="field-problem template-problem">{w}</p> })}
        </div>
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
