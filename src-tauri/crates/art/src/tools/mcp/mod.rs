//! MCP servers as tool sources, on the official Rust SDK (`rmcp`).
//!
//! - [`McpStore`] keeps the servers the user added (SQLite, with header values in the
//!   OS keychain) and reads the de-facto `{"mcpServers": {…}}` JSON
//!   ([`import::parse`]).
//! - `connection` starts one server: a stdio child in its own process group (killed
//!   with everything it started when the connection goes), or a streamable HTTP session
//!   (`http`: resumption, and the SDK's transport errors in plain words); handshake,
//!   tool list, stderr tail.
//! - [`Elicitor`]: who asks the user a server's question mid-call (elicitation): the
//!   CLI's terminal, or the app's tool cards through [`Answers`]; `asking` ties the
//!   question to the call it came in, records it on the run and stops the call's clock
//!   meanwhile; [`Posting`] answers it from another process (`art answer`). The client
//!   declines when no one can ask.
//! - [`oauth`] signs in to a remote server that asks for it (OAuth 2.1) and keeps the
//!   tokens in the OS keychain; `http` sends them and renews them.
//! - [`McpTool`] is one server tool as a [`ToolExecutor`](super::ToolExecutor): called
//!   with the server's timeout (a dropped call sends `notifications/cancelled`), its
//!   result kept whole for the trace and shortened for the model.
//! - [`catalog`]: a server's prompts (filled in for the composer) and resources (read
//!   and attached), through the manager.
//! - [`McpManager`] starts, stops and refreshes servers and keeps the
//!   [`ToolRegistry`](super::ToolRegistry) in step with what they offer.

mod account;
mod asking;
pub mod catalog;
mod connection;
mod elicit;
mod errors;
mod http;
pub mod import;
mod leftovers;
mod manager;
pub mod oauth;
mod posted;
mod registration;
mod result;
mod stdout;
mod store;
mod tasks;
mod tool;
mod tree;

pub use asking::{AnswerError, Answers};
pub use elicit::Elicitor;
pub use errors::McpError;
pub use manager::McpManager;
pub use posted::{PostError, Posting};
pub use store::McpStore;
pub use tool::McpTool;
