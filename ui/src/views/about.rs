//! The About panel: renders the backend's `app_info`.

use art_types::{AppInfo, KeychainStatus};
use leptos::prelude::*;

use crate::components::error_card::ErrorCard;
use crate::shell::Shell;

/// About panel.
#[component]
pub fn About() -> impl IntoView {
    let shell = expect_context::<Shell>();
    view! {
        <section class="pane about" id="about">
            <h1>"About"</h1>
            {move || match shell.info.get() {
                None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(Ok(info)) => view! { <InfoTable info /> }.into_any(),
                Some(Err(error)) => view! { <ErrorCard error /> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn InfoTable(info: AppInfo) -> impl IntoView {
    let data_dir_note = if info.data_dir_overridden {
        " (overridden by --data-dir or ART_WORKBENCH_DATA_DIR)"
    } else {
        ""
    };
    view! {
        <dl class="info">
            <dt>"Version"</dt>
            <dd id="about-version">{info.version}</dd>
            <dt>"Platform"</dt>
            <dd>{info.platform}</dd>
            <dt>"Data directory"</dt>
            <dd id="about-data-dir"><code>{info.data_dir}</code>{data_dir_note}</dd>
            <dt>"Database"</dt>
            <dd id="about-database"><code>{info.database_path}</code></dd>
            <dt>"Logs"</dt>
            <dd><code>{info.log_dir}</code></dd>
            <dt>"OS keychain"</dt>
            <dd id="about-keychain"><Keychain status=info.keychain /></dd>
        </dl>
    }
}

#[component]
fn Keychain(status: KeychainStatus) -> impl IntoView {
    match status {
        KeychainStatus::Available { backend } => view! {
            <span class="badge ok">"Available"</span>
            <span class="muted">{format!(" via {backend}: API keys are stored there and nowhere else.")}</span>
        }
        .into_any(),
        KeychainStatus::Unavailable { reason, hint } => view! {
            <span class="badge warn">"Unavailable"</span>
            <p class="reason">{reason}</p>
            <p class="muted">{hint}</p>
        }
        .into_any(),
    }
}
