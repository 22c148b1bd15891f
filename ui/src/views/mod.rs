//! Whole-pane views shown in the main area.

pub mod about;
pub mod agent_settings;
pub mod collection_model;
pub mod first_run;
pub mod home;
pub mod knowledge;
pub mod models;
pub mod prompts;
pub mod providers;
pub mod run_compare;
pub mod send_traces;
pub mod settings;
pub mod thread;
pub mod thread_knowledge;
pub mod tool_picker;
pub mod tools;
pub mod trace;
pub mod usage;
