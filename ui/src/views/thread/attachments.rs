//! Attachments on the page: the composer's tray (chips with a thumbnail or the
//! document's pages and tokens, each removable; "Attach" opens the file picker; pasted
//! images and files, and files dropped on the window — read by the backend — join it), the chips on a sent
//! question, and the viewer a chip opens (an image at full size, a document as its
//! extracted text).

use art_types::commands::{
    AttachBytes, AttachmentContent, PickAttachments, Picked, ReadAttachment,
};
use art_types::{Attachment, ErrorCode, IpcError};
use base64::Engine;
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

use crate::ipc;

/// The attachment the viewer shows, shared by every chip of the thread view.
#[derive(Clone, Copy)]
pub struct Viewing(pub RwSignal<Option<Attachment>>);

/// The open thread's tray, where its refusals show and the composer's text, for what
/// attaches or asks from afar (a tool's returned file on a run card, a refused question).
#[derive(Clone, Copy)]
pub struct Tray {
    /// The files for the next question.
    pub files: RwSignal<Vec<Attachment>>,
    /// Why the last attachment was refused.
    pub problem: RwSignal<Option<IpcError>>,
    /// The composer's text (a refused question can be put back in it).
    pub draft: RwSignal<String>,
}

impl Tray {
    /// Attach `data` (base64) named `name` to the next question.
    pub fn attach(self, name: String, data: String) {
        spawn_local(async move {
            match ipc::call(&AttachBytes { name, data }).await {
                Ok(attachment) => add(self.files, vec![attachment]),
                Err(e) => {
                    self.problem.try_set(Some(e));
                }
            }
        });
    }
}

/// An image's thumbnail (the copy sent to models), loaded once the chip shows.
fn thumbnail(a: &Attachment) -> RwSignal<Option<String>> {
    let src = RwSignal::new(None);
    if a.is_image() {
        let attachment = a.clone();
        spawn_local(async move {
            let asked = ReadAttachment {
                attachment,
                original: false,
            };
            if let Ok(AttachmentContent::Image(url)) = ipc::call(&asked).await {
                src.try_set(Some(url));
            }
        });
    }
    src
}

/// One attachment as a chip; `remove` makes it removable (the composer's).
#[component]
pub fn Chip(
    attachment: Attachment,
    #[prop(optional)] remove: Option<Callback<String>>,
) -> impl IntoView {
    let Viewing(viewing) = expect_context::<Viewing>();
    let src = thumbnail(&attachment);
    let id = StoredValue::new(attachment.id.clone());
    let name = attachment.name.clone();
    let facts = attachment.facts(" · ");
    let kind = if attachment.is_image() {
        "image"
    } else {
        "document"
    };
    // A document's kind at a glance: its extension (PDF, DOCX, MD), else its type.
    let badge = attachment
        .name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_uppercase())
        .filter(|ext| (1..=4).contains(&ext.len()))
        .unwrap_or_else(|| {
            if attachment.is_image() {
                "IMG".into()
            } else {
                "DOC".into()
            }
        });
    let open = {
        let attachment = attachment.clone();
        move |_| viewing.set(Some(attachment.clone()))
    };
    view! {
        <span class=format!("attachment-chip {kind}") data-attachment-id=id.get_value() title=attachment.describe()>
            <button class="chip-open" on:click=open>
                {move || match src.get() {
                    Some(url) => view! { <img class="chip-thumb" src=url alt="" /> }.into_any(),
                    None => view! { <span class="chip-icon">{badge.clone()}</span> }.into_any(),
                }}
                <span class="chip-text">
                    <span class="chip-name">{name}</span>
                    <span class="chip-facts muted small">{facts}</span>
                </span>
            </button>
            {remove.map(|remove| view! {
                <button class="ghost small chip-remove" title="Remove before sending"
                    on:click=move |_| remove.run(id.get_value())>"×"</button>
            })}
        </span>
    }
}

/// The chips of a sent question.
#[component]
pub fn Attached(attachments: Vec<Attachment>) -> impl IntoView {
    (!attachments.is_empty()).then(|| {
        view! {
            <div class="attachments sent">
                {attachments.into_iter().map(|attachment| view! { <Chip attachment /> }).collect_view()}
            </div>
        }
    })
}

/// Add what came back to the tray, leaving out what is there already.
fn add(tray: RwSignal<Vec<Attachment>>, new: Vec<Attachment>) {
    tray.try_update(|tray| {
        for attachment in new {
            if !tray.iter().any(|a| a.id == attachment.id) {
                tray.push(attachment);
            }
        }
    });
}

/// A refusal (or several) as the composer's problem.
fn refusals(problems: Vec<art_types::AttachmentProblem>) -> Option<IpcError> {
    let first = problems.first()?.clone();
    let message = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" · ");
    Some(
        IpcError::new(ErrorCode::Attachment, message)
            .with_details(serde_json::to_value(first).unwrap_or_default()),
    )
}

