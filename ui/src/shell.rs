//! What every view shares through context besides the store: the pane the main area
//! shows, the state of the connection to the backend, and the app's facts (`app_info`).

use art_types::{AppInfo, IpcError, ReadyEvent};
use leptos::prelude::*;

/// Which view the main pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The start view (no thread selected).
    Home,
    /// Version, paths and keychain status.
    About,
    /// The open thread (`Store::selected`).
    Thread,
    /// Providers and their keys.
    Providers,
    /// The prompt library.
    Prompts,
    /// MCP servers and their tools.
    Tools,
    /// What runs used and cost.
    Usage,
    /// Knowledge collections: documents the agent can search.
    Knowledge,
    /// Ollama's models: installed, pulls, delete.
    Models,
    /// "Send traces to": the OTLP collector runs are pushed to, and how it goes.
    SendTraces,
}

/// State of the connection to the backend, from the start-up handshake.
#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    /// Waiting for the backend's `art://ready` event.
    Connecting,
    /// The backend answered through the event channel.
    Ready(ReadyEvent),
    /// Subscribing or the handshake failed.
    Failed(IpcError),
}

/// App-wide values shared with every view through context.
#[derive(Clone, Copy)]
pub struct Shell {
    /// Selected pane.
    pub pane: RwSignal<Pane>,
    /// Backend connection state.
    pub connection: RwSignal<Connection>,
    /// `app_info`, fetched once on mount.
    pub info: LocalResource<Result<AppInfo, IpcError>>,
}
