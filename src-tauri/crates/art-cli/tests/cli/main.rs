//! The `art` binary as a user runs it: real processes on temporary data directories
//! against fake providers over TCP. `commands`: each subcommand's output, exports and
//! imports, mistakes; `concurrent`: several processes writing one data directory at once;
//! `crash`: `art run` killed with SIGKILL at any moment loses nothing but its last tokens
//! (`cargo xtask stress` runs more trials).

mod commands;
mod concurrent;
mod crash;
