//! End-to-end: the real app binary (debug build, then the installed `.deb`) driven
//! through WebDriver. Asserts what a user sees.

mod attach;
mod compare;
mod day;
mod doors;
mod first_run;
mod knowledge;
mod long;
mod models;
mod phoenix;
mod prompts;
mod push;
mod questions;
mod secrets;
mod shell;
mod signin;
mod tools;
mod trace;
