//! Reusable pieces of the shell.

pub mod approval;
pub mod error_card;
pub mod question;
pub mod run_card;
pub mod sidebar;
pub mod sources;