/// Open the file picker and add what it attached.
pub fn pick(tray: RwSignal<Vec<Attachment>>, problem: RwSignal<Option<IpcError>>) {
    spawn_local(async move {
        match ipc::call(&PickAttachments {}).await {
            Ok(picked) => take(picked, tray, problem),
            Err(e) => {
                problem.try_set(Some(e));
            }
        }
    });
}

/// What the backend attached from a pick or a drop: into the tray; refusals shown.
pub fn take(picked: Picked, tray: RwSignal<Vec<Attachment>>, problem: RwSignal<Option<IpcError>>) {
    add(tray, picked.attached);
    problem.try_set(refusals(picked.refused));
}

/// The files of a paste event's clipboard data (`clipboardData.files`), with their names.
fn pasted_files(ev: &leptos::ev::Event) -> Vec<JsValue> {
    let files = js_sys::Reflect::get(ev.as_ref(), &"clipboardData".into())
        .and_then(|data| js_sys::Reflect::get(&data, &"files".into()))
        .ok()
        .filter(|files| !files.is_undefined() && !files.is_null());
    let Some(files) = files else {
        return Vec::new();
    };
    let length = js_sys::Reflect::get(&files, &"length".into())
        .ok()
        .and_then(|n| n.as_f64())
        .unwrap_or(0.0) as u32;
    (0..length)
        .filter_map(|i| js_sys::Reflect::get(&files, &i.into()).ok())
        .collect()
}

/// A `File`'s name (a pasted screenshot often has none, or `image.png`) and bytes.
async fn read_file(file: JsValue) -> Option<(String, Vec<u8>)> {
    let name = js_sys::Reflect::get(&file, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .filter(|n| !n.trim().is_empty() && n != "image.png")
        .unwrap_or_else(|| "pasted image.png".into());
    let read: js_sys::Function = js_sys::Reflect::get(&file, &"arrayBuffer".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let promise: js_sys::Promise = read.call0(&file).ok()?.dyn_into().ok()?;
    let buffer = wasm_bindgen_futures::JsFuture::from(promise).await.ok()?;
    Some((name, js_sys::Uint8Array::new(&buffer).to_vec()))
}

/// A paste into the composer: files and images in it are attached (and the paste of
/// their names as text is stopped); text pastes as usual.
pub fn pasted(
    ev: leptos::ev::Event,
    tray: RwSignal<Vec<Attachment>>,
    problem: RwSignal<Option<IpcError>>,
) {
    let files = pasted_files(&ev);
    if files.is_empty() {
        return;
    }
    ev.prevent_default();
    spawn_local(async move {
        for file in files {
            let Some((name, bytes)) = read_file(file).await else {
                continue;
            };
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            match ipc::call(&AttachBytes { name, data }).await {
                Ok(attachment) => add(tray, vec![attachment]),
                Err(e) => {
                    problem.try_set(Some(e));
                }
            }
        }
    });
}

/// The viewer: the attachment a chip opened, over the thread; Escape or a click outside
/// closes it.
#[component]
pub fn Viewer() -> impl IntoView {
    let Viewing(viewing) = expect_context::<Viewing>();
    let content = RwSignal::new(None::<Result<AttachmentContent, IpcError>>);
    Effect::new(move |_| {
        content.set(None);
        if let Some(attachment) = viewing.get() {
            spawn_local(async move {
                let asked = ReadAttachment {
                    attachment,
                    original: true,
                };
                content.try_set(Some(ipc::call(&asked).await));
            });
        }
    });
    let close = move || viewing.set(None);
    move || {
        viewing.get().map(|attachment| {
            view! {
                <div class="viewer-backdrop" on:click=move |_| close()>
                    <div id="attachment-viewer" class="viewer" on:click=|ev| ev.stop_propagation()
                        tabindex="-1" on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { close() }>
                        <header class="viewer-header">
                            <strong>{attachment.name.clone()}</strong>
                            <span class="muted small">{attachment.facts(" · ")}</span>
                            <button id="viewer-close" class="ghost small" on:click=move |_| close()>"Close"</button>
                        </header>
                        {move || match content.get() {
                            None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                            Some(Ok(AttachmentContent::Image(url))) => view! { <img class="viewer-image" src=url alt=attachment.name.clone() /> }.into_any(),
                            Some(Ok(AttachmentContent::Text(text))) => view! { <pre class="viewer-text">{text}</pre> }.into_any(),
                            Some(Err(error)) => view! { <crate::components::error_card::ErrorCard error id="viewer-problem" /> }.into_any(),
                        }}
                    </div>
                </div>
            }
        })
    }
}
