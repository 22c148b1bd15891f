//! Where the reader is in the message list: the position kept while the window slides,
//! and bringing a search hit into view.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// The first message at least partly visible in `list`, and its distance from the
/// list's top edge (the reading position to keep while the window slides).
pub(super) fn reading_position(list: &leptos::web_sys::HtmlElement) -> Option<(String, i32)> {
    let top = list.scroll_top();
    let items = list.children();
    (0..items.length())
        .filter_map(|i| {
            items
                .item(i)?
                .dyn_into::<leptos::web_sys::HtmlElement>()
                .ok()
        })
        .filter(|el| el.has_attribute("data-message-id"))
        .find(|el| el.offset_top() + el.offset_height() > top)
        .and_then(|el| Some((el.get_attribute("data-message-id")?, el.offset_top() - top)))
}

/// Scroll `list` so the message is where it was.
pub(super) fn restore_position(list: &leptos::web_sys::HtmlElement, (id, offset): &(String, i32)) {
    let selector = format!("[data-message-id=\"{id}\"]");
    if let Ok(Some(el)) = list.query_selector(&selector)
        && let Ok(el) = el.dyn_into::<leptos::web_sys::HtmlElement>()
    {
        list.set_scroll_top(el.offset_top() - offset);
    }
}

/// Scroll the message into view and flash it.
pub(super) fn reveal(message_id: &str) {
    let selector = format!("[data-message-id=\"{message_id}\"]");
    let Ok(Some(element)) = document().query_selector(&selector) else {
        return;
    };
    element.scroll_into_view();
    let classes = element.class_name();
    if !classes.split_whitespace().any(|c| c == "focused") {
        element.set_class_name(&format!("{classes} focused"));
    }
}
