//! ART Workbench desktop app entry point.
// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    art_workbench_lib::run();
}
